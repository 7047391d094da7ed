//! The words of the statuses the interpretation modules read from a snapshot: the lower floor of
//! the message layer.
//!
//! The interpretation modules (`daemon.rs`, `session.rs`, `gpu.rs`, `lock.rs`, `served.rs`,
//! `access.rs`, `daemon_log.rs`, `daemon_identity.rs`, `namespace.rs`, `proc_text.rs`,
//! `compute_apps.rs`) read the recorded answers and facts into structured statuses
//! and decide nothing about words. Here, each status is worded: `message/<module>.rs` holds the
//! sentences of `<module>.rs`'s statuses. The checks' findings (`assess/message/`) and attest's
//! verdicts (`attest/message.rs`) quote these words; this floor imports the statuses and
//! nothing that words or judges above it, so no interpretation module imports it.
//! `message/unobserved.rs` words the note of a host where nothing about MPS was observed.

pub(crate) mod access;
pub(crate) mod compute_apps;
pub(crate) mod daemon;
pub(crate) mod daemon_identity;
pub(crate) mod daemon_log;
pub(crate) mod gpu;
pub(crate) mod lock;
pub(crate) mod namespace;
pub(crate) mod proc_text;
pub(crate) mod served;
pub(crate) mod session;
pub(crate) mod unobserved;
