//! Which daemon-query outcomes are transient, and when to ask again.
//!
//! The control daemon serves one front-end ("UI") session at a time and drops the sessions that
//! arrive meanwhile. Observed (OBS, Debian 535.261.03 and 550.163.01, an idle daemon, no GPU,
//! 32 and 64 front-ends started at once, each sending [`crate::DAEMON_PROBE`] on stdin):
//!
//! | signature | 535, 64 at once | 550, 64 at once |
//! |---|---|---|
//! | the full answer `100.0\n` | 1–4 | 1 |
//! | exit 1, stderr `Cannot send command to MPS control daemon process\n`, stdout empty | 11–35 | 22–42 |
//! | exit 0, stdout and stderr empty (the session was accepted, then closed unanswered) | 27–49 | 15–39 |
//! | exit 1, stdout and stderr empty | 0–1 | 1–6 |
//! | exit **0**, stderr `Cannot send command …`, stdout empty | rare | rare |
//!
//! The probe's first session ([`crate::first_session`]), 64 at once in four rounds, ended the
//! same ways and no other: 6 of 256 full answers; exit 1 with nothing printed (231 on 535, 242 on
//! 550) or with `Cannot send command …` (19, 8); never a partial answer.
//!
//! The last row showed only with whole `mps-preflight capture` processes, each retrying the
//! others: 2 (535) and 4–5 (550) of 384 captures in six rounds of 64 ended so before it was
//! retried too; never with the bare front-ends above.
//!
//! The control log shows many `Accepting connection...` lines and only a few `NEW UI` sessions:
//! the others never had a command read. With the same sessions retried with jittered backoff
//! every one of 64 got the full answer within about 1.2 s (at most 12 attempts).
//!
//! All these failure signatures are retried. The answer to a session that lost its first
//! command (the percentage line) is, on an idle daemon, the empty answer above; with servers
//! (or clients) running it is PID lines only. Every daemon from 470 to 580 prints the
//! percentage with `%.1f` (`100.0`; shared notes gpu-truth.md §5, §10 item 4), so a line of
//! bare digits is never the percentage: an exit-0 answer made only of such lines is the
//! [`TransientSignature::PidLinesOnly`] signature, asked again, and judged
//! unrecognized when it is the last attempt — never read as an idle daemon.
//!
//! Never retried: `Cannot find MPS control daemon process` (no daemon, or one the caller may not
//! reach: a clear answer), a timeout (a frozen daemon: the deadline is spent), a spawn failure,
//! and any answer with output of the wrong shape (a complete session that said something else).
//! The probe's queries are read-only ([`crate::ReadOnlyCommand`]), so asking again changes
//! nothing on the host; and only the last attempt is judged, so a retry can never make a verdict
//! more permissive than that attempt alone.

use std::time::Duration;

use crate::{CapturedText, QueryOutcome};

/// What the front-end prints on stderr when the daemon drops its connection under load.
pub const CANNOT_SEND: &str = "Cannot send command to MPS control daemon process\n";

/// A daemon-query outcome that says "ask again", not "no" (see the module notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransientSignature {
    /// Exit 1 (rarely 0) with [`CANNOT_SEND`] on stderr and nothing on stdout.
    CannotSend,
    /// Exit 0 with nothing on stdout or stderr: a session that should have answered every
    /// command answered none.
    EmptyAnswer,
    /// Exit 1 with nothing on stdout or stderr.
    SilentFailure,
    /// Exit 0, nothing on stderr, and stdout only lines of bare digits: the PIDs of a session
    /// whose first command (the percentage) was lost.
    PidLinesOnly,
}

impl TransientSignature {
    /// A short name for messages and the benchmark report.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CannotSend => "cannot-send",
            Self::EmptyAnswer => "empty-answer",
            Self::SilentFailure => "silent-exit-1",
            Self::PidLinesOnly => "pid-lines-only",
        }
    }
}

fn is_empty(text: &CapturedText) -> bool {
    text.text.is_empty() && !text.truncated && !text.non_utf8
}

