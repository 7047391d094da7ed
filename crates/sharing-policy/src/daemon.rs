//! Interpreting the recorded daemon query and pid file (docs/mps-daemon.md §5 c–e).

mod first_session;
pub(crate) mod reference;

use first_session::first_session_answer;
pub(crate) use first_session::{is_first_session, session_answers};

use crate::retry::transient_signature;
use crate::text::{push_plain, push_repr, repr};
use crate::{
    CapturedText, DAEMON_PROBE, DAEMON_QUERY_PROGRAM, PidFileFacts, QueryOutcome, QueryRecord,
    Vocabulary, parse_pid, probe_stdin,
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
    /// The front-end could not be started.
    SpawnFailed(String),
    /// The query did not finish within its deadline (a frozen daemon).
    TimedOut {
        /// The deadline, in milliseconds.
        timeout_ms: u64,
    },
    /// The front-end exited non-zero or was killed: no daemon answered.
    NoAnswer(String),
    /// Exit 0, but the output is not the known shape (or was cut short or not UTF-8).
    Unrecognized(String),
    /// The record is not the read-only probe this validator interprets.
    NotTheProbe(String),
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

/// Whether the program as spawned is the control front-end (a bare name or a path to it).
pub(crate) fn is_control_program(program: &str) -> bool {
    program.rsplit('/').next() == Some(DAEMON_QUERY_PROGRAM)
}

pub(crate) fn describe_text(label: &str, text: &CapturedText) -> String {
    let mut out = String::new();
    push_described(&mut out, label, text);
    out
}

/// Appends `<label> <repr of the text>` and whether it was cut short or not UTF-8.
fn push_described(out: &mut String, label: &str, text: &CapturedText) {
    out.reserve(label.len() + text.text.len() + 32);
    out.push_str(label);
    out.push(' ');
    push_repr(out, &text.text);
    if text.truncated {
        out.push_str(" (cut short)");
    }
    if text.non_utf8 {
        out.push_str(" (not UTF-8)");
    }
}

/// Appends what a query that ended without answering printed on `label`: quoted as the
/// reference quotes it (`, stderr 'Cannot find MPS control daemon process\n'`), or as its text
/// (`; stderr: Cannot find MPS control daemon process`, control characters escaped).
fn push_printed(out: &mut String, words: Vocabulary, label: &str, text: &CapturedText) {
    match words {
        Vocabulary::Reference => {
            out.push_str(", ");
            push_described(out, label, text);
        }
        Vocabulary::Cli => {
            out.push_str("; ");
            out.push_str(label);
            out.push_str(": ");
            push_plain(out, text.text.trim_end());
            if text.truncated {
                out.push_str(" (cut short)");
            }
            if text.non_utf8 {
                out.push_str(" (not UTF-8)");
            }
        }
    }
}

/// Whether `stdin` is `probe_stdin(&DAEMON_PROBE)`, compared without building it.
fn is_probe_stdin(stdin: &str) -> bool {
    mps_protocol::is_stdin_of(stdin, &DAEMON_PROBE)
}

/// Checks that `record` is this crate's read-only probe: the control front-end, no arguments
/// (argv commands are ignored by v2 daemons and look like success), [`DAEMON_PROBE`] on stdin,
/// and — when the record sets one — `CUDA_MPS_PIPE_DIRECTORY` equal to `pipe_directory`.
fn check_probe(record: &QueryRecord, pipe_directory: &[u8]) -> Result<(), String> {
    if !is_control_program(&record.program) {
        return Err(format!(
            "the daemon query ran {} instead of {DAEMON_QUERY_PROGRAM}",
            repr(&record.program)
        ));
    }
    if !record.args.is_empty() {
        return Err(format!(
            "the daemon query passed arguments {:?}; the probe passes none",
            record.args
        ));
    }
    if !is_probe_stdin(&record.stdin) && !is_first_session(&record.stdin) && !is_reference(record) {
        return Err(format!(
            "the daemon query sent {} instead of {}",
            repr(&record.stdin),
            repr(&probe_stdin(&DAEMON_PROBE))
        ));
    }
    if let Some(dir) = record.env.get("CUDA_MPS_PIPE_DIRECTORY")
        && dir.as_bytes() != pipe_directory
    {
        return Err(format!(
            "the daemon query used CUDA_MPS_PIPE_DIRECTORY={}, not the effective pipe directory {}",
            repr(&dir.to_string_lossy()),
            repr(&String::from_utf8_lossy(pipe_directory)),
        ));
    }
    Ok(())
}

/// Checks that the probe asked again only after transient outcomes ([`crate::retry`]): an
/// earlier attempt that was a clear answer means the record is not what this probe writes.
pub(crate) fn check_retries(record: &QueryRecord) -> Result<(), String> {
    match record
        .earlier_attempts
        .iter()
        .position(|attempt| transient_signature(&attempt.outcome).is_none())
    {
        None => Ok(()),
        Some(index) => Err(format!(
            "the daemon query was retried after attempt {} of {}, which was not a transient outcome",
            index + 1,
            record.earlier_attempts.len() + 1
        )),
    }
}

/// Interprets the daemon query. Liveness = exit 0 within the deadline with the known output
/// shape and an empty stderr; an empty server list is a healthy idle daemon.
pub(crate) fn status(record: Option<&QueryRecord>, pipe_directory: &[u8]) -> DaemonStatus {
    status_in(Vocabulary::Reference, record, pipe_directory)
}

/// [`status`], with what a failed query printed described in `words`.
pub(crate) fn status_in(
    words: Vocabulary,
    record: Option<&QueryRecord>,
    pipe_directory: &[u8],
) -> DaemonStatus {
    let Some(record) = record else {
        return DaemonStatus::NotQueried;
    };
    if let Err(why) = check_probe(record, pipe_directory) {
        return DaemonStatus::NotTheProbe(why);
    }
    if let Err(why) = check_retries(record) {
        return DaemonStatus::NotTheProbe(why);
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
        _ => not_answered(words, record).unwrap_or(DaemonStatus::NotQueried),
    }
}

/// How a query that did not exit 0 ended: not started, timed out, or exited non-zero or by a
/// signal (with what it printed, described in `words`). `None` for an exit 0, whose output is
/// the answer.
pub(crate) fn not_answered(words: Vocabulary, record: &QueryRecord) -> Option<DaemonStatus> {
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
        } => {
            let how = match (code, signal) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => "no exit status".to_owned(),
            };
            let mut detail = String::with_capacity(96);
            detail.push_str(DAEMON_QUERY_PROGRAM);
            detail.push_str(" ended with ");
            detail.push_str(&how);
            if !stderr.text.is_empty() || stderr.truncated {
                push_printed(&mut detail, words, "stderr", stderr);
            }
            if !stdout.text.is_empty() || stdout.truncated {
                push_printed(&mut detail, words, "stdout", stdout);
            }
            Some(DaemonStatus::NoAnswer(detail))
        }
    }
}

