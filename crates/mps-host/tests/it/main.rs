//! mps-host's integration tests, in one binary: real processes, files, FIFOs, `/proc` trees
//! and Debian's real `nvidia-cuda-mps-control` (see `scripts/fetch-mps-control.sh`). Each
//! module is one subject; `common` holds the helpers they share. Run one subject with
//! `cargo test -p mps-host --test it <module>` (for example `real_daemon` for every test
//! against the real daemon).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests: a failed step is the test's failure"
)]

mod attest;
mod capture;
mod common;
mod compute_apps;
mod daemon_log;
mod filesystem;
mod listed_clients;
mod lock_test;
mod old_driver;
mod procfs;
mod reach;
mod real_daemon;
mod real_daemon_attest;
mod real_daemon_identity;
mod real_daemon_load;
mod real_daemon_settings;
mod recorded_fixtures;
mod runner;
mod stop;
