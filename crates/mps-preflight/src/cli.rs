//! The command line: argument types and help texts (clap derive). Nothing here runs anything.

use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand};

use crate::args::{EXIT_CODES, paragraphs};
use crate::commands::{capture, check, codes, doctor, merge, probe};
use crate::{generated, schemas, suite, visibility};

const TOP_AFTER_HELP: &str = "\
Examples:
  # Will the learner and collector on cuda:0 share one GPU through MPS?
  mps-preflight probe --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 \\
      --backend mjwarp --manifest run_manifest.json

  # Every unmet prerequisite at once, with the commands that fix them.
  mps-preflight doctor --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp

  # Record this host once, replay the check anywhere (no GPU needed).
  mps-preflight capture --output host.json
  mps-preflight check --snapshot host.json --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp

  # Before launching an MPS client: device indices become GPU UUIDs.
  devices=$(mps-preflight visibility) || exit 1
  export CUDA_VISIBLE_DEVICES=\"$devices\"

  # After both started: are they clients of one MPS server? Record the proof.
  mps-preflight attest --learner-pid \"$LEARNER\" \\
      --collector-pid \"$COLLECTOR\" --wait-ms 30000 \\
      --manifest run_manifest.json

  # After the run: are the ranks' records consistent?
  mps-preflight merge rank0/manifest.json rank1/manifest.json

Nothing here starts, stops or reconfigures an MPS daemon, and nothing initialises CUDA:
the host is observed with `nvidia-smi` and read-only `nvidia-cuda-mps-control` queries.";

/// `--version`: the release, then the commit and the target it was built from (build.rs), as
/// `0.2.0 (3a62974, x86_64-unknown-linux-gnu.2.17)`.
pub(crate) const BUILD_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("MPS_PREFLIGHT_BUILD_COMMIT"),
    ", ",
    env!("MPS_PREFLIGHT_BUILD_TARGET"),
    ")"
);

/// Answers, fail-closed, whether a learner and a collector process will really share one
/// physical GPU through a live CUDA MPS daemon, and records the evidence.
#[derive(Debug, Parser)]
#[command(
    name = "mps-preflight",
    version = BUILD_VERSION,
    about = "Answers, fail-closed, whether a learner and a collector will really share one physical GPU through a live CUDA MPS daemon",
    long_about = paragraphs("\
Answers, fail-closed, whether a learner and a collector process will really share one physical
GPU through a live CUDA MPS daemon. An explicit `--request mps` is either proven against this
host, with the evidence printed as JSON, or rejected with the first unmet prerequisite and the
command that fixes it. A null request (the default) never fails: it records the ambient MPS state."),
    after_help = format!("{}\n\n{EXIT_CODES}", paragraphs(TOP_AFTER_HELP)),
    arg_required_else_help = false,
    max_term_width = 100
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Observe this host and validate the request; print the evidence as JSON
    Probe(Deferred<probe::ProbeArgs>),

    /// Record this host's raw facts as a JSON snapshot, for `check` and `doctor --snapshot`
    Capture(Deferred<capture::CaptureArgs>),

    /// Validate a request against a snapshot alone, touching nothing on this host
    Check(Deferred<check::CheckArgs>),

    /// Print `CUDA_VISIBLE_DEVICES` with device indices rewritten to GPU UUIDs.
    #[command(
        about = "Print CUDA_VISIBLE_DEVICES with device indices rewritten to GPU UUIDs, for an MPS launch"
    )]
    Visibility(Deferred<visibility::VisibilityArgs>),

    /// List every unmet prerequisite at once: what was found, why it matters, how to fix it
    Doctor(Deferred<doctor::DoctorArgs>),

    /// Print every finding code with its class: setting, node fault or workload conflict
    Codes(Deferred<codes::CodesArgs>),

    /// Check the per-rank evidence of one run: every rank once, and consistent
    Merge(Deferred<merge::MergeArgs>),

    /// Run policy suites: captured snapshots, requests and expected outcomes, offline
    Test(Deferred<suite::TestArgs>),

    /// Print the JSON Schema (draft 2020-12) of a snapshot, the evidence, or a report
    Schema(Deferred<schemas::SchemaArgs>),

    /// After start: prove that the learner and the collector are clients of one MPS server
    Attest(Deferred<crate::attest::AttestArgs>),

    /// Print a shell completion script for bash, zsh or fish
    Completions(Deferred<generated::CompletionsArgs>),

    /// Print the man page (roff), generated from the same definitions as --help
    #[command(long_about = generated::man_long_about(), after_help = generated::man_after_help())]
    Man,
}

/// `command` (a subcommand being built) with `augment`'s arguments and `T`'s long help. The
/// variant's about (its doc comment) is kept: an arguments struct's own doc comment would
/// otherwise replace it, now that the struct is added last.
fn with_args_and_help<T: LongHelp>(
    command: clap::Command,
    augment: fn(clap::Command) -> clap::Command,
) -> clap::Command {
    let about = command.get_about().cloned();
    let command = augment(command);
    match about {
        Some(about) => command.about(about),
        None => command,
    }
    .long_about(T::long_about())
    .after_help(T::after_help())
}

/// A subcommand's long help: its `--help` text, built only when that subcommand is parsed or
/// its help printed ([`Deferred`]).
pub(crate) trait LongHelp {
    /// The text after the usage line of `<subcommand> --help`.
    fn long_about() -> String;
    /// The text after the options of `<subcommand> --help`.
    fn after_help() -> String;
}

/// A subcommand's arguments and long help, added to its `clap::Command` only when clap builds
/// that subcommand (`Command::defer`): when it is the one being parsed, when its help is
/// printed, or when the whole tree is built (the man page, the completion scripts). Building
/// every subcommand's arguments and help texts took most of the command line's parse time, on
/// every run.
#[derive(Debug)]
pub(crate) struct Deferred<T>(pub(crate) T);

impl<T> std::ops::Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Self)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }
}

impl<T: Args + LongHelp> Args for Deferred<T> {
    fn augment_args(command: clap::Command) -> clap::Command {
        command.defer(|command| with_args_and_help::<T>(command, T::augment_args))
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        command.defer(|command| with_args_and_help::<T>(command, T::augment_args_for_update))
    }

    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// Implements [`LongHelp`] for each arguments type: `Type => { long about }, { after help };`.
macro_rules! long_help {
    ($($args:ty => { $long_about:expr }, { $after_help:expr };)*) => {$(
        impl LongHelp for $args {
            fn long_about() -> String {
                $long_about
            }
            fn after_help() -> String {
                $after_help
            }
        }
    )*};
}

long_help! {
    probe::ProbeArgs => { probe::long_about() }, { probe::after_help() };
    capture::CaptureArgs => { capture::long_about() }, { capture::after_help() };
    check::CheckArgs => { check::long_about() }, { check::after_help() };
    visibility::VisibilityArgs => { visibility::long_about() }, { visibility::after_help() };
    doctor::DoctorArgs => { doctor::long_about() }, { doctor::after_help() };
    codes::CodesArgs => { codes::long_about() }, { codes::after_help() };
    merge::MergeArgs => { merge::long_about() }, { merge::after_help() };
    suite::TestArgs => { suite::long_about() }, { suite::after_help() };
    schemas::SchemaArgs => { schemas::long_about() }, { schemas::after_help() };
    crate::attest::AttestArgs => { paragraphs(crate::attest::LONG_ABOUT) }, { crate::attest::AFTER_HELP.to_owned() };
    generated::CompletionsArgs => { generated::long_about() }, { generated::after_help() };
}

#[cfg(test)]
mod front_tests;
#[cfg(test)]
mod tests;
