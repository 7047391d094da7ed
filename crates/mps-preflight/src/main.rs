//! `mps-preflight`: will these two processes really share one physical GPU through a live CUDA
//! MPS daemon?
//!
//! This crate is the only one that knows argv, stdout/stderr and exit codes. It observes the
//! host through `mps-host`, judges through `sharing-policy`, and writes manifests through
//! `sharing-manifest`. Exit status: 0 success, 1 rejected (stdout empty, stderr `error: …`),
//! 2 usage error or unreadable input.

mod brief;
mod cli;
mod commands;
mod output;
mod prom;
mod report;
mod schemas;
mod snapshot;
mod suite;
mod visibility;

use std::process::ExitCode;

use clap::Parser as _;

use crate::cli::{Cli, Command};
use crate::output::Status;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // `--help` and `--version` print to stdout and succeed; usage errors print
            // clap's `error: …` on stderr and exit 2.
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(Status::Input.code())
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let output = match &cli.command {
        Command::Probe(args) => commands::probe(args),
        Command::Capture(args) => commands::capture(args),
        Command::Check(args) => commands::check(args),
        Command::Visibility(args) => visibility::visibility(args),
        Command::Doctor(args) => commands::doctor(args),
        Command::Merge(args) => commands::merge(args),
        Command::Test(args) => suite::test(args),
        Command::Schema(args) => schemas::print(args),
    };
    output.emit()
}
