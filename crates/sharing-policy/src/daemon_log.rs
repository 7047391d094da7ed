//! The control daemon's own log (`<log directory>/control.log`, and `server.log` when
//! present): where `mps-host` reads it ([`log_directory`], worded for it by
//! [`crate::daemon_log_directory`]), the raw record it keeps
//! ([`crate::DaemonLogFacts`]), and what its lines say ([`read_log`]). Every line starts
//! `[YYYY-MM-DD HH:MM:SS.mmm <Kind> <pid>] ` and the kind word varies (`Control`, `Server`,
//! `Other`, `Legacy Server`), so a line is read by the text after its first `] `
//! (docs/mps-daemon.md, "The daemon's log").

use crate::OsText;
use crate::log_facts::DEFAULT_LOG_DIRECTORY;
use crate::served::{self, DaemonProcess, NotIdentified};

/// `ENOENT`: the file does not exist.
pub(crate) const ENOENT: i32 = 2;

/// Why the daemon's log directory cannot be decided.
pub(crate) enum LogDirectoryUnknown<'a> {
    /// The daemon's process is not proven, for this reason.
    NotProven(NotIdentified<'a>),
    /// The proven daemon's environment was not read: its PID and the recorded error, if any.
    EnvironUnread { pid: i64, error: Option<&'a str> },
}

/// The log directory of the control daemon serving `pipe_directory`, from the proven
/// daemon's own environment (`CUDA_MPS_LOG_DIRECTORY`, else [`DEFAULT_LOG_DIRECTORY`]): what
/// `mps-host` reads. No other process's word is taken.
pub(crate) fn log_directory<'a>(
    facts: &'a crate::HostFacts,
    pipe_directory: &[u8],
) -> Result<OsText, LogDirectoryUnknown<'a>> {
    match served::identify(facts, pipe_directory) {
        DaemonProcess::Found(process) => {
            let environ =
                process
                    .environ
                    .as_ref()
                    .ok_or_else(|| LogDirectoryUnknown::EnvironUnread {
                        pid: process.pid,
                        error: process.errors.get("environ").map(String::as_str),
                    })?;
            Ok(match environ.get("CUDA_MPS_LOG_DIRECTORY") {
                Some(dir) if !dir.as_bytes().is_empty() => dir.clone(),
                _ => OsText::from(DEFAULT_LOG_DIRECTORY),
            })
        }
        DaemonProcess::Unknown(why) => Err(LogDirectoryUnknown::NotProven(why)),
    }
}

/// What a log's tail says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LogReading {
    /// The PID of the last `NEW SERVER <pid>: Ready`.
    pub(crate) last_ready: Option<i64>,
    /// The server crashes since the last ready server (or the daemon's start): each
    /// `Server <pid> exited with status <non-zero>` or `Server encountered a fatal exception`
    /// (the two lines of one crash count once), as quoted lines.
    pub(crate) crashes: Vec<String>,
    /// `Server is handling a fatal GPU error.` with no later `Creating server context`.
    pub(crate) fault: Option<String>,
    /// `NEW CLIENT <pid> from user <uid>: Server is not ready, push client to pending list`
    /// since the last ready server, by user.
    pub(crate) pending: Vec<(u32, String)>,
    /// `NEW CLIENT 0 …` since the daemon's start.
    pub(crate) client_zero: Option<String>,
    /// `Failed to start` (or `MPS server failed to start`) since the daemon's start.
    pub(crate) failed_to_start: Option<String>,
    /// How many lines were read.
    pub(crate) lines: usize,
}

/// The text after a line's `[<time> <kind> <pid>] ` prefix; the whole line when it has none.
fn message(line: &str) -> &str {
    match (line.starts_with('['), line.find("] ")) {
        (true, Some(at)) => line.get(at + 2..).unwrap_or(""),
        _ => line,
    }
}

/// `Server <pid> exited with status <n>`: the status.
fn exit_status(message: &str) -> Option<u64> {
    let rest = message.strip_prefix("Server ")?;
    let (pid, rest) = rest.split_once(' ')?;
    pid.parse::<u64>().ok()?;
    rest.strip_prefix("exited with status ")?
        .trim()
        .parse()
        .ok()
}

/// `NEW SERVER <pid>: Ready`: the PID.
fn ready(message: &str) -> Option<i64> {
    let rest = message.strip_prefix("NEW SERVER ")?;
    let (pid, rest) = rest.split_once(':')?;
    (rest.trim() == "Ready").then_some(())?;
    pid.trim().parse().ok()
}

