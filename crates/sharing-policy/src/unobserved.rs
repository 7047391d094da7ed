//! What could not be observed on a host where nothing about MPS was: no GPU table and no
//! control daemon that answered. A null request there is evidence of nulls, which reads the
//! same as "no MPS here"; the caller says why on stderr. And which of the observer's own host
//! tools could not be started: the observer's configuration, not the host's health.

use crate::daemon::{self, DaemonStatus};
use crate::message::daemon::{no_answer, probe_mismatch, spawn_failed, timed_out, unrecognized};
use crate::text::clause;
use crate::{DAEMON_QUERY_PROGRAM, GPU_QUERY_PROGRAM, HostFacts, QueryOutcome, Vocabulary, gpu};

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

/// A host tool the observer could not start: not on its `PATH`, not executable, … .
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNotStarted {
    /// The tool: [`GPU_QUERY_PROGRAM`] or [`DAEMON_QUERY_PROGRAM`].
    pub program: &'static str,
    /// The OS error that starting it met.
    pub error: String,
}

/// The observer's own host tools that could not be started, in the order they are queried
/// (the GPU table, then the control daemon). A tool that is missing where the observer runs
/// (a container without the NVIDIA tools, a `PATH` without them) says nothing about the host's
/// MPS: a health check reports that as "could not tell", not as a host problem. Empty when
/// every recorded query started (or none was recorded).
///
/// ```
/// use sharing_policy::{tools_not_started, EnvFacts, HostFacts};
///
/// let facts = HostFacts::unobserved("linux", EnvFacts::default());
/// assert!(tools_not_started(&facts).is_empty());
/// ```
pub fn tools_not_started(facts: &HostFacts) -> Vec<ToolNotStarted> {
    [
        (GPU_QUERY_PROGRAM, facts.gpu_query.as_ref()),
        (DAEMON_QUERY_PROGRAM, facts.daemon_query.as_ref()),
    ]
    .into_iter()
    .filter_map(|(program, record)| match &record?.outcome {
        QueryOutcome::SpawnFailed { error } => Some(ToolNotStarted {
            program,
            error: error.clone(),
        }),
        _ => None,
    })
    .collect()
}
