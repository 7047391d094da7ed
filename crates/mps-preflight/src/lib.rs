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
        // Under a process limit (RLIMIT_NPROC) the handler's thread cannot start. A query
        // started without it could outlive a Ctrl-C, so none starts: the observation is
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

/// What [`run`] would print and return, kept instead of written: for callers that run the
/// command line in-process (the Python package's `visibility()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The exit status [`run`] returns (0, 1 or 2).
    pub status: u8,
    /// What [`run`] writes on stdout.
    pub stdout: String,
    /// The messages [`run`] writes on stderr, each without its `error: ` prefix.
    pub errors: Vec<String>,
    /// The notes [`run`] writes on stderr before them, each without its `note: ` prefix.
    pub notes: Vec<String>,
}

/// [`run`], with the output kept: nothing is written to stdout or stderr. `--help` and
/// `--version` are stdout with status 0; a usage error is clap's message with status 2.
pub fn run_captured<I, T>(args: I) -> Captured
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let output = match Cli::try_parse_from(args) {
        Ok(cli) => execute(&cli),
        Err(err) if err.use_stderr() => {
            let text = err.to_string();
            let text = text.trim_end();
            Output::input(text.strip_prefix("error: ").unwrap_or(text))
        }
        Err(err) => Output::data(err.to_string()),
    };
    Captured {
        status: output.status.code(),
        stdout: output.stdout,
        errors: output.errors,
        notes: output.notes,
    }
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
        Command::Completions(args) => generated::completions(args, Cli::command()),
        Command::Man => generated::man(&Cli::command()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        format!("{}/../../fixtures/hosts/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn run_captured_keeps_what_run_would_print() {
        let snapshot = fixture("healthy-socket-with-server.json");
        let request = ["--request", "mps", "--learner-device", "cuda:0"];
        let tail = ["--collector-device", "cuda:0", "--backend", "mjwarp"];
        let mut args = vec!["mps-preflight", "check", "--snapshot", snapshot.as_str()];
        args.extend(request);
        args.extend(tail);
        let ok = run_captured(&args);
        assert_eq!((ok.status, ok.errors.len()), (0, 0), "{ok:?}");
        assert!(
            ok.stdout.starts_with("{\n  \"configured\": \"mps\""),
            "{ok:?}"
        );

        let stale = fixture("stale-socket-after-daemon-death.json");
        *args.get_mut(3).unwrap() = stale.as_str();
        let rejected = run_captured(&args);
        assert_eq!((rejected.status, rejected.stdout.as_str()), (1, ""));
        assert!(rejected.errors[0].contains("could not reach the control daemon"));

        let usage = run_captured(["mps-preflight", "check"]);
        assert_eq!(usage.status, 2);
        assert!(
            usage.errors[0].starts_with("the following required arguments"),
            "{usage:?}"
        );

        let version = run_captured(["mps-preflight", "--version"]);
        assert_eq!(version.status, 0);
        assert!(version.stdout.starts_with("mps-preflight "), "{version:?}");
    }
}
