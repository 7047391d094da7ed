//! Interpreting the recorded daemon query and pid file (docs/mps-daemon.md §5 c–e). The
//! statuses carry what was read; `message/daemon.rs` words them.

mod first_session;
mod probe;
pub(crate) mod reference;

use first_session::first_session_answer;
pub(crate) use first_session::{is_first_session, session_answers};
use probe::check_probe;
pub(crate) use probe::{ProbeMismatch, RetriedAfterAnswer, check_retries, is_control_program};

use crate::{
    CapturedText, DAEMON_QUERY_PROGRAM, PidFileFacts, QueryOutcome, QueryRecord, parse_pid,
};
use reference::is_reference;

/// What the control daemon query shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DaemonStatus {
    /// The daemon answered: exit 0, the liveness line, zero or more server PIDs, empty stderr.
    Live {
        /// The first PID `get_server_list` printed (`None`: an idle daemon, no server yet).
        server_pid: Option<i64>,
    },
    /// The snapshot holds no daemon query.
    NotQueried,
    /// The front-end could not be started: the OS error starting it met.
    SpawnFailed(String),
    /// The query did not finish within its deadline (a frozen daemon).
    TimedOut {
        /// The deadline, in milliseconds.
        timeout_ms: u64,
    },
    /// No daemon answered.
    NoAnswer(NoAnswer),
    /// Exit 0, but the output is not the known shape (or was cut short or not UTF-8).
    Unrecognized(Unrecognized),
    /// The record is not the read-only probe this validator interprets.
    NotTheProbe(ProbeMismatch),
}

/// How a query ended without a daemon's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoAnswer {
    /// The front-end exited non-zero or was killed, with what it printed.
    Ended {
        /// The exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, otherwise.
        signal: Option<i32>,
        /// Its standard output.
        stdout: CapturedText,
        /// Its standard error.
        stderr: CapturedText,
    },
    /// The reference's query exited 0 and listed no server: that does not tell a live idle
    /// daemon from a front-end that reached none ([`reference::status_with_pid_file`]).
    ReferenceIdle,
}

/// An exit-0 answer that is not the known shape: why, with what was printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unrecognized {
    /// What is wrong with it.
    pub(crate) fault: AnswerFault,
    /// The standard output.
    pub(crate) stdout: CapturedText,
    /// The standard error.
    pub(crate) stderr: CapturedText,
}

/// What is wrong with an exit-0 answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerFault {
    /// The output was cut short.
    CutShort,
    /// The output is not UTF-8.
    NotUtf8,
    /// Something was printed on stderr.
    MessageOnStderr,
    /// Not the probe's answer: the active-thread percentage line, then one server PID per line.
    NotProbeShape,
    /// Not the first session's answer ([`first_session`]).
    NotFirstSessionShape,
    /// Not the reference query's answer: one server PID per line ([`reference::answer`]).
    NotReferenceShape,
}

/// The daemon's liveness answer to `get_default_active_thread_percentage`: the daemon's `%.1f`
/// exactly ([`crate::Percentage::parse_daemon`], the one liveness parser; docs/mps-daemon.md §2
/// X3; shared notes gpu-truth.md §5, §10 item 4). A bare number is refused: it is what a server
/// PID looks like when a session lost its first command, and reading that PID as the
/// percentage would hide the first server (an idle-looking daemon).
pub(crate) fn is_percentage(line: &str) -> bool {
    crate::Percentage::parse_daemon(line).is_some()
}

/// A server PID line: ASCII digits only (no sign, no spaces), a positive PID.
pub(crate) fn server_pid_line(line: &str) -> Option<i64> {
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    parse_pid(line)
}

