//! The words of the daemon query's statuses (`daemon.rs`): why no daemon answered, why an
//! answer was not recognised, how a record differs from the probe.

use crate::daemon::{AnswerFault, NoAnswer, ProbeMismatch, RetriedAfterAnswer, Unrecognized};
use crate::text::{push_plain, push_repr, repr};
use crate::{CapturedText, DAEMON_PROBE, DAEMON_QUERY_PROGRAM, Vocabulary, probe_stdin};

/// Why an empty answer to the reference's query proves no daemon.
const REFERENCE_IDLE: &str = "nvidia-cuda-mps-control exited 0 and listed no MPS server for get_server_list (the reference's query, with no liveness line), which does not tell a live idle daemon from a front-end that reached none, and no pid file names a live control daemon";

/// `<label> <repr of the text>`, and whether it was cut short or not UTF-8.
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

/// A control front end that could not be started, with the OS error it met.
pub(crate) fn spawn_failed(error: &str) -> String {
    format!("{DAEMON_QUERY_PROGRAM} could not be started: {error}")
}

/// A query that did not answer before its deadline.
pub(crate) fn timed_out(timeout_ms: u64) -> String {
    format!("the query did not answer within {timeout_ms} ms")
}

/// Why no daemon answered, with what a query that ended printed described in `words`.
pub(crate) fn no_answer(words: Vocabulary, no_answer: &NoAnswer) -> String {
    let NoAnswer::Ended {
        code,
        signal,
        stdout,
        stderr,
    } = no_answer
    else {
        return REFERENCE_IDLE.to_owned();
    };
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
    detail
}

/// Why an exit-0 answer was not recognised, with what was printed.
pub(crate) fn unrecognized(answer: &Unrecognized) -> String {
    let why = match answer.fault {
        AnswerFault::CutShort => "the output was cut short",
        AnswerFault::NotUtf8 => "the output is not UTF-8",
        AnswerFault::MessageOnStderr => "exit 0 with a message on stderr",
        AnswerFault::NotProbeShape => {
            "expected the active-thread percentage line, then one server PID per line"
        }
        AnswerFault::NotFirstSessionShape => {
            "expected a liveness line before each answer (the server PIDs, then each device's default pinned-memory limit) and one last"
        }
        AnswerFault::NotReferenceShape => "expected one server PID per line",
    };
    format!(
        "{why}: {}, {}",
        describe_text("stdout", &answer.stdout),
        describe_text("stderr", &answer.stderr)
    )
}

/// How the daemon query differs from the read-only probe.
pub(crate) fn probe_mismatch(mismatch: &ProbeMismatch) -> String {
    match mismatch {
        ProbeMismatch::Program(program) => format!(
            "the daemon query ran {} instead of {DAEMON_QUERY_PROGRAM}",
            repr(program)
        ),
        ProbeMismatch::Args(args) => {
            format!("the daemon query passed arguments {args:?}; the probe passes none")
        }
        ProbeMismatch::Stdin(stdin) => format!(
            "the daemon query sent {} instead of {}",
            repr(stdin),
            repr(&probe_stdin(&DAEMON_PROBE))
        ),
        ProbeMismatch::PipeDirectory { used, effective } => format!(
            "the daemon query used CUDA_MPS_PIPE_DIRECTORY={}, not the effective pipe directory {}",
            repr(&String::from_utf8_lossy(used)),
            repr(&String::from_utf8_lossy(effective)),
        ),
        ProbeMismatch::Retried(retried) => self::retried(retried),
    }
}

/// A query asked again after an answer that was not transient.
pub(crate) fn retried(retried: &RetriedAfterAnswer) -> String {
    format!(
        "the daemon query was retried after attempt {} of {}, which was not a transient outcome",
        retried.attempt, retried.attempts
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_that_ended_says_how_and_what_it_printed_in_each_vocabulary() {
        let ended = NoAnswer::Ended {
            code: Some(1),
            signal: None,
            stdout: CapturedText::default(),
            stderr: CapturedText::from_bytes(b"Cannot find MPS control daemon process\n", false),
        };
        assert_eq!(
            no_answer(Vocabulary::Reference, &ended),
            "nvidia-cuda-mps-control ended with exit status 1, stderr 'Cannot find MPS control daemon process\\n'"
        );
        assert_eq!(
            no_answer(Vocabulary::Cli, &ended),
            "nvidia-cuda-mps-control ended with exit status 1; stderr: Cannot find MPS control daemon process"
        );
        let killed = NoAnswer::Ended {
            code: None,
            signal: Some(9),
            stdout: CapturedText::from_bytes(b"100.0", true),
            stderr: CapturedText::default(),
        };
        assert_eq!(
            no_answer(Vocabulary::Cli, &killed),
            "nvidia-cuda-mps-control ended with killed by signal 9; stdout: 100.0 (cut short)"
        );
    }

    #[test]
    fn a_retried_query_names_the_attempt() {
        let retried = ProbeMismatch::Retried(RetriedAfterAnswer {
            attempt: 3,
            attempts: 4,
        });
        assert_eq!(
            probe_mismatch(&retried),
            "the daemon query was retried after attempt 3 of 4, which was not a transient outcome"
        );
    }
}
