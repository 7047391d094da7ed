//! The reference module's own daemon query (`get_server_list\n` alone, no liveness line), which
//! its drop-in sends through a caller's `run_command` double (docs/mps-daemon.md,
//! "The reference's own queries"): PID lines prove a live daemon; an empty answer does so only
//! with a live daemon pid file.

use crate::daemon::{
    AnswerFault, DaemonStatus, NoAnswer, daemon_pid, server_pid_line, status, unreadable,
    unrecognized,
};
use crate::{CapturedText, PidFileFacts, QueryRecord};

/// The reference's daemon query is mps-protocol's; an empty answer to it proves a live daemon
/// only beside a live daemon pid file (`status_with_pid_file`).
pub use mps_protocol::REFERENCE_DAEMON_STDIN;

/// Whether `record` is the reference's query ([`REFERENCE_DAEMON_STDIN`]).
pub(crate) fn is_reference(record: &QueryRecord) -> bool {
    record.stdin == REFERENCE_DAEMON_STDIN
}

/// [`status`], where an empty answer to the reference's query counts as a live idle daemon
/// when the pid file names a live control daemon ([`daemon_pid`]): the server list alone
/// cannot prove an idle daemon's liveness, the pid file's live process corroborates it.
pub(crate) fn status_with_pid_file(
    record: Option<&QueryRecord>,
    pipe_directory: &[u8],
    pid_file: Option<&PidFileFacts>,
) -> DaemonStatus {
    match status(record, pipe_directory) {
        DaemonStatus::NoAnswer(NoAnswer::ReferenceIdle) if daemon_pid(pid_file).is_some() => {
            DaemonStatus::Live { server_pid: None }
        }
        other => other,
    }
}

/// The answer to the reference's query: one server PID per line. An empty list is
/// [`NoAnswer::ReferenceIdle`] until a pid file corroborates it.
pub(crate) fn answer(stdout: &CapturedText, stderr: &CapturedText) -> DaemonStatus {
    if let Some(status) = unreadable(stdout, stderr) {
        return status;
    }
    let unrecognized = || unrecognized(AnswerFault::NotReferenceShape, stdout, stderr);
    if stdout.text.is_empty() {
        return DaemonStatus::NoAnswer(NoAnswer::ReferenceIdle);
    }
    let Some(body) = stdout.text.strip_suffix('\n') else {
        return unrecognized();
    };
    let mut server_pid = None;
    for line in body.split('\n') {
        let Some(pid) = server_pid_line(line) else {
            return unrecognized();
        };
        server_pid.get_or_insert(pid);
    }
    DaemonStatus::Live { server_pid }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{DAEMON_PROBE, DAEMON_QUERY_PROGRAM, OsText, QueryOutcome, probe_stdin};

    fn record(outcome: QueryOutcome) -> QueryRecord {
        QueryRecord {
            program: DAEMON_QUERY_PROGRAM.to_owned(),
            args: vec![],
            stdin: probe_stdin(&DAEMON_PROBE),
            env: BTreeMap::from([(
                "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
                OsText::from("/tmp/nvidia-mps"),
            )]),
            env_removed: vec![],
            timeout_ms: 5000,
            elapsed_ms: 3,
            outcome,
            earlier_attempts: Vec::new(),
        }
    }

    #[test]
    fn the_reference_query_proves_a_daemon_by_its_server_pids_only() {
        let reference = |stdout: &str, stderr: &str| {
            let mut query = record(QueryOutcome::exited(0, stdout, stderr));
            query.stdin = REFERENCE_DAEMON_STDIN.to_owned();
            query.env_removed.clear();
            query
        };
        let dir = b"/tmp/nvidia-mps";
        assert_eq!(
            status(Some(&reference("4428\n4511\n", "")), dir),
            DaemonStatus::Live {
                server_pid: Some(4428)
            }
        );
        // The percentage line of this project's probe is no PID: that answer is not the
        // reference's (a double answering it is read as what it is).
        for odd in ["100.0\n", "4428", "Server not found\n", "4428\n\n"] {
            assert!(
                matches!(
                    status(Some(&reference(odd, "")), dir),
                    DaemonStatus::Unrecognized(ref answer)
                        if answer.fault == AnswerFault::NotReferenceShape
                ),
                "{odd:?}"
            );
        }
        let idle = reference("", "");
        assert_eq!(
            status(Some(&idle), dir),
            DaemonStatus::NoAnswer(NoAnswer::ReferenceIdle)
        );
        let pid_file = |alive| PidFileFacts {
            path: OsText::from("/tmp/nvidia-mps/nvidia-cuda-mps-control.pid"),
            contents: Some(CapturedText::from_bytes(b"2718", false)),
            error: None,
            pid_alive: Some(alive),
            process_name: Some("nvidia-cuda-mps".to_owned()),
        };
        assert_eq!(
            status_with_pid_file(Some(&idle), dir, Some(&pid_file(true))),
            DaemonStatus::Live { server_pid: None }
        );
        assert_eq!(
            status_with_pid_file(Some(&idle), dir, Some(&pid_file(false))),
            DaemonStatus::NoAnswer(NoAnswer::ReferenceIdle)
        );
        // Only the reference's empty answer is upgraded, never a failed query.
        let mut gone = record(QueryOutcome::exited(
            1,
            "",
            "Cannot find MPS control daemon process\n",
        ));
        gone.stdin = REFERENCE_DAEMON_STDIN.to_owned();
        assert!(matches!(
            status_with_pid_file(Some(&gone), dir, Some(&pid_file(true))),
            DaemonStatus::NoAnswer(NoAnswer::Ended { code: Some(1), .. })
        ));
    }
}
