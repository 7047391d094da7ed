//! Integration tests of sharing-policy: recorded fixtures → snapshots, properties, the seed's
//! order and phrases, and one test per deliberate change from the seed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests read and write fixture files"
)]

mod as_user;
mod attest;
mod attest_deployed;
mod changes;
mod daemon_log;
mod details;
mod first_session;
mod fixtures;
mod forged_identity;
mod gpu_health;
mod hosts;
mod hosts_committed;
mod hosts_deployed;
mod hosts_served;
mod locks;
mod props;
mod props_apps;
mod props_breakers;
mod props_client_limit;
mod props_clients;
mod props_gen;
mod props_reach;
mod props_served;
mod props_shm;
mod seed_order;
mod settings;
mod support;
mod vocabulary;
