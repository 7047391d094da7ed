//! The log family's words: a daemon's log that could not be read, a crash loop, a logged
//! fatal GPU error, and the advisory notes of what may explain a later failure.

use super::super::Context;
use super::super::log::Unread;
use super::{daemon_rejection, unverified_finding};
use crate::daemon_log::LogReading;
use crate::{Code, Finding, Vocabulary};

/// How to let the probe read the daemon's log.
const READ_LOG: &str = "have the daemon log to a directory the probe can read (CUDA_MPS_LOG_DIRECTORY when it starts; by default /var/log/nvidia-mps), run the probe as a user who can read control.log, and keep the log a regular file (with --require-verified this is a rejection)";

/// The unverified finding for a daemon's log that could not be read, and why (`unread`).
pub(in crate::assess) fn unverified(context: &Context<'_>, unread: Unread<'_>) -> Finding {
    let why = match unread {
        Unread::NotRecorded => {
            "this v4 snapshot does not record it (daemon_log is absent)".to_owned()
        }
        Unread::NoDirectory(unknown) => unknown.map_or_else(
            || "its directory was not recorded".to_owned(),
            str::to_owned,
        ),
        Unread::NotProven(directory) => format!(
            "the log read ({}) is not in the proven daemon's log directory",
            directory.to_string_lossy()
        ),
        Unread::NoFile => "no log file was read".to_owned(),
        Unread::FileNotRead(file) => match &file.error {
            Some(error) => format!("{} could not be read: {error}", file.path.to_string_lossy()),
            None => format!("{} was not read", file.path.to_string_lossy()),
        },
        Unread::Empty(path) => format!(
            "{} holds no line (emptied or rotated since the daemon started)",
            path.to_string_lossy()
        ),
    };
    unverified_finding(
        context,
        Code::DaemonLogUnverified,
        "the control daemon's log",
        why,
        READ_LOG,
    )
}

/// How to find a crash's cause and restart the daemon, whose log is at `path`.
fn restart_fix(context: &Context<'_>, path: &str) -> String {
    format!(
        "read {path} and the servers' server.log for the cause, fix it, then have the daemon's owner restart the daemon (echo quit | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control, then start it again) and retry",
        crate::shell_quote(&context.directory.to_string_lossy())
    )
}

/// The rejection for a log at `path` showing two or more server crashes since the last ready
/// server.
pub(in crate::assess) fn crash_loop(
    context: &Context<'_>,
    path: &str,
    reading: &LogReading,
) -> Finding {
    let last = reading.crashes.last().map_or("", String::as_str);
    let since = reading.last_ready.map_or_else(
        || "since the daemon started".to_owned(),
        |pid| format!("since server {pid} was last ready"),
    );
    let found = format!(
        "its log {path} shows {} server crashes {since} (last: {last:?})",
        reading.crashes.len()
    );
    daemon_rejection(
        context,
        Code::ServerCrashLoop,
        found,
        ", so its servers keep crashing and no client can be served",
        restart_fix(context, path),
    )
}

/// The rejection for a log at `path` showing a server handling a fatal GPU error (`line`)
/// with no server context created since.
pub(in crate::assess) fn fatal_error(context: &Context<'_>, path: &str, line: &str) -> Finding {
    let found = format!(
        "its log {path} shows a server handling a fatal GPU error ({line:?}) and no server context created since"
    );
    daemon_rejection(
        context,
        Code::ServerFatalErrorLogged,
        found,
        ", so the server rejects every new client until its clients exit (a driver before 550 cannot report this state)",
        "wait for the faulted server's clients to exit so that the daemon creates a new server context, check the GPU (nvidia-smi -q, dmesg for Xid errors), then retry".to_owned(),
    )
}

/// The note for a pending client (`line`) of another user (`uid`) in the log at `path`.
pub(in crate::assess) fn pending_client(
    words: Vocabulary,
    path: &str,
    uid: u32,
    line: &str,
) -> Finding {
    note(
        words,
        Code::DaemonLogPendingClient,
        format!("its log {path} shows a pending client of user {uid} ({line:?})"),
        "expect this job's server to be asked to exit once idle; run the jobs of different users on different GPUs, or run the daemon in multi-user mode (-d -M, as root)",
    )
}

/// The note for a client of PID 0 (`line`) in the log at `path`.
pub(in crate::assess) fn client_pid_zero(words: Vocabulary, path: &str, line: &str) -> Finding {
    note(
        words,
        Code::DaemonLogClientPidZero,
        format!(
            "its log {path} shows a client of PID 0 ({line:?}): a client in a PID namespace the daemon cannot see"
        ),
        "run the daemon in the clients' PID namespace (or the host's, with hostPID), so that it can track them",
    )
}

/// The note for a server that failed to start (`line`) in the log at `path`.
pub(in crate::assess) fn server_failed_to_start(
    words: Vocabulary,
    path: &str,
    line: &str,
) -> Finding {
    note(
        words,
        Code::DaemonLogServerFailedToStart,
        format!("its log {path} shows a server that failed to start ({line:?})"),
        "read the daemon's log for the cause if a client fails to connect",
    )
}

/// An advisory note of what the log `found`, and what to do (`fix`) if a client fails.
fn note(words: Vocabulary, code: Code, found: String, fix: &str) -> Finding {
    let message = [
        "The control daemon's log may explain a later failure: ",
        &found,
        ". If a client fails, ",
        fix,
        ".",
    ]
    .concat();
    Finding::new(code, words, message, found, fix.to_owned())
}
