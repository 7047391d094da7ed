//! What an injected `run_command` (the reference module's test seam) returned, turned into the
//! [`QueryOutcome`] the process runner would have recorded, under the same output caps.

use sharing_policy::{CapturedText, QueryOutcome};

/// How a `run_command` call ended, as the Python side classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It returned (or raised `CalledProcessError`) with this return code; a negative code is
    /// a signal, as `subprocess` reports one.
    Exited(i64),
    /// It raised `subprocess.TimeoutExpired`.
    TimedOut,
    /// It raised anything else (`FileNotFoundError`, `PermissionError`, …): `type: message`.
    Failed(String),
}

/// One `run_command` call's result: its ending and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// How it ended.
    pub ending: Ending,
    /// Its standard output, as bytes.
    pub stdout: Vec<u8>,
    /// Its standard error, as bytes.
    pub stderr: Vec<u8>,
}

/// The outcome the runner records for `reply`, each stream capped at `cap` bytes (the rest is
/// dropped and the capture marked truncated, as a real process's output would be).
pub fn outcome(reply: &Reply, cap: usize) -> QueryOutcome {
    let capped = |bytes: &[u8]| {
        let kept = bytes.get(..cap.min(bytes.len())).unwrap_or_default();
        CapturedText::from_bytes(kept, bytes.len() > cap)
    };
    let (stdout, stderr) = (capped(&reply.stdout), capped(&reply.stderr));
    match &reply.ending {
        Ending::Exited(code) if *code < 0 => QueryOutcome::Exited {
            code: None,
            signal: code
                .checked_neg()
                .and_then(|signal| i32::try_from(signal).ok()),
            stdout,
            stderr,
        },
        Ending::Exited(code) => QueryOutcome::Exited {
            code: Some(i32::try_from(*code).unwrap_or(i32::MAX)),
            signal: None,
            stdout,
            stderr,
        },
        Ending::TimedOut => QueryOutcome::TimedOut { stdout, stderr },
        Ending::Failed(error) => QueryOutcome::SpawnFailed {
            error: error.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(ending: Ending, stdout: &[u8]) -> Reply {
        Reply {
            ending,
            stdout: stdout.to_vec(),
            stderr: Vec::new(),
        }
    }

    #[test]
    fn output_past_the_cap_is_cut_and_marked() {
        let QueryOutcome::Exited { code, stdout, .. } =
            outcome(&reply(Ending::Exited(0), b"100.0\n"), 3)
        else {
            panic!("an exit");
        };
        assert_eq!(code, Some(0));
        assert_eq!((stdout.text.as_str(), stdout.truncated), ("100", true));
        let QueryOutcome::Exited { stdout, .. } = outcome(&reply(Ending::Exited(0), b"100"), 3)
        else {
            panic!("an exit");
        };
        assert!(!stdout.truncated && !stdout.non_utf8);
    }

    #[test]
    fn a_negative_code_is_a_signal_and_other_endings_keep_their_kind() {
        let QueryOutcome::Exited { code, signal, .. } = outcome(&reply(Ending::Exited(-9), b""), 8)
        else {
            panic!("an exit");
        };
        assert_eq!((code, signal), (None, Some(9)));
        assert!(matches!(
            outcome(&reply(Ending::TimedOut, b"partial"), 8),
            QueryOutcome::TimedOut { stdout, .. } if stdout.text == "partial"
        ));
        assert_eq!(
            outcome(
                &reply(Ending::Failed("FileNotFoundError: x".into()), b""),
                8
            ),
            QueryOutcome::SpawnFailed {
                error: "FileNotFoundError: x".into()
            }
        );
        let QueryOutcome::Exited { stdout, .. } = outcome(&reply(Ending::Exited(1), b"\xff"), 8)
        else {
            panic!("an exit");
        };
        assert!(stdout.non_utf8);
    }
}
