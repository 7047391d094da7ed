//! Whether a recorded daemon query is the read-only probe this validator interprets: the
//! control front-end, no arguments, the probe's stdin, the effective pipe directory, and asked
//! again only after transient outcomes.

use super::is_first_session;
use super::reference::is_reference;
use crate::retry::transient_signature;
use crate::{DAEMON_PROBE, DAEMON_QUERY_PROGRAM, QueryRecord};

/// How a recorded query differs from the read-only probe this validator interprets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProbeMismatch {
    /// It ran another program than the control front-end.
    Program(String),
    /// It passed arguments (argv commands are ignored by v2 daemons and look like success).
    Args(Vec<String>),
    /// It sent another stdin than the probe's.
    Stdin(String),
    /// It named another pipe directory than the effective one.
    PipeDirectory {
        /// The `CUDA_MPS_PIPE_DIRECTORY` the query used.
        used: Vec<u8>,
        /// The effective pipe directory.
        effective: Vec<u8>,
    },
    /// It asked again after an answer that was not transient.
    Retried(RetriedAfterAnswer),
}

/// A query asked again after an earlier attempt that was a clear answer, not a transient
/// outcome ([`crate::retry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetriedAfterAnswer {
    /// The first such attempt, counted from 1.
    pub(crate) attempt: usize,
    /// All attempts, the last included.
    pub(crate) attempts: usize,
}

/// Whether the program as spawned is the control front-end (a bare name or a path to it).
pub(crate) fn is_control_program(program: &str) -> bool {
    program.rsplit('/').next() == Some(DAEMON_QUERY_PROGRAM)
}

/// Whether `stdin` is `probe_stdin(&DAEMON_PROBE)`, compared without building it.
fn is_probe_stdin(stdin: &str) -> bool {
    mps_protocol::is_stdin_of(stdin, &DAEMON_PROBE)
}

/// Checks that `record` is this crate's read-only probe: the control front-end, no arguments
/// (argv commands are ignored by v2 daemons and look like success), [`DAEMON_PROBE`] on stdin,
/// and — when the record sets one — `CUDA_MPS_PIPE_DIRECTORY` equal to `pipe_directory`.
pub(super) fn check_probe(
    record: &QueryRecord,
    pipe_directory: &[u8],
) -> Result<(), ProbeMismatch> {
    if !is_control_program(&record.program) {
        return Err(ProbeMismatch::Program(record.program.clone()));
    }
    if !record.args.is_empty() {
        return Err(ProbeMismatch::Args(record.args.clone()));
    }
    if !is_probe_stdin(&record.stdin) && !is_first_session(&record.stdin) && !is_reference(record) {
        return Err(ProbeMismatch::Stdin(record.stdin.clone()));
    }
    if let Some(dir) = record.env.get("CUDA_MPS_PIPE_DIRECTORY")
        && dir.as_bytes() != pipe_directory
    {
        return Err(ProbeMismatch::PipeDirectory {
            used: dir.as_bytes().to_vec(),
            effective: pipe_directory.to_vec(),
        });
    }
    Ok(())
}

/// Checks that the probe asked again only after transient outcomes ([`crate::retry`]): an
/// earlier attempt that was a clear answer means the record is not what this probe writes.
pub(crate) fn check_retries(record: &QueryRecord) -> Result<(), RetriedAfterAnswer> {
    match record
        .earlier_attempts
        .iter()
        .position(|attempt| transient_signature(&attempt.outcome).is_none())
    {
        None => Ok(()),
        Some(index) => Err(RetriedAfterAnswer {
            attempt: index + 1,
            attempts: record.earlier_attempts.len() + 1,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueryOutcome;
    use crate::daemon::tests::record;
    use crate::daemon::{DaemonStatus, NoAnswer, status};

    #[test]
    fn a_different_query_is_not_the_probe() {
        let mut argv = record(QueryOutcome::exited(0, "", ""));
        argv.args = vec!["get_server_list".to_owned()];
        assert_eq!(
            status(Some(&argv), b"/tmp/nvidia-mps"),
            DaemonStatus::NotTheProbe(ProbeMismatch::Args(vec!["get_server_list".to_owned()]))
        );
        let mut stdin = record(QueryOutcome::exited(0, "", ""));
        stdin.stdin = "get_default_active_thread_percentage\n".to_owned();
        assert_eq!(
            status(Some(&stdin), b"/tmp/nvidia-mps"),
            DaemonStatus::NotTheProbe(ProbeMismatch::Stdin(
                "get_default_active_thread_percentage\n".to_owned()
            ))
        );
        let ok = record(QueryOutcome::exited(0, "100.0\n", ""));
        assert_eq!(
            status(Some(&ok), b"/elsewhere"),
            DaemonStatus::NotTheProbe(ProbeMismatch::PipeDirectory {
                used: b"/tmp/nvidia-mps".to_vec(),
                effective: b"/elsewhere".to_vec(),
            })
        );
        let mut other = record(QueryOutcome::exited(0, "100.0\n", ""));
        other.program = "nvidia-smi".to_owned();
        assert_eq!(
            status(Some(&other), b"/tmp/nvidia-mps"),
            DaemonStatus::NotTheProbe(ProbeMismatch::Program("nvidia-smi".to_owned()))
        );
        let mut path = record(QueryOutcome::exited(0, "100.0\n", ""));
        path.program = "/usr/bin/nvidia-cuda-mps-control".to_owned();
        assert_eq!(
            status(Some(&path), b"/tmp/nvidia-mps"),
            DaemonStatus::Live { server_pid: None }
        );
    }

    #[test]
    fn a_retried_query_is_judged_by_its_last_attempt_after_transient_ones_only() {
        let attempt = |outcome| crate::Attempt {
            elapsed_ms: 2,
            backoff_ms: 7,
            outcome,
        };
        let mut retried = record(QueryOutcome::exited(0, "100.0\n", ""));
        retried.earlier_attempts = vec![
            attempt(QueryOutcome::exited(1, "", crate::retry::CANNOT_SEND)),
            attempt(QueryOutcome::exited(0, "", "")),
        ];
        assert_eq!(
            status(Some(&retried), b"/tmp/nvidia-mps"),
            DaemonStatus::Live { server_pid: None }
        );
        retried.earlier_attempts.push(attempt(QueryOutcome::exited(
            1,
            "",
            "Cannot find MPS control daemon process\n",
        )));
        assert_eq!(
            status(Some(&retried), b"/tmp/nvidia-mps"),
            DaemonStatus::NotTheProbe(ProbeMismatch::Retried(RetriedAfterAnswer {
                attempt: 3,
                attempts: 4
            }))
        );
        let mut busy = record(QueryOutcome::exited(1, "", crate::retry::CANNOT_SEND));
        busy.earlier_attempts = vec![attempt(QueryOutcome::exited(0, "", ""))];
        assert!(matches!(
            status(Some(&busy), b"/tmp/nvidia-mps"),
            DaemonStatus::NoAnswer(NoAnswer::Ended { .. })
        ));
    }
}