/// Whether `text` is one or more `\n`-terminated lines of ASCII digits (no `.`: not `%.1f`).
fn is_pid_lines(text: &CapturedText) -> bool {
    if text.truncated || text.non_utf8 {
        return false;
    }
    text.text.strip_suffix('\n').is_some_and(|body| {
        body.split('\n')
            .all(|line| !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The transient signature of a daemon-query outcome, or `None` when the outcome is an answer
/// (live, down, hung, or of the wrong shape) that asking again would not change.
pub fn transient_signature(outcome: &QueryOutcome) -> Option<TransientSignature> {
    let QueryOutcome::Exited {
        code: Some(code),
        signal: None,
        stdout,
        stderr,
    } = outcome
    else {
        return None;
    };
    if !is_empty(stdout) {
        let pid_lines = *code == 0 && is_empty(stderr) && is_pid_lines(stdout);
        return pid_lines.then_some(TransientSignature::PidLinesOnly);
    }
    match code {
        0 if is_empty(stderr) => Some(TransientSignature::EmptyAnswer),
        1 if is_empty(stderr) => Some(TransientSignature::SilentFailure),
        0 | 1 if stderr.text == CANNOT_SEND && !stderr.truncated && !stderr.non_utf8 => {
            Some(TransientSignature::CannotSend)
        }
        _ => None,
    }
}

/// How the daemon query is retried: exponential backoff with "equal jitter" (half fixed, half
/// random), all within the query's one deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The pause ceiling after the first attempt; doubled after each further one.
    pub base: Duration,
    /// The largest pause ceiling.
    pub cap: Duration,
    /// No attempt is started with less of the deadline left than this: it would end as a
    /// timeout, which reads as a frozen daemon rather than a busy one.
    pub min_attempt: Duration,
    /// The most attempts in all (bounds the snapshot's size).
    pub max_attempts: u32,
}

/// The daemon query's retry policy.
pub const DAEMON_RETRY: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(10),
    cap: Duration::from_millis(200),
    min_attempt: Duration::from_millis(100),
    max_attempts: 64,
};

impl RetryPolicy {
    /// The pause before attempt `attempts + 1`, given the outcome of attempt `attempts` (counted
    /// from 1), the time `elapsed` since the first attempt started, the query's `deadline`, and
    /// `jitter`, any random number. `None`: do not retry; the outcome is final.
    pub fn next_delay(
        &self,
        outcome: &QueryOutcome,
        attempts: u32,
        elapsed: Duration,
        deadline: Duration,
        jitter: u64,
    ) -> Option<Duration> {
        transient_signature(outcome)?;
        if attempts == 0 || attempts >= self.max_attempts {
            return None;
        }
        let doubling = 1_u32 << (attempts - 1).min(16);
        let ceiling = self.base.saturating_mul(doubling).min(self.cap);
        let half = ceiling / 2;
        let spread = u64::try_from(half.as_micros()).unwrap_or(u64::MAX);
        let random = Duration::from_micros(jitter.checked_rem(spread + 1).unwrap_or(0));
        let delay = half + random;
        let left = deadline.checked_sub(elapsed)?.checked_sub(delay)?;
        (left >= self.min_attempt).then_some(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_observed_signatures_are_transient() {
        assert_eq!(
            transient_signature(&QueryOutcome::exited(1, "", CANNOT_SEND)),
            Some(TransientSignature::CannotSend)
        );
        assert_eq!(
            transient_signature(&QueryOutcome::exited(0, "", CANNOT_SEND)),
            Some(TransientSignature::CannotSend)
        );
        assert_eq!(
            transient_signature(&QueryOutcome::exited(0, "", "")),
            Some(TransientSignature::EmptyAnswer)
        );
        assert_eq!(
            transient_signature(&QueryOutcome::exited(1, "", "")),
            Some(TransientSignature::SilentFailure)
        );
        for lost_first in ["4428\n", "4428\n4511\n", "100\n"] {
            assert_eq!(
                transient_signature(&QueryOutcome::exited(0, lost_first, "")),
                Some(TransientSignature::PidLinesOnly),
                "{lost_first:?}"
            );
        }
    }

    #[test]
    fn clear_answers_hangs_and_wrong_shapes_are_not() {
        for outcome in [
            QueryOutcome::exited(0, "100.0\n", ""),
            QueryOutcome::exited(1, "", "Cannot find MPS control daemon process\n"),
            QueryOutcome::exited(1, "x", CANNOT_SEND),
            QueryOutcome::exited(1, "", "Cannot send command to MPS control daemon process"),
            QueryOutcome::exited(2, "", ""),
            QueryOutcome::exited(2, "", CANNOT_SEND),
            QueryOutcome::exited(0, "", "warning\n"),
            QueryOutcome::exited(0, "Unknown command\n", ""),
            QueryOutcome::exited(0, "100.0\n4428\n", ""),
            QueryOutcome::exited(0, "4428", ""),
            QueryOutcome::exited(0, "4428\n\n", ""),
            QueryOutcome::exited(0, "4428 4511\n", ""),
            QueryOutcome::exited(0, "4428\n", "warning\n"),
            QueryOutcome::exited(1, "4428\n", ""),
            QueryOutcome::Exited {
                code: Some(0),
                signal: None,
                stdout: CapturedText::from_bytes(b"4428\n", true),
                stderr: CapturedText::default(),
            },
            QueryOutcome::Exited {
                code: None,
                signal: Some(9),
                stdout: CapturedText::default(),
                stderr: CapturedText::default(),
            },
            QueryOutcome::Exited {
                code: Some(0),
                signal: None,
                stdout: CapturedText::from_bytes(b"", true),
                stderr: CapturedText::default(),
            },
            QueryOutcome::TimedOut {
                stdout: CapturedText::default(),
                stderr: CapturedText::default(),
            },
            QueryOutcome::SpawnFailed {
                error: "not found".to_owned(),
            },
        ] {
            assert_eq!(transient_signature(&outcome), None, "{outcome:?}");
        }
    }

    #[test]
    fn the_pause_doubles_up_to_the_cap_with_half_of_it_random() {
        let busy = QueryOutcome::exited(1, "", CANNOT_SEND);
        let deadline = Duration::from_secs(5);
        let at = |attempts, jitter| {
            DAEMON_RETRY.next_delay(&busy, attempts, Duration::ZERO, deadline, jitter)
        };
        assert_eq!(at(1, 0), Some(Duration::from_millis(5)));
        assert_eq!(at(1, 5000), Some(Duration::from_millis(10)));
        assert_eq!(at(1, 5001), Some(Duration::from_millis(5)));
        assert_eq!(at(2, 0), Some(Duration::from_millis(10)));
        assert_eq!(at(5, 0), Some(Duration::from_millis(80)));
        assert_eq!(at(6, 0), Some(Duration::from_millis(100)));
        assert_eq!(at(40, u64::MAX), at(40, u64::MAX % 100_001));
        assert!(at(63, 7).is_some_and(|delay| delay <= Duration::from_millis(200)));
        assert_eq!(at(64, 0), None, "max attempts");
        assert_eq!(at(0, 0), None);
    }

    #[test]
    fn no_retry_when_the_deadline_would_leave_too_little() {
        let busy = QueryOutcome::exited(0, "", "");
        let deadline = Duration::from_secs(1);
        let next = |elapsed| DAEMON_RETRY.next_delay(&busy, 1, elapsed, deadline, 0);
        assert_eq!(
            next(Duration::from_millis(895)),
            Some(Duration::from_millis(5))
        );
        assert_eq!(next(Duration::from_millis(896)), None);
        assert_eq!(next(Duration::from_secs(2)), None);
        let live = QueryOutcome::exited(0, "100.0\n", "");
        assert_eq!(
            DAEMON_RETRY.next_delay(&live, 1, Duration::ZERO, deadline, 0),
            None
        );
    }
}
