//! The `mps-preflight` binary: the command line of [`mps_preflight::run`].

use std::process::ExitCode;

fn main() -> ExitCode {
    mps_preflight::run(std::env::args_os())
}
