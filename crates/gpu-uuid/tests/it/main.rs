//! gpu-uuid's integration tests: one binary, so one link for all of them.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod edge_cases;
mod hosts;
mod messages;
mod mps;
mod props;
mod resolution;
mod table;
mod uuids;
