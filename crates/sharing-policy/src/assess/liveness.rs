//! The daemon liveness family: the read-only query's answer (deliberate change 4: live = a
//! read-only query exited 0 in time with the known shape).

use gpu_uuid::GpuUuid;

use super::{Findings, clause, control_path, inconsistent, start_command};
use crate::daemon::DaemonStatus;
use crate::{Code, Finding, HostFacts, OsText};

/// The daemon's answer (deliberate change 4: live = a read-only query exited 0 in time).
pub(super) fn check(
    facts: &HostFacts,
    directory: &OsText,
    pin: Option<GpuUuid>,
    findings: &mut Findings,
) -> Option<i64> {
    let (env, words) = (&facts.env, findings.words);
    let status = crate::daemon::reference::status_with_pid_file(
        words,
        facts.daemon_query.as_ref(),
        directory.as_bytes(),
        crate::served::corroborating_pid_file(facts),
    );
    if let DaemonStatus::Live { server_pid } = status {
        return server_pid;
    }
    // Only a daemon that did not answer needs the messages below. A lossy directory joins as
    // its bytes do (U+FFFD is never `/`).
    let directory = directory.to_string_lossy();
    let path = control_path(&directory);
    let start = start_command(&directory, env, pin);
    let verify = ["Verify the daemon and retry: ", &start].concat();
    let (code, reason, fix) = match status {
        DaemonStatus::Live { server_pid } => return server_pid,
        DaemonStatus::NotTheProbe(why) => {
            findings.push(|| inconsistent(words, why));
            return None;
        }
        DaemonStatus::NotQueried => (Code::DaemonUnreachable, "the snapshot holds no daemon query".to_owned(), verify),
        DaemonStatus::SpawnFailed(error) => (
            Code::DaemonUnreachable,
            format!("{} could not be started: {error}", crate::DAEMON_QUERY_PROGRAM),
            "Install the NVIDIA CUDA MPS tools so that nvidia-cuda-mps-control is on PATH, then retry.".to_owned(),
        ),
        DaemonStatus::NoAnswer(detail) => (Code::DaemonUnreachable, detail, verify),
        DaemonStatus::TimedOut { timeout_ms } => (
            Code::DaemonTimedOut,
            format!("the query did not answer within {timeout_ms} ms; the daemon may be stopped (SIGSTOP) or wedged"),
            format!(
                "Check the daemon process's state (ps -o pid,stat,cmd -C nvidia-cuda-mps-control); resume or restart it as its owner, then retry. To start a fresh one: {start}"
            ),
        ),
        DaemonStatus::Unrecognized(detail) => (
            Code::DaemonAnswerUnrecognized,
            format!("it answered in a way this validator does not recognise ({detail})"),
            format!(
                "Check the daemon by hand: printf 'get_default_active_thread_percentage\\n' | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control",
                crate::shell_quote(&directory)
            ),
        ),
    };
    findings.push(|| {
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
    });
    None
}
