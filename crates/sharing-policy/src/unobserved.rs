//! Which of the observer's own host tools could not be started: the observer's configuration,
//! not the host's health. What could not be observed on a host where nothing about MPS was is
//! worded in `message/unobserved.rs` ([`crate::nothing_observed`]).

use crate::{DAEMON_QUERY_PROGRAM, GPU_QUERY_PROGRAM, HostFacts, QueryOutcome};

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
