//! What could not be observed on a host where nothing about MPS was: no GPU table and no
//! control daemon that answered. A null request there is evidence of nulls, which reads the
//! same as "no MPS here"; the caller says why on stderr, in these words.

use crate::daemon::{self, DaemonStatus};
use crate::message::daemon::{no_answer, probe_mismatch, spawn_failed, timed_out, unrecognized};
use crate::text::clause;
use crate::{HostFacts, Vocabulary, gpu};

/// What could not be observed, when neither the GPU table nor a live control daemon was: one
/// sentence naming both failures (`no GPU table (nvidia-smi could not be started: …), and no
/// control daemon answered (…)`), or `None` when either was observed.
///
/// For a caller that observed the host and prints the null request's evidence or the
/// snapshot, which hold only nulls then: `mps-preflight probe` and `capture` print it as a
/// note. `words` chooses how a failed query's output is shown ([`Vocabulary`]).
///
/// ```
/// use sharing_policy::{nothing_observed, EnvFacts, HostFacts, Vocabulary};
///
/// let facts = HostFacts::unobserved("linux", EnvFacts::default());
/// let note = nothing_observed(&facts, Vocabulary::Cli).unwrap();
/// assert!(note.starts_with("no GPU table (no host GPU query was recorded)"));
/// ```
pub fn nothing_observed(facts: &HostFacts, words: Vocabulary) -> Option<String> {
    let Err(table) = gpu::parse_table(&gpu::host_text(facts)) else {
        return None;
    };
    let directory = facts.env.pipe_directory();
    let daemon = match daemon::status(facts.daemon_query.as_ref(), directory.as_bytes()) {
        DaemonStatus::Live { .. } => return None,
        DaemonStatus::NotQueried => "it was not queried".to_owned(),
        DaemonStatus::SpawnFailed(error) => spawn_failed(&error),
        DaemonStatus::TimedOut { timeout_ms } => timed_out(timeout_ms),
        DaemonStatus::NoAnswer(how) => no_answer(words, &how),
        DaemonStatus::Unrecognized(answer) => unrecognized(&answer),
        DaemonStatus::NotTheProbe(mismatch) => probe_mismatch(&mismatch),
    };
    Some(format!(
        "no GPU table ({}), and no control daemon answered through {} ({})",
        clause(&crate::message::gpu::read_error(&table)),
        crate::facts::join(&directory, crate::CONTROL_PIPE_NAME).to_string_lossy(),
        clause(&daemon)
    ))
}