/// Why an exit-0 answer cannot be read at all (cut short, not UTF-8, a message on stderr),
/// whatever was asked: the shared first checks of [`answer`] and of the reference queries'.
pub(crate) fn unreadable(stdout: &CapturedText, stderr: &CapturedText) -> Option<DaemonStatus> {
    let why = if stdout.truncated || stderr.truncated {
        "the output was cut short"
    } else if stdout.non_utf8 || stderr.non_utf8 {
        "the output is not UTF-8"
    } else if !stderr.text.is_empty() {
        "exit 0 with a message on stderr"
    } else {
        return None;
    };
    Some(unrecognized(why, stdout, stderr))
}

/// An answer of the wrong shape, `why`, with what was printed.
pub(crate) fn unrecognized(
    why: &str,
    stdout: &CapturedText,
    stderr: &CapturedText,
) -> DaemonStatus {
    DaemonStatus::Unrecognized(format!(
        "{why}: {}, {}",
        describe_text("stdout", stdout),
        describe_text("stderr", stderr)
    ))
}

fn answer(stdout: &CapturedText, stderr: &CapturedText) -> DaemonStatus {
    if let Some(status) = unreadable(stdout, stderr) {
        return status;
    }
    let unrecognized = |why: &str| unrecognized(why, stdout, stderr);
    let Some(body) = stdout.text.strip_suffix('\n') else {
        return unrecognized(
            "expected the active-thread percentage line, then one server PID per line",
        );
    };
    let mut lines = body.split('\n');
    if !lines.next().is_some_and(is_percentage) {
        return unrecognized(
            "expected the active-thread percentage line, then one server PID per line",
        );
    }
    let mut server_pid = None;
    for line in lines {
        let Some(pid) = server_pid_line(line) else {
            return unrecognized(
                "expected the active-thread percentage line, then one server PID per line",
            );
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
    use crate::OsText;

    fn record(outcome: QueryOutcome) -> QueryRecord {
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
            matches!(got, DaemonStatus::NoAnswer(ref d) if d.contains("exit status 1") && d.contains("Cannot find MPS control daemon process")),
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
            assert!(
                matches!(
                    status_of(QueryOutcome::exited(0, stdout, "")),
                    DaemonStatus::Unrecognized(_)
                ),
                "{stdout:?}"
            );
        }
        assert!(matches!(
            status_of(QueryOutcome::exited(0, "100.0\n", "warning\n")),
            DaemonStatus::Unrecognized(_)
        ));
    }

    #[test]
    fn cut_short_or_non_utf8_is_unrecognized() {
        let outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: CapturedText::from_bytes(b"100.0\n", true),
            stderr: CapturedText::default(),
        };
        assert!(matches!(status_of(outcome), DaemonStatus::Unrecognized(_)));
        let outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: CapturedText::from_bytes(b"100.0\n\xff\n", false),
            stderr: CapturedText::default(),
        };
        assert!(matches!(status_of(outcome), DaemonStatus::Unrecognized(_)));
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

    #[test]
    fn a_different_query_is_not_the_probe() {
        let mut argv = record(QueryOutcome::exited(0, "", ""));
        argv.args = vec!["get_server_list".to_owned()];
        assert!(matches!(
            status(Some(&argv), b"/tmp/nvidia-mps"),
            DaemonStatus::NotTheProbe(_)
        ));
        let mut stdin = record(QueryOutcome::exited(0, "", ""));
        stdin.stdin = "get_default_active_thread_percentage\n".to_owned();
        assert!(matches!(
            status(Some(&stdin), b"/tmp/nvidia-mps"),
            DaemonStatus::NotTheProbe(_)
        ));
        let ok = record(QueryOutcome::exited(0, "100.0\n", ""));
        assert!(matches!(
            status(Some(&ok), b"/elsewhere"),
            DaemonStatus::NotTheProbe(_)
        ));
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
        let got = status(Some(&retried), b"/tmp/nvidia-mps");
        assert!(
            matches!(got, DaemonStatus::NotTheProbe(ref why) if why.contains("attempt 3 of 4")),
            "{got:?}"
        );
        let mut busy = record(QueryOutcome::exited(1, "", crate::retry::CANNOT_SEND));
        busy.earlier_attempts = vec![attempt(QueryOutcome::exited(0, "", ""))];
        assert!(matches!(
            status(Some(&busy), b"/tmp/nvidia-mps"),
            DaemonStatus::NoAnswer(_)
        ));
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
