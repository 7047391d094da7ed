//! What the control daemon's own log says (docs/mps-daemon.md, "The daemon's log"): a daemon
//! can answer every query while no server can live. Two or more server crashes since the last
//! ready server are a crash loop; a server handling a fatal GPU error with no server context
//! created since is the `FAULT` a daemon before 550 cannot report. A pending client of another
//! user, a client of PID 0 and a server that failed to start are advisory warnings. A log that
//! cannot be read is unverified, never a pass. Decides only; the words are in
//! `message/log.rs`.

use super::{Context, Findings, Served, message};
use crate::daemon_log::{self, ENOENT, LogReading};
use crate::{DaemonLogFacts, LogFileFacts, OsText};

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

/// Why the daemon's log could not be read.
#[derive(Clone, Copy)]
pub(super) enum Unread<'a> {
    /// A v4 snapshot does not record it.
    NotRecorded,
    /// Its directory was not decided: why, when the probe said.
    NoDirectory(Option<&'a str>),
    /// The directory read is not the proven daemon's log directory.
    NotProven(&'a OsText),
    /// No log file was read.
    NoFile,
    /// A file of the log was not read (its error, when one was recorded).
    FileNotRead(&'a LogFileFacts),
    /// The control log at this path holds no line.
    Empty(&'a OsText),
}

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
        None if context.facts.schema == crate::SCHEMA => Err(Unread::NotRecorded),
        None => return LogEvidence::default(),
    };
    let reading = match read {
        Ok(reading) => reading,
        Err(unread) => {
            let finding = message::log::unverified(context, unread);
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
        findings.push(|| message::log::crash_loop(context, &shown, &reading));
    }
    if let Some(line) = &reading.fault
        && before_server_status(served.facts.driver_version.as_deref())
    {
        findings.push(|| message::log::fatal_error(context, &shown, line));
    }
    notes(context, served, &shown, &reading);
    LogEvidence {
        path,
        last_ready: reading.last_ready,
    }
}

/// The log's reading, or why it could not be read.
fn readable<'a>(context: &Context<'_>, log: &'a DaemonLogFacts) -> Result<LogReading, Unread<'a>> {
    let Some(directory) = &log.directory else {
        return Err(Unread::NoDirectory(log.unknown.as_deref()));
    };
    let proven = daemon_log::log_directory(context.facts, context.directory.as_bytes()).ok();
    if proven.as_ref() != Some(directory) {
        return Err(Unread::NotProven(directory));
    }
    let Some(control) = log.files.first() else {
        return Err(Unread::NoFile);
    };
    let control_text = file_text(control)?;
    if control_text.trim().is_empty() {
        return Err(Unread::Empty(&control.path));
    }
    let mut texts = vec![(control_text, control.cut_at_start)];
    for other in log.files.iter().skip(1) {
        if other.errno == Some(ENOENT) {
            continue;
        }
        texts.push((file_text(other)?, other.cut_at_start));
    }
    Ok(daemon_log::read_all(texts))
}

/// A file's text, or that it was not read.
fn file_text(file: &LogFileFacts) -> Result<&str, Unread<'_>> {
    match (&file.text, &file.error) {
        (Some(text), None) => Ok(text),
        _ => Err(Unread::FileNotRead(file)),
    }
}

/// Whether the daemon's driver cannot report a server's state (before 550, or unknown).
fn before_server_status(driver_version: Option<&str>) -> bool {
    let major =
        driver_version.and_then(|version| version.split('.').next()?.trim().parse::<u32>().ok());
    major.is_none_or(|major| major < SERVER_STATUS_DRIVER)
}

/// The advisory warnings: never a rejection, not even with `--require-verified`.
fn notes(context: &Context<'_>, served: &mut Served, path: &str, reading: &LogReading) {
    let judged = context.request.judged_for_uid(context.facts);
    if let Some((uid, line)) = reading
        .pending
        .iter()
        .find(|(uid, _)| judged.is_some_and(|judged| judged != *uid))
    {
        served.note(message::log::pending_client(
            context.words(),
            path,
            *uid,
            line,
        ));
    }
    if let Some(line) = &reading.client_zero {
        served.note(message::log::client_pid_zero(context.words(), path, line));
    }
    if let Some(line) = &reading.failed_to_start {
        served.note(message::log::server_failed_to_start(
            context.words(),
            path,
            line,
        ));
    }
}