/// Interprets the daemon query. Liveness = exit 0 within the deadline with the known output
/// shape and an empty stderr; an empty server list is a healthy idle daemon.
pub(crate) fn status(record: Option<&QueryRecord>, pipe_directory: &[u8]) -> DaemonStatus {
    let Some(record) = record else {
        return DaemonStatus::NotQueried;
    };
    if let Err(mismatch) = check_probe(record, pipe_directory) {
        return DaemonStatus::NotTheProbe(mismatch);
    }
    if let Err(retried) = check_retries(record) {
        return DaemonStatus::NotTheProbe(ProbeMismatch::Retried(retried));
    }
    match &record.outcome {
        QueryOutcome::Exited {
            code: Some(0),
            signal: _,
            stdout,
            stderr,
        } if is_reference(record) => reference::answer(stdout, stderr),
        QueryOutcome::Exited {
            code: Some(0),
            signal: _,
            stdout,
            stderr,
        } if is_first_session(&record.stdin) => first_session_answer(record, stdout, stderr),
        QueryOutcome::Exited {
            code: Some(0),
            signal: _,
            stdout,
            stderr,
        } => answer(stdout, stderr),
        _ => not_answered(record).unwrap_or(DaemonStatus::NotQueried),
    }
}

/// How a query that did not exit 0 ended: not started, timed out, or exited non-zero or by a
/// signal (with what it printed). `None` for an exit 0, whose output is the answer.
pub(crate) fn not_answered(record: &QueryRecord) -> Option<DaemonStatus> {
    match &record.outcome {
        QueryOutcome::SpawnFailed { error } => Some(DaemonStatus::SpawnFailed(error.clone())),
        QueryOutcome::TimedOut { .. } => Some(DaemonStatus::TimedOut {
            timeout_ms: record.timeout_ms,
        }),
        QueryOutcome::Exited { code: Some(0), .. } => None,
        QueryOutcome::Exited {
            code,
            signal,
            stdout,
            stderr,
        } => Some(DaemonStatus::NoAnswer(NoAnswer::Ended {
            code: *code,
            signal: *signal,
            stdout: stdout.clone(),
            stderr: stderr.clone(),
        })),
    }
}

/// Why an exit-0 answer cannot be read at all (cut short, not UTF-8, a message on stderr),
/// whatever was asked: the shared first checks of [`answer`] and of the reference queries'.
pub(crate) fn unreadable(stdout: &CapturedText, stderr: &CapturedText) -> Option<DaemonStatus> {
    let fault = if stdout.truncated || stderr.truncated {
        AnswerFault::CutShort
    } else if stdout.non_utf8 || stderr.non_utf8 {
        AnswerFault::NotUtf8
    } else if !stderr.text.is_empty() {
        AnswerFault::MessageOnStderr
    } else {
        return None;
    };
    Some(unrecognized(fault, stdout, stderr))
}

/// An answer of the wrong shape, `fault`, with what was printed.
pub(crate) fn unrecognized(
    fault: AnswerFault,
    stdout: &CapturedText,
    stderr: &CapturedText,
) -> DaemonStatus {
    DaemonStatus::Unrecognized(Unrecognized {
        fault,
        stdout: stdout.clone(),
        stderr: stderr.clone(),
    })
}

fn answer(stdout: &CapturedText, stderr: &CapturedText) -> DaemonStatus {
    if let Some(status) = unreadable(stdout, stderr) {
        return status;
    }
    let unrecognized = || unrecognized(AnswerFault::NotProbeShape, stdout, stderr);
    let Some(body) = stdout.text.strip_suffix('\n') else {
        return unrecognized();
    };
    let mut lines = body.split('\n');
    if !lines.next().is_some_and(is_percentage) {
        return unrecognized();
    }
    let mut server_pid = None;
    for line in lines {
        let Some(pid) = server_pid_line(line) else {
            return unrecognized();
        };
        server_pid.get_or_insert(pid);
    }
    DaemonStatus::Live { server_pid }
}

