//! The probe's first session as the validator reads it: the server list and the first
//! ordinals' default pinned-memory limits, split by mps-protocol's one splitter.

use super::{AnswerFault, DaemonStatus, server_pid_line, unreadable, unrecognized};
use crate::{CapturedText, QueryOutcome, QueryRecord, ReadOnlyCommand};

/// Whether `stdin` is the probe's first session ([`mps_protocol::first_session`]), whose server list
/// and default pinned-memory limits [`session_answers`] splits.
pub(crate) fn is_first_session(stdin: &str) -> bool {
    mps_protocol::is_stdin_of(stdin, &mps_protocol::first_session())
}

/// The answers of a recorded first session ([`mps_protocol::first_session`]), split; `None` for any
/// other record (the two-command probe of older snapshots and of `attest`, the reference's
/// query), for an answer that is not an exit 0 with all of stdout in UTF-8 and nothing on
/// stderr, and for one that does not split.
pub(crate) fn session_answers(record: &QueryRecord) -> Option<Vec<(ReadOnlyCommand, Vec<&str>)>> {
    if !is_first_session(&record.stdin) {
        return None;
    }
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        stderr,
        ..
    } = &record.outcome
    else {
        return None;
    };
    if unreadable(stdout, stderr).is_some() {
        return None;
    }
    // The stdin is the first session's, so it asked what the first session asks.
    mps_protocol::split_answers(&mps_protocol::first_session_asked(), &stdout.text)
}

/// A first session's answer: readable, split into one answer per asked command, and a server
/// list of PID lines only.
pub(super) fn first_session_answer(
    record: &QueryRecord,
    stdout: &CapturedText,
    stderr: &CapturedText,
) -> DaemonStatus {
    if let Some(status) = unreadable(stdout, stderr) {
        return status;
    }
    let fault = AnswerFault::NotFirstSessionShape;
    let Some(answers) = session_answers(record) else {
        return unrecognized(fault, stdout, stderr);
    };
    let servers = answers
        .iter()
        .find(|(command, _)| *command == ReadOnlyCommand::GetServerList)
        .map_or(&[][..], |(_, lines)| lines.as_slice());
    let mut server_pid = None;
    for line in servers {
        let Some(pid) = server_pid_line(line) else {
            return unrecognized(fault, stdout, stderr);
        };
        server_pid.get_or_insert(pid);
    }
    DaemonStatus::Live { server_pid }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(stdout: &str, stderr: &str) -> QueryRecord {
        QueryRecord {
            program: crate::DAEMON_QUERY_PROGRAM.to_owned(),
            args: vec![],
            stdin: crate::probe_stdin(&mps_protocol::first_session()),
            env: std::collections::BTreeMap::new(),
            env_removed: vec![],
            timeout_ms: 5000,
            elapsed_ms: 3,
            outcome: QueryOutcome::exited(0, stdout, stderr),
            earlier_attempts: vec![],
        }
    }

    #[test]
    fn only_a_clean_whole_answer_is_read() {
        let asked = mps_protocol::FIRST_SESSION_ORDINALS as usize + 1;
        let idle = "100.0\n".repeat(asked + 1);
        assert!(session_answers(&record(&idle, "")).is_some());
        // A message on stderr, or one liveness line short: nothing is read from it.
        assert_eq!(session_answers(&record(&idle, "warning\n")), None);
        assert_eq!(session_answers(&record(&"100.0\n".repeat(asked), "")), None);
        // The two-command probe is not a first session.
        let mut older = record("100.0\n", "");
        older.stdin = crate::probe_stdin(&crate::DAEMON_PROBE);
        assert_eq!(session_answers(&older), None);
    }
}
