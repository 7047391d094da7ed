//! The compute processes holding a GPU (docs/mps-daemon.md §5g): with the GPU in
//! `Exclusive_Process`, exclusivity applies to the MPS server, so a non-MPS compute process
//! already holding the GPU keeps the daemon's server from starting, and every client fails
//! with "all CUDA-capable devices are busy or unavailable". Asked only where it can change the
//! verdict: a GPU in `Exclusive_Process` and no server listed yet.

use gpu_uuid::GpuUuid;

use crate::daemon::{self, DaemonStatus};
use crate::{GPU_QUERY_PROGRAM, HostFacts, QueryOutcome, QueryRecord, gpu, served};

/// The `nvidia-smi` arguments of the compute-apps query: each compute process's GPU UUID,
/// PID and name, one per line, no header. With no compute process it prints nothing
/// (docs/mps-daemon.md §5g).
pub const COMPUTE_APPS_QUERY_ARGS: [&str; 2] = [
    "--query-compute-apps=gpu_uuid,pid,process_name",
    "--format=csv,noheader",
];

/// The compute mode under which exclusivity applies to the MPS server.
pub(crate) const EXCLUSIVE_PROCESS: &str = "Exclusive_Process";

/// Whether the probe asks [`COMPUTE_APPS_QUERY_ARGS`]: the daemon answered live and listed no
/// server, and a GPU of the recorded table is in `Exclusive_Process`. `mps-host` calls this,
/// so the decision stays here; on a host in `Default` mode, or with a server running, no
/// process is added.
pub fn compute_apps_wanted(facts: &HostFacts) -> bool {
    let directory = facts.env.pipe_directory();
    let Some(record) = facts.daemon_query.as_ref() else {
        return false;
    };
    if !matches!(
        daemon::status(Some(record), directory.as_bytes()),
        DaemonStatus::Live { .. }
    ) || !served::server_pids(Some(record), directory.as_bytes()).is_empty()
    {
        return false;
    }
    gpu::host_text(facts).is_ok_and(|text| {
        text.extras
            .iter()
            .any(|row| row.compute_mode == EXCLUSIVE_PROCESS)
    })
}

/// One compute process on the judged GPU, as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ComputeApp {
    pub(crate) pid: String,
    pub(crate) name: String,
}

/// What the compute-apps record says of one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AppsRead {
    /// Exit 0, every line a row of another GPU or blank, nothing cut off: no compute process.
    Free,
    /// The rows naming the GPU (whatever else the record shows: a row is never outweighed).
    Held(Vec<ComputeApp>),
    /// Why the record does not prove the GPU free.
    Unknown(AppsUnknown),
}

/// Why the compute-apps record does not prove the GPU free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AppsUnknown {
    /// The recorded query is not `nvidia-smi` with [`COMPUTE_APPS_QUERY_ARGS`].
    OtherQuery,
    /// `nvidia-smi` could not be started: the recorded error.
    SpawnFailed(String),
    /// `nvidia-smi` did not answer within the record's deadline, in milliseconds.
    TimedOut(u64),
    /// It exited 0, but its output was cut off at the capture cap.
    Truncated,
    /// It exited with a non-zero status, or was killed by a signal (`code` is then `None`):
    /// its stderr, as recorded.
    Failed {
        code: Option<i32>,
        signal: Option<i32>,
        stderr: String,
    },
    /// It answered, but printed this line, which is not a `gpu_uuid, pid, process_name` row.
    UnreadableLine(String),
}

/// Reads `record` for `gpu`, strictly: a row naming `gpu` is a compute process holding it;
/// only an exit-0 answer whose every other line is blank or a row of another GPU proves it
/// free; anything else (a failure, a deadline, a cut-off or unreadable line) is unknown.
pub(crate) fn read(record: &QueryRecord, gpu: GpuUuid) -> AppsRead {
    if record.program.rsplit('/').next() != Some(GPU_QUERY_PROGRAM)
        || record.args != COMPUTE_APPS_QUERY_ARGS
    {
        return AppsRead::Unknown(AppsUnknown::OtherQuery);
    }
    let (stdout, failure) = match &record.outcome {
        QueryOutcome::SpawnFailed { error } => {
            return AppsRead::Unknown(AppsUnknown::SpawnFailed(error.clone()));
        }
        QueryOutcome::TimedOut { stdout, .. } => {
            (stdout, Some(AppsUnknown::TimedOut(record.timeout_ms)))
        }
        QueryOutcome::Exited {
            code: Some(0),
            stdout,
            ..
        } => (stdout, stdout.truncated.then_some(AppsUnknown::Truncated)),
        QueryOutcome::Exited {
            code,
            signal,
            stdout,
            stderr,
        } => (
            stdout,
            Some(AppsUnknown::Failed {
                code: *code,
                signal: *signal,
                stderr: stderr.text.clone(),
            }),
        ),
    };
    let mut held = Vec::new();
    let mut unreadable = None;
    for line in stdout.text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        match row(line) {
            Some((uuid, app)) if uuid == gpu => held.push(app),
            Some(_) => {}
            None => unreadable = unreadable.or(Some(line)),
        }
    }
    if !held.is_empty() {
        return AppsRead::Held(held);
    }
    match (failure, unreadable) {
        (Some(why), _) => AppsRead::Unknown(why),
        (None, Some(line)) => AppsRead::Unknown(AppsUnknown::UnreadableLine(line.to_owned())),
        (None, None) => AppsRead::Free,
    }
}

/// One `gpu_uuid, pid, process_name` row (a process name may hold commas); `None` when the
/// line is not one.
fn row(line: &str) -> Option<(GpuUuid, ComputeApp)> {
    let mut columns = line.splitn(3, ',');
    let uuid = GpuUuid::parse(columns.next()?.trim()).ok()?;
    let pid = columns.next()?.trim();
    let name = columns.next()?.trim();
    Some((
        uuid,
        ComputeApp {
            pid: pid.to_owned(),
            name: name.to_owned(),
        },
    ))
}

#[cfg(test)]
mod tests;