/// `NEW CLIENT <pid> from user <uid>: <rest>`: the PID, the UID and the rest.
fn new_client(message: &str) -> Option<(i64, u32, &str)> {
    let rest = message.strip_prefix("NEW CLIENT ")?;
    let (pid, rest) = rest.split_once(" from user ")?;
    let (uid, rest) = rest.split_once(':')?;
    Some((
        pid.trim().parse().ok()?,
        uid.trim().parse().ok()?,
        rest.trim(),
    ))
}

/// Reads a log's tail: `cut_at_start` drops its first (possibly partial) line.
pub(crate) fn read_log(text: &str, cut_at_start: bool) -> LogReading {
    let mut reading = LogReading::default();
    let mut lines = text.lines();
    if cut_at_start {
        lines.next();
    }
    // A fatal exception not yet followed by its server's exit line.
    let mut exception: Option<String> = None;
    for line in lines {
        reading.lines += 1;
        let said = message(line);
        if said.starts_with("Starting control daemon") {
            reading = LogReading {
                lines: reading.lines,
                ..LogReading::default()
            };
            exception = None;
        } else if let Some(pid) = ready(said) {
            reading.last_ready = Some(pid);
            reading.crashes.clear();
            reading.pending.clear();
            exception = None;
        } else if said.starts_with("Server encountered a fatal exception") {
            if let Some(previous) = exception.replace(line.to_owned()) {
                reading.crashes.push(previous);
            }
        } else if let Some(status) = exit_status(said) {
            if status != 0 {
                exception = None;
                reading.crashes.push(line.to_owned());
            }
        } else if said.contains("Server is handling a fatal GPU error") {
            reading.fault = Some(line.to_owned());
        } else if said.contains("Creating server context") {
            reading.fault = None;
        } else if let Some((pid, uid, rest)) = new_client(said) {
            if pid == 0 {
                reading.client_zero = Some(line.to_owned());
            }
            if rest.starts_with("Server is not ready, push client to pending list") {
                reading.pending.push((uid, line.to_owned()));
            }
        } else if said.contains("Failed to start") || said.contains("failed to start") {
            reading.failed_to_start = Some(line.to_owned());
        }
    }
    if let Some(exception) = exception {
        reading.crashes.push(exception);
    }
    reading
}

/// The same reading of several files: the first's ready server and pending clients; faults,
/// crashes and notes from any.
pub(crate) fn read_all<'a>(texts: impl IntoIterator<Item = (&'a str, bool)>) -> LogReading {
    let mut all = LogReading::default();
    for (index, (text, cut)) in texts.into_iter().enumerate() {
        let one = read_log(text, cut);
        if index == 0 {
            all.last_ready = one.last_ready;
            all.pending = one.pending;
        }
        all.crashes.extend(one.crashes);
        all.fault = all.fault.or(one.fault);
        all.client_zero = all.client_zero.or(one.client_zero);
        all.failed_to_start = all.failed_to_start.or(one.failed_to_start);
        all.lines += one.lines;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_and_its_exit_line_count_once_and_a_ready_server_clears_them() {
        let log = "[2024-04-29 11:22:10.441 Control    73] Server encountered a fatal exception. Shutting down\n\
                   [2024-04-29 11:22:10.446 Control    73] Server 95 exited with status 1\n";
        assert_eq!(read_log(log, false).crashes.len(), 1);
        let twice = [log, log].concat();
        assert_eq!(read_log(&twice, false).crashes.len(), 2);
        let healed = [
            &twice,
            "[2026-05-31 23:48:21.748 Control 11107] NEW SERVER 11803: Ready\n",
        ]
        .concat();
        let reading = read_log(&healed, false);
        assert!(reading.crashes.is_empty());
        assert_eq!(reading.last_ready, Some(11803));
    }

    #[test]
    fn a_clean_exit_is_no_crash_and_a_cut_first_line_is_dropped() {
        let log = "[2013-08-05 13:02:26.226 Control 13894] Server 13929 exited with status 0\n";
        assert!(read_log(log, false).crashes.is_empty());
        let cut = "ver 95 exited with status 1\n[2024 Control 1] Server 96 exited with status 2\n";
        assert_eq!(read_log(cut, true).crashes.len(), 1);
        assert_eq!(
            read_log(cut, false).crashes.len(),
            1,
            "no prefix: the whole line"
        );
    }

    #[test]
    fn the_kind_word_does_not_matter() {
        for kind in ["Control", "Server", "Other", "Legacy Server"] {
            let log = format!(
                "[2022-04-28 15:56:08.906 {kind} 11570] Volta MPS: Server is handling a fatal GPU error.\n"
            );
            assert!(read_log(&log, false).fault.is_some(), "{kind}");
        }
    }
}
