//! The command line: argument types and help texts (clap derive). Nothing here runs anything.

use clap::{Parser, Subcommand};

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
    #[command(long_about = probe::long_about(), after_help = probe::after_help())]
    Probe(probe::ProbeArgs),

    /// Record this host's raw facts as a JSON snapshot, for `check` and `doctor --snapshot`
    #[command(long_about = capture::long_about(), after_help = capture::after_help())]
    Capture(capture::CaptureArgs),

    /// Validate a request against a snapshot alone, touching nothing on this host
    #[command(long_about = check::long_about(), after_help = check::after_help())]
    Check(check::CheckArgs),

    /// Print `CUDA_VISIBLE_DEVICES` with device indices rewritten to GPU UUIDs.
    #[command(about = "Print CUDA_VISIBLE_DEVICES with device indices rewritten to GPU UUIDs, for an MPS launch", long_about = visibility::long_about(), after_help = visibility::after_help())]
    Visibility(visibility::VisibilityArgs),

    /// List every unmet prerequisite at once: what was found, why it matters, how to fix it
    #[command(long_about = doctor::long_about(), after_help = doctor::after_help())]
    Doctor(doctor::DoctorArgs),

    /// Print every finding code with its class: setting, node fault or workload conflict
    #[command(long_about = codes::long_about(), after_help = codes::after_help())]
    Codes(codes::CodesArgs),

    /// Check the per-rank evidence of one run: every rank once, and consistent
    #[command(long_about = merge::long_about(), after_help = merge::after_help())]
    Merge(merge::MergeArgs),

    /// Run policy suites: captured snapshots, requests and expected outcomes, offline
    #[command(long_about = suite::long_about(), after_help = suite::after_help())]
    Test(suite::TestArgs),

    /// Print the JSON Schema (draft 2020-12) of a snapshot, the evidence, or a report
    #[command(long_about = schemas::long_about(), after_help = schemas::after_help())]
    Schema(schemas::SchemaArgs),

    /// After start: prove that the learner and the collector are clients of one MPS server
    #[command(long_about = paragraphs(crate::attest::LONG_ABOUT), after_help = crate::attest::AFTER_HELP)]
    Attest(crate::attest::AttestArgs),

    /// Print a shell completion script for bash, zsh or fish
    #[command(long_about = generated::long_about(), after_help = generated::after_help())]
    Completions(generated::CompletionsArgs),

    /// Print the man page (roff), generated from the same definitions as --help
    #[command(long_about = generated::man_long_about(), after_help = generated::man_after_help())]
    Man,
}

#[cfg(test)]
mod front_tests;
#[cfg(test)]
mod tests;
