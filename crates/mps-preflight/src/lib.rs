//! `mps-preflight`: will these two processes really share one physical GPU through a live CUDA
//! MPS daemon?
//!
//! This crate is the only one that knows argv, stdout/stderr and exit codes. It observes the
//! host through `mps-host`, judges through `sharing-policy`, and writes manifests through
//! `sharing-manifest`. Exit status: 0 success, 1 rejected (stdout empty, stderr `error: …`),
//! 2 usage error or unreadable input, 128+N when ended by signal N (SIGINT, SIGTERM, SIGHUP),
//! after every running query's process group was killed.
//!
//! The command line is a library entry point, [`run`], so that the binary and the Python
//! package's `mps-preflight` console command (crates/mps-preflight-py) are one CLI.
//! What the command line and the Python package share below argv, the request conversion and
//! the native `doctor`, `visibility` and `attest`, is [`front`].
//!
//! # Examples
//!
//! ```
//! let status = mps_preflight::run(["mps-preflight", "--version"]);
//! assert_eq!(status, std::process::ExitCode::SUCCESS);
//! ```

mod args;
mod attest;
mod brief;
mod cli;
mod commands;
pub mod front;
mod generated;
mod interrupt;
mod output;
mod prom;
mod report;
mod schemas;
mod snapshot;
mod suite;
mod visibility;

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};

use crate::cli::{Cli, Command};

use crate::output::{Output, Status};
/// The CLI's `--snapshot` reading, for the other front ends (the Python package): the same
/// bounds, schema checks and messages.
pub use crate::snapshot::{from_value as snapshot_from_value, load as load_snapshot};

/// Runs the command line `args` (the program name first, as in `std::env::args_os`): writes
/// the command's stdout and `error: …` lines on stderr, and returns the documented exit status.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    ExitCode::from(run_status(args))
}

/// [`run`], with the exit status as a number (for callers that hand it on, such as the Python
/// package's console command).
pub fn run_status<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            // `--help` and `--version` print to stdout and succeed; usage errors print
            // clap's `error: …` on stderr and exit 2.
            print_usage_error(&err, &args);
            return if err.use_stderr() {
                Status::Input.code()
            } else {
                Status::Ok.code()
            };
        }
    };
    if let Err(err) = interrupt::install() {
        // With no descriptor left for the handlers' wake-up (RLIMIT_NOFILE), or a handler
        // refused, a query started could outlive a Ctrl-C, so none starts: the observation is
        // unrecorded, which rejects an explicit request and leaves a null one's fields null.
        // Commands that run no query work as usual.
        mps_host::forbid_queries(format!(
            "the signal handler could not be installed ({err}), and a query started without it could outlive an interrupted run"
        ));
    }
    execute(&cli).emit()
}

/// Prints clap's message, with every argument that holds a control character escaped where
/// clap quotes it, so a hostile argument cannot forge an `error:` line.
fn print_usage_error(err: &clap::Error, args: &[OsString]) {
    let mut text = err.render().to_string();
    for arg in args.iter().skip(1) {
        let arg = arg.to_string_lossy();
        if arg.chars().any(char::is_control) {
            text = text.replace(&*arg, &output::one_line(&arg));
        }
    }
    let _ = if err.use_stderr() {
        std::io::stderr().lock().write_all(text.as_bytes())
    } else {
        std::io::stdout().lock().write_all(text.as_bytes())
    };
}

/// What one parsed command line produces.
fn execute(cli: &Cli) -> Output {
    match &cli.command {
        Command::Probe(args) => commands::probe::run(args),
        Command::Capture(args) => commands::capture::run(args),
        Command::Check(args) => commands::check::run(args),
        Command::Visibility(args) => visibility::visibility(args),
        Command::Doctor(args) => commands::doctor::run(args),
        Command::Codes(args) => commands::codes::run(args),
        Command::Merge(args) => commands::merge::run(args),
        Command::Test(args) => suite::test(args),
        Command::Schema(args) => schemas::print(args),
        Command::Attest(args) => attest::attest(args),
        Command::Completions(args) => generated::completions(args, whole_command()),
        Command::Man => generated::man(&whole_command()),
    }
}

/// The whole command line, every subcommand built: their arguments and help are otherwise
/// added only to the subcommand being parsed (`cli::Deferred`), and the man page and the
/// completion scripts describe them all.
fn whole_command() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}
