//! `mps-preflight`: will these two processes really share one physical GPU through a live CUDA
//! MPS daemon?
//!
//! This crate is the only one that knows argv, stdout/stderr and exit codes. It observes the
//! host through `mps-host`, judges through `sharing-policy`, and writes manifests through
//! `sharing-manifest`. Exit status: 0 success, 1 rejected (stdout empty, stderr `error: …`),
//! 2 usage error or unreadable input, 128+N when ended by signal N (SIGINT, SIGTERM, SIGHUP),
//! after every running query's process group was killed.

mod cli;
mod commands;
mod interrupt;
mod output;
mod snapshot;
mod visibility;

use std::process::ExitCode;

use std::io::Write as _;

use clap::Parser as _;

use crate::cli::{Cli, Command};
use crate::output::Status;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // `--help` and `--version` print to stdout and succeed; usage errors print
            // clap's `error: …` on stderr and exit 2.
            print_usage_error(&err);
            return if err.use_stderr() {
                ExitCode::from(Status::Input.code())
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Err(err) = interrupt::install() {
        eprintln!("error: cannot install the signal handlers: {err}");
        return ExitCode::from(Status::Input.code());
    }
    let output = match &cli.command {
        Command::Probe(args) => commands::probe(args),
        Command::Capture(args) => commands::capture(args),
        Command::Check(args) => commands::check(args),
        Command::Visibility(args) => visibility::visibility(args),
        Command::Doctor(args) => commands::doctor(args),
        Command::Merge(args) => commands::merge(args),
    };
    output.emit()
}

/// Prints clap's message, with every argument that holds a control character escaped where
/// clap quotes it, so a hostile argument cannot forge an `error:` line (issue 15).
fn print_usage_error(err: &clap::Error) {
    let mut text = err.render().to_string();
    for arg in std::env::args_os().skip(1) {
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
