//! End-to-end tests of the built `mps-preflight` binary.
#![allow(clippy::disallowed_methods)] // these tests run the binary and fake tools
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod as_user;
mod attest;
mod attest_identity;
mod attest_namespace;
mod bad_input;
mod codes;
mod docs;
mod exit_codes;
mod fake_daemon;
mod fake_hosts;
mod faults;
mod files_written;
mod fixtures;
mod generated;
mod gpu_health;
mod health;
mod help;
mod hostile_names;
mod lock_namespace;
mod manifest;
mod merge;
mod nproc;
mod prom;
mod reach;
mod requirements;
mod schemas;
mod shm;
mod signals;
mod stdin;
mod suggestions;
mod suite;
mod support;
mod visibility;
