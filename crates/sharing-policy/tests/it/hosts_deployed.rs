//! Synthetic fixtures for MPS as it is really deployed (issue 20): the multi-user flag
//! spellings of the real option parsers, DRA-style daemons, PID namespaces, and a session that
//! lost its first command. Built like `hosts.rs` (the committed JSON must equal these builders;
//! regenerate with `UPDATE_FIXTURES=1 cargo test -p sharing-policy --test it hosts::`).

use sharing_policy::HostFacts;

use crate::hosts::{ONE_H100, healthy};

/// The deployment fixtures, by file name (without `.json`).
pub(crate) fn fixtures() -> Vec<(&'static str, HostFacts)> {
    // A session that lost its first command: the server PID alone, no `%.1f` percentage line.
    // Read as the percentage it would hide the server (an idle-looking daemon): refused.
    let out = vec![(
        "daemon-answer-pid-first-line",
        healthy(crate::hosts::default_env(), ONE_H100, "4428\n"),
    )];
    out
}