/// The control daemon's PID from its pid file (550+ drivers), when that process is alive and,
/// where its name was readable, is the control daemon (`/proc/<pid>/comm` holds at most 15
/// bytes: `nvidia-cuda-mps`). Never required; `None` whenever anything is unproven.
pub(crate) fn daemon_pid(pid_file: Option<&PidFileFacts>) -> Option<i64> {
    let facts = pid_file?;
    let contents = facts.contents.as_ref()?;
    if contents.truncated || contents.non_utf8 || facts.pid_alive != Some(true) {
        return None;
    }
    if let Some(name) = &facts.process_name {
        let name = name.trim_end_matches('\n');
        if name.len() < 15 || !DAEMON_QUERY_PROGRAM.starts_with(name) {
            return None;
        }
    }
    parse_pid(&contents.text)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{DAEMON_PROBE, OsText, probe_stdin};

    pub(super) fn record(outcome: QueryOutcome) -> QueryRecord {
        QueryRecord {
            program: DAEMON_QUERY_PROGRAM.to_owned(),
            args: vec![],
            stdin: probe_stdin(&DAEMON_PROBE),
            env: BTreeMap::from([(
                "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
                OsText::from("/tmp/nvidia-mps"),
            )]),
            env_removed: vec!["CUDA_MPS_PROTOCOL_VERSION".to_owned()],
            timeout_ms: 5000,
            elapsed_ms: 3,
            outcome,
            earlier_attempts: Vec::new(),
        }
    }

    fn status_of(outcome: QueryOutcome) -> DaemonStatus {
        status(Some(&record(outcome)), b"/tmp/nvidia-mps")
    }

    /// What is wrong with an exit-0 answer, when it is not recognised.
    fn fault_of(outcome: QueryOutcome) -> Option<AnswerFault> {
        match status_of(outcome) {
            DaemonStatus::Unrecognized(answer) => Some(answer.fault),
            _ => None,
        }
    }

    #[test]
    fn idle_daemon_is_live_without_a_server() {
        assert_eq!(
            status_of(QueryOutcome::exited(0, "100.0\n", "")),
            DaemonStatus::Live { server_pid: None }
        );
    }

    #[test]
    fn first_server_pid_is_kept() {
        assert_eq!(
            status_of(QueryOutcome::exited(0, "100.0\n4428\n4511\n", "")),
            DaemonStatus::Live {
                server_pid: Some(4428)
            }
        );
        assert_eq!(
            status_of(QueryOutcome::exited(0, "12.5\n7\n", "")),
            DaemonStatus::Live {
                server_pid: Some(7)
            }
        );
    }

    #[test]
    fn missing_daemon_is_no_answer() {
        let got = status_of(QueryOutcome::exited(
            1,
            "",
            "Cannot find MPS control daemon process\n",
        ));
        assert!(
            matches!(got, DaemonStatus::NoAnswer(NoAnswer::Ended { code: Some(1), signal: None, ref stderr, .. })
                if stderr.text == "Cannot find MPS control daemon process\n"),
            "{got:?}"
        );
    }

    #[test]
    fn odd_answers_are_unrecognized() {
        for stdout in [
            "",
            "100.0",
            "100.0\n\n",
            "100.0\nServer not found\n",
            "Unknown command \"get_default_active_thread_percentage\"\n",
            "100.0\n+12\n",
            "100.0\n 12\n",
            "100.0\n0\n",
            "1.\n",
            ".5\n",
            // A session that lost its first command: the server PIDs alone.
            "4428\n",
            "4428\n4511\n",
            "50\n7\n",
            "100\n",
            "100.00\n",
            "1e2\n",
            "-1.0\n",
            "100.0\n²\n",
        ] {
            assert_eq!(
                fault_of(QueryOutcome::exited(0, stdout, "")),
                Some(AnswerFault::NotProbeShape),
                "{stdout:?}"
            );
        }
        assert_eq!(
            fault_of(QueryOutcome::exited(0, "100.0\n", "warning\n")),
            Some(AnswerFault::MessageOnStderr)
        );
    }

    #[test]
    fn cut_short_or_non_utf8_is_unrecognized() {
        let outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: CapturedText::from_bytes(b"100.0\n", true),
            stderr: CapturedText::default(),
        };
        assert_eq!(fault_of(outcome), Some(AnswerFault::CutShort));
        let outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: CapturedText::from_bytes(b"100.0\n\xff\n", false),
            stderr: CapturedText::default(),
        };
        assert_eq!(fault_of(outcome), Some(AnswerFault::NotUtf8));
    }

    #[test]
    fn timeout_and_spawn_failure_are_their_own_outcomes() {
        let timed_out = QueryOutcome::TimedOut {
            stdout: CapturedText::default(),
            stderr: CapturedText::default(),
        };
        assert_eq!(
            status_of(timed_out),
            DaemonStatus::TimedOut { timeout_ms: 5000 }
        );
        let spawn = QueryOutcome::SpawnFailed {
            error: "No such file or directory (os error 2)".to_owned(),
        };
        assert!(matches!(status_of(spawn), DaemonStatus::SpawnFailed(_)));
        assert_eq!(status(None, b"/tmp/nvidia-mps"), DaemonStatus::NotQueried);
    }

    /// The daemon's `%.1f` of a percentage: `^[0-9]{1,3}\.[0-9]$` (the reference's rule,
    /// `^[0-9]+\.[0-9]$`, with at most three whole digits), at most 100.0.
    fn daemon_percentage(line: &str) -> bool {
        let bytes = line.as_bytes();
        let shaped = (3..=5).contains(&bytes.len())
            && bytes[bytes.len() - 2] == b'.'
            && bytes[bytes.len() - 1].is_ascii_digit()
            && bytes[..bytes.len() - 2].iter().all(u8::is_ascii_digit);
        shaped && line.parse::<f64>().is_ok_and(|value| value <= 100.0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        #[test]
        fn a_percentage_is_exactly_the_daemons_printf(line in "[0-9.a+ -]{0,7}|[0-9]{1,3}\\.[0-9]") {
            proptest::prop_assert_eq!(is_percentage(&line), daemon_percentage(&line));
        }

        /// An answer made of PID lines only (a session that lost its first
        /// command) is never a live, idle daemon, however many PIDs it lists.
        #[test]
        fn pid_lines_are_never_a_live_daemon(pids in proptest::collection::vec(1_u32..4_194_304, 1..5)) {
            let stdout = pids.iter().fold(String::new(), |all, pid| all + &pid.to_string() + "\n");
            let got = status_of(QueryOutcome::exited(0, &stdout, ""));
            proptest::prop_assert!(matches!(got, DaemonStatus::Unrecognized(_)), "{stdout:?}: {got:?}");
            proptest::prop_assert!(crate::retry::transient_signature(&QueryOutcome::exited(0, &stdout, "")).is_some());
        }

        #[test]
        fn a_percent_then_pids_keeps_the_first_server(
            tenths in 0_u32..=1000,
            pids in proptest::collection::vec(1_u32..4_194_304, 0..4),
        ) {
            let mut stdout = format!("{}.{}\n", tenths / 10, tenths % 10);
            for pid in &pids {
                stdout.push_str(&pid.to_string());
                stdout.push('\n');
            }
            proptest::prop_assert_eq!(
                status_of(QueryOutcome::exited(0, &stdout, "")),
                DaemonStatus::Live { server_pid: pids.first().map(|&pid| i64::from(pid)) }
            );
        }
    }

    #[test]
    fn daemon_pid_needs_a_live_process() {
        let facts = |text: &str, alive: Option<bool>, name: Option<&str>| PidFileFacts {
            path: OsText::from("/tmp/nvidia-mps/nvidia-cuda-mps-control.pid"),
            contents: Some(CapturedText::from_bytes(text.as_bytes(), false)),
            error: None,
            pid_alive: alive,
            process_name: name.map(str::to_owned),
        };
        assert_eq!(
            daemon_pid(Some(&facts("4242", Some(true), Some("nvidia-cuda-mps\n")))),
            Some(4242)
        );
        assert_eq!(
            daemon_pid(Some(&facts("4242", Some(true), None))),
            Some(4242)
        );
        assert_eq!(daemon_pid(Some(&facts("4242", Some(false), None))), None);
        assert_eq!(daemon_pid(Some(&facts("4242", None, None))), None);
        assert_eq!(
            daemon_pid(Some(&facts("4242", Some(true), Some("bash")))),
            None
        );
        assert_eq!(daemon_pid(Some(&facts("+12", Some(true), None))), None);
        assert_eq!(daemon_pid(Some(&facts("0", Some(true), None))), None);
        assert_eq!(daemon_pid(None), None);
    }
}
