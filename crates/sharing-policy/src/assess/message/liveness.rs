//! The liveness family's words: why the control daemon could not be reached, and what to do.

use gpu_uuid::GpuUuid;

use super::{control_path, start_command};
use crate::daemon::DaemonStatus;
use crate::text::clause;
use crate::{Code, EnvFacts, Finding, OsText, Vocabulary};

/// The finding for a daemon that did not answer live: `status` is any [`DaemonStatus`] but
/// `Live` and `NotTheProbe`, which the check settles itself.
pub(in crate::assess) fn unreachable(
    words: Vocabulary,
    status: DaemonStatus,
    directory: &OsText,
    env: &EnvFacts,
    pin: Option<GpuUuid>,
) -> Finding {
    // A lossy directory joins as its bytes do (U+FFFD is never `/`).
    let directory = directory.to_string_lossy();
    let path = control_path(&directory);
    let start = start_command(&directory, env, pin);
    let verify = ["Verify the daemon and retry: ", &start].concat();
    let (code, reason, fix) = match status {
        DaemonStatus::SpawnFailed(error) => (
            Code::DaemonUnreachable,
            crate::message::daemon::spawn_failed(&error),
            "Install the NVIDIA CUDA MPS tools so that nvidia-cuda-mps-control is on PATH, then retry.".to_owned(),
        ),
        DaemonStatus::NoAnswer(no_answer) => (
            Code::DaemonUnreachable,
            crate::message::daemon::no_answer(words, &no_answer),
            verify,
        ),
        DaemonStatus::TimedOut { timeout_ms } => (
            Code::DaemonTimedOut,
            crate::message::daemon::timed_out(timeout_ms)
                + "; the daemon may be stopped (SIGSTOP) or wedged",
            format!(
                "Check the daemon process's state (ps -o pid,stat,cmd -C nvidia-cuda-mps-control); resume or restart it as its owner, then retry. To start a fresh one: {start}"
            ),
        ),
        DaemonStatus::Unrecognized(answer) => (
            Code::DaemonAnswerUnrecognized,
            format!(
                "it answered in a way this validator does not recognise ({})",
                crate::message::daemon::unrecognized(&answer)
            ),
            format!(
                "Check the daemon by hand: printf 'get_default_active_thread_percentage\\n' | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control",
                crate::shell_quote(&directory)
            ),
        ),
        // `NotQueried`, and the two the check settles itself (never passed here).
        DaemonStatus::NotQueried | DaemonStatus::Live { .. } | DaemonStatus::NotTheProbe(_) => (
            Code::DaemonUnreachable,
            "the snapshot holds no daemon query".to_owned(),
            verify,
        ),
    };
    // Text-only messages are joined with `concat` (one exact allocation), not `format!`.
    let message = [
        words.mps(),
        " could not reach the control daemon through ",
        &path,
        ": ",
        clause(&reason),
        ". ",
        &fix,
    ]
    .concat();
    Finding::new(code, words, message, reason, fix)
}
