//! What the control daemon's own log says (docs/mps-daemon.md, "The daemon's log"): a daemon
//! can answer every query while no server can live. Two or more server crashes since the last
//! ready server are a crash loop; a server handling a fatal GPU error with no server context
//! created since is the `FAULT` a daemon before 550 cannot report. A pending client of another
//! user, a client of PID 0 and a server that failed to start are advisory warnings. A log that
//! cannot be read is unverified, never a pass.

use super::{Context, Findings, Served, daemon_rejection};
use crate::daemon_log::{self, ENOENT, LogReading};
use crate::{Code, Finding, Vocabulary};
use crate::{DaemonLogFacts, LogFileFacts};

/// What the log adds to the evidence.
#[derive(Debug, Default)]
pub(super) struct LogEvidence {
    /// The control log read.
    pub(super) path: Option<String>,
    /// The last server the log shows ready.
    pub(super) last_ready: Option<i64>,
}

/// The first driver whose daemon answers `get_server_status` (and so reports `FAULT`).
const SERVER_STATUS_DRIVER: u32 = 550;

/// Reads the recorded log: rejections for a crash loop or a logged fatal error, unverified
/// when it could not be read, advisory warnings for what may explain a later failure. A v4
/// snapshot without the log is unverified; an older one (which never read it) is not judged.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> LogEvidence {
    let read = match context.facts.daemon_log.as_ref() {
        Some(log) => readable(context, log),
        // A v4 snapshot records the log; one without it proves nothing (an older one never
        // read it and is judged as before).
        None if context.facts.schema == crate::SCHEMA => Err((
            "the control daemon's log".to_owned(),
            "this v4 snapshot does not record it (daemon_log is absent)".to_owned(),
        )),
        None => return LogEvidence::default(),
    };
    let reading = match read {
        Ok(reading) => reading,
        Err((what, why)) => {
            let fix = "have the daemon log to a directory the probe can read (CUDA_MPS_LOG_DIRECTORY when it starts; by default /var/log/nvidia-mps), run the probe as a user who can read control.log, and keep the log a regular file (with --require-verified this is a rejection)";
            let finding =
                super::unverified_finding(context, Code::DaemonLogUnverified, &what, why, fix);
            served.unverified(context.request, findings, finding);
            return LogEvidence::default();
        }
    };
    let path = context
        .facts
        .daemon_log
        .as_ref()
        .and_then(|log| log.files.first())
        .map(|file| file.path.to_string_lossy());
    let shown = path.clone().unwrap_or_default();
    if reading.crashes.len() >= 2 {
        findings.push(|| crash_loop(context, &shown, &reading));
    }
    if let Some(line) = &reading.fault
        && before_server_status(served.facts.driver_version.as_deref())
    {
        findings.push(|| fatal_error(context, &shown, line));
    }
    notes(context, served, &shown, &reading);
    LogEvidence {
        path,
        last_ready: reading.last_ready,
    }
}

/// The log's reading, or what could not be verified and why.
fn readable(context: &Context<'_>, log: &DaemonLogFacts) -> Result<LogReading, (String, String)> {
    let what = "the control daemon's log".to_owned();
    let Some(directory) = &log.directory else {
        let why = log
            .unknown
            .clone()
            .unwrap_or_else(|| "its directory was not recorded".to_owned());
        return Err((what, why));
    };
    let proven = daemon_log::daemon_log_directory(context.facts, context.directory.as_bytes());
    if proven.as_ref() != Ok(directory) {
        let why = format!(
            "the log read ({}) is not in the proven daemon's log directory",
            directory.to_string_lossy()
        );
        return Err((what, why));
    }
    let Some(control) = log.files.first() else {
        return Err((what, "no log file was read".to_owned()));
    };
    let control_text = file_text(control).map_err(|why| (what.clone(), why))?;
    if control_text.trim().is_empty() {
        let why = format!(
            "{} holds no line (emptied or rotated since the daemon started)",
            control.path.to_string_lossy()
        );
        return Err((what, why));
    }
    let mut texts = vec![(control_text, control.cut_at_start)];
    for other in log.files.iter().skip(1) {
        if other.errno == Some(ENOENT) {
            continue;
        }
        texts.push((
            file_text(other).map_err(|why| (what.clone(), why))?,
            other.cut_at_start,
        ));
    }
    Ok(daemon_log::read_all(texts))
}

/// A file's text, or why it was not read.
fn file_text(file: &LogFileFacts) -> Result<&str, String> {
    match (&file.text, &file.error) {
        (Some(text), None) => Ok(text),
        (_, Some(error)) => Err(format!(
            "{} could not be read: {error}",
            file.path.to_string_lossy()
        )),
        (None, None) => Err(format!("{} was not read", file.path.to_string_lossy())),
    }
}

/// Whether the daemon's driver cannot report a server's state (before 550, or unknown).
fn before_server_status(driver_version: Option<&str>) -> bool {
    let major =
        driver_version.and_then(|version| version.split('.').next()?.trim().parse::<u32>().ok());
    major.is_none_or(|major| major < SERVER_STATUS_DRIVER)
}

fn restart_fix(context: &Context<'_>, path: &str) -> String {
    format!(
        "read {path} and the servers' server.log for the cause, fix it, then have the daemon's owner restart the daemon (echo quit | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control, then start it again) and retry",
        crate::shell_quote(&context.directory.to_string_lossy())
    )
}

fn crash_loop(context: &Context<'_>, path: &str, reading: &LogReading) -> Finding {
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

fn fatal_error(context: &Context<'_>, path: &str, line: &str) -> Finding {
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

/// The advisory warnings: never a rejection, not even with `--require-verified`.
fn notes(context: &Context<'_>, served: &mut Served, path: &str, reading: &LogReading) {
    let judged = context.request.judged_for_uid(context.facts);
    if let Some((uid, line)) = reading
        .pending
        .iter()
        .find(|(uid, _)| judged.is_some_and(|judged| judged != *uid))
    {
        served.note(note(
            context.words(),
            Code::DaemonLogPendingClient,
            format!("its log {path} shows a pending client of user {uid} ({line:?})"),
            "expect this job's server to be asked to exit once idle; run the jobs of different users on different GPUs, or run the daemon in multi-user mode (-d -M, as root)",
        ));
    }
    if let Some(line) = &reading.client_zero {
        served.note(note(
            context.words(),
            Code::DaemonLogClientPidZero,
            format!("its log {path} shows a client of PID 0 ({line:?}): a client in a PID namespace the daemon cannot see"),
            "run the daemon in the clients' PID namespace (or the host's, with hostPID), so that it can track them",
        ));
    }
    if let Some(line) = &reading.failed_to_start {
        served.note(note(
            context.words(),
            Code::DaemonLogServerFailedToStart,
            format!("its log {path} shows a server that failed to start ({line:?})"),
            "read the daemon's log for the cause if a client fails to connect",
        ));
    }
}

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
