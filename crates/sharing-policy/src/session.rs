//! The settings session: what the probe asks once the daemon answered (each listed server's
//! state, clients and limits, the default pinned-memory limit of each GPU ordinal the first
//! session did not ask), and what each answer says: mps-protocol splits a session and parses
//! each answer into a status (docs/mps-daemon.md §5b; gpu-truth §4–5). Why a session or an
//! answer says nothing known is structured here and worded in `message/session.rs`.

use crate::daemon::{self, DaemonStatus, RetriedAfterAnswer};
use crate::{
    CapturedText, HostFacts, Pid, QueryOutcome, QueryRecord, ReadOnlyCommand, gpu, served,
};
use crate::{MemSize, Percentage};
use mps_protocol::Answer;

/// The most GPU ordinals a settings session asks about (more than any host has GPUs).
const MAX_ORDINALS: usize = 64;

/// The most servers a settings session asks about (a daemon runs one at a time).
const MAX_SERVERS: usize = 16;

/// The most servers whose per-device pinned-memory limits a settings session asks (one per
/// GPU ordinal each).
const MAX_LIMIT_SERVERS: usize = 4;

pub use mps_protocol::MAX_LISTED_CLIENTS;

/// What the probe asks once a live daemon answered, or `None` when there is nothing
/// to ask (an idle daemon whose first session asked every ordinal's default): the state of
/// each server the daemon listed, its clients and limits, then the default pinned-memory limit
/// of each GPU ordinal of the host table that the first session did not ask (the daemon numbers devices in its own CUDA view, which
/// is one of these; the validator picks the validated GPU's), in a [`crate::separated`]
/// session. `mps-host` calls this, so the decision of what to ask stays here.
pub fn settings_commands(facts: &HostFacts) -> Option<Vec<ReadOnlyCommand>> {
    let directory = facts.env.pipe_directory();
    let record = facts.daemon_query.as_ref()?;
    let servers = served::server_pids(Some(record), directory.as_bytes());
    if !matches!(
        daemon::status(Some(record), directory.as_bytes()),
        DaemonStatus::Live { .. }
    ) {
        return None;
    }
    let servers: Vec<Pid> = servers
        .into_iter()
        .filter_map(Pid::new)
        .take(MAX_SERVERS)
        .collect();
    // Each server's state, its clients (a client left by a killed run leaves the server in an
    // undefined state) and the share it applies (the defaults apply only to the next server).
    let mut asked: Vec<ReadOnlyCommand> = servers
        .iter()
        .flat_map(|&pid| {
            [
                ReadOnlyCommand::GetServerStatus(pid),
                ReadOnlyCommand::GetClientList(pid),
                ReadOnlyCommand::GetActiveThreadPercentage(pid),
            ]
        })
        .collect();
    let text = gpu::host_text(facts);
    if let Ok(table) = gpu::parse_table(&text) {
        let mut ordinals: Vec<u32> = table.rows().iter().map(|row| row.index).collect();
        ordinals.sort_unstable();
        ordinals.dedup();
        ordinals.truncate(MAX_ORDINALS);
        // The first session asked the defaults of the first ordinals already (an older
        // snapshot's two-command probe asked none).
        let answered = if daemon::session_answers(record).is_some() {
            mps_protocol::FIRST_SESSION_ORDINALS
        } else {
            0
        };
        asked.extend(
            ordinals
                .iter()
                .copied()
                .filter(|&ordinal| ordinal >= answered)
                .map(ReadOnlyCommand::GetDefaultDevicePinnedMemLimit),
        );
        // The pinned-memory limit each running server applies, per ordinal.
        for &pid in servers.iter().take(MAX_LIMIT_SERVERS) {
            asked.extend(
                ordinals
                    .iter()
                    .map(|&ordinal| ReadOnlyCommand::GetDevicePinnedMemLimit(pid, ordinal)),
            );
        }
    }
    (!asked.is_empty()).then(|| crate::separated(&asked))
}

/// Why a recorded settings session cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionUnreadable {
    /// It ran another program than the control front-end, or passed arguments.
    NotTheFrontEnd,
    /// Its `CUDA_MPS_PIPE_DIRECTORY` names another pipe directory.
    OtherPipeDirectory,
    /// It asked again after an answer that was not transient.
    Retried(RetriedAfterAnswer),
    /// Its stdin is not a separated session of read-only commands.
    NotSeparated,
    /// It did not exit 0: how it ended ([`daemon::not_answered`]).
    NotAnswered(DaemonStatus),
    /// Exit 0, but cut short or with a message on stderr, or its stdout not UTF-8.
    Unclean {
        /// The standard output.
        stdout: CapturedText,
        /// The standard error.
        stderr: CapturedText,
    },
    /// Its stdout (here) is not one answer per asked command between liveness lines.
    NotSplit(CapturedText),
}

/// Each asked command of a recorded settings session with its answer lines, or why the record
/// cannot be read as one: it must be this probe's (the control front-end, no arguments, a
/// [`crate::separated`] session of read-only commands on stdin, the pipe directory, retried
/// only after transient outcomes), exit 0 with nothing on stderr, and its stdout must split
/// into one answer per asked command between `%.1f` liveness lines.
pub(crate) fn session_answers<'a>(
    record: &'a QueryRecord,
    pipe_directory: &[u8],
) -> Result<Vec<(ReadOnlyCommand, Vec<&'a str>)>, SessionUnreadable> {
    let asked = asked_commands(record, pipe_directory)?;
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        stderr,
        ..
    } = &record.outcome
    else {
        let how = daemon::not_answered(record).unwrap_or(DaemonStatus::NotQueried);
        return Err(SessionUnreadable::NotAnswered(how));
    };
    if stdout.truncated || stdout.non_utf8 || stderr.truncated || !stderr.text.is_empty() {
        return Err(SessionUnreadable::Unclean {
            stdout: stdout.clone(),
            stderr: stderr.clone(),
        });
    }
    mps_protocol::split_answers(&asked, &stdout.text)
        .ok_or_else(|| SessionUnreadable::NotSplit(stdout.clone()))
}

/// The commands a settings session asked, between its liveness commands.
fn asked_commands(
    record: &QueryRecord,
    pipe_directory: &[u8],
) -> Result<Vec<ReadOnlyCommand>, SessionUnreadable> {
    if !daemon::is_control_program(&record.program) || !record.args.is_empty() {
        return Err(SessionUnreadable::NotTheFrontEnd);
    }
    if record
        .env
        .get("CUDA_MPS_PIPE_DIRECTORY")
        .is_some_and(|dir| dir.as_bytes() != pipe_directory)
    {
        return Err(SessionUnreadable::OtherPipeDirectory);
    }
    daemon::check_retries(record).map_err(SessionUnreadable::Retried)?;
    mps_protocol::asked_in(&record.stdin).ok_or(SessionUnreadable::NotSeparated)
}

pub(crate) use mps_protocol::ServerState;

/// One answer of the settings session: known, or why not.
pub(crate) type Read<T> = Result<T, AnswerUnread>;

/// Why one answer of the settings session says nothing known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AnswerUnread {
    /// The daemon does not know the command (`Unknown command`: an older driver).
    UnknownCommand(ReadOnlyCommand),
    /// The server had ended when it was asked (`Server <pid> not found`).
    ServerGone(Pid, ServerAsked),
    /// `get_client_list` listed more than [`MAX_LISTED_CLIENTS`] clients.
    TooManyClients(Pid),
    /// Any other answer to the command: the lines it printed.
    Unexpected(ReadOnlyCommand, Vec<String>),
}

/// What was asked of a server that had ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerAsked {
    /// Its state (`get_server_status`).
    State,
    /// Its clients (`get_client_list`).
    Clients,
    /// Its active-thread percentage (`get_active_thread_percentage`).
    ActiveThreadPercentage,
    /// Its pinned-memory limit for a device (`get_device_pinned_mem_limit`).
    PinnedMemLimit,
}

/// `command`'s answer `lines`, kept as printed, when they are not a known answer.
fn unexpected(command: ReadOnlyCommand, lines: &[&str]) -> AnswerUnread {
    AnswerUnread::Unexpected(
        command,
        lines.iter().map(|line| (*line).to_owned()).collect(),
    )
}

/// The state `lines` (one answer of `get_server_status <pid>`) give.
pub(crate) fn server_state(pid: Pid, lines: &[&str]) -> Read<ServerState> {
    let command = ReadOnlyCommand::GetServerStatus(pid);
    match mps_protocol::server_state(pid, lines) {
        Answer::Value(state) => Ok(state),
        Answer::UnknownCommand => Err(AnswerUnread::UnknownCommand(command)),
        Answer::ServerNotFound => Err(AnswerUnread::ServerGone(pid, ServerAsked::State)),
        _ => Err(unexpected(command, lines)),
    }
}

/// The client PIDs `lines` (one answer of `get_client_list <pid>`) give: PIDs separated by
/// whitespace or newlines (docs/mps-daemon.md §5b), nothing when the server has no client.
/// `Server <pid> not found` (the server exited between the list and the session), more than
/// [`MAX_LISTED_CLIENTS`] PIDs, or any other word is not a list.
pub(crate) fn client_pids(pid: Pid, lines: &[&str]) -> Read<Vec<Pid>> {
    let command = ReadOnlyCommand::GetClientList(pid);
    match mps_protocol::client_pids(pid, lines) {
        Answer::Value(pids) => Ok(pids),
        Answer::ServerNotFound => Err(AnswerUnread::ServerGone(pid, ServerAsked::Clients)),
        Answer::UnknownCommand => Err(AnswerUnread::UnknownCommand(command)),
        Answer::TooMany => Err(AnswerUnread::TooManyClients(pid)),
        Answer::Unexpected => Err(unexpected(command, lines)),
    }
}

/// A server's active-thread percentage, from `lines` (one answer of
/// `get_active_thread_percentage <pid>`: `%.1f`).
pub(crate) fn server_percentage(pid: Pid, lines: &[&str]) -> Read<Percentage> {
    match mps_protocol::server_percentage(pid, lines) {
        Answer::Value(percentage) => Ok(percentage),
        Answer::ServerNotFound => Err(AnswerUnread::ServerGone(
            pid,
            ServerAsked::ActiveThreadPercentage,
        )),
        _ => Err(unexpected(
            ReadOnlyCommand::GetActiveThreadPercentage(pid),
            lines,
        )),
    }
}

/// A server's pinned-memory limit for a device, from `lines` (one answer of
/// `get_device_pinned_mem_limit <pid> <device>`): `None` when none is set.
pub(crate) fn server_pinned_limit(
    pid: Pid,
    device: u32,
    lines: &[&str],
) -> Read<Option<(MemSize, String)>> {
    match mps_protocol::server_pinned_limit(pid, lines) {
        Answer::Value(size) => Ok(with_raw(size, lines)),
        Answer::ServerNotFound => Err(AnswerUnread::ServerGone(pid, ServerAsked::PinnedMemLimit)),
        _ => Err(unexpected(
            ReadOnlyCommand::GetDevicePinnedMemLimit(pid, device),
            lines,
        )),
    }
}

/// A limit that was read, with the line it was read from (the evidence keeps the daemon's
/// own text).
fn with_raw(size: Option<MemSize>, lines: &[&str]) -> Option<(MemSize, String)> {
    size.zip(lines.first().map(|line| (*line).to_owned()))
}

/// The client PIDs every listed server's `get_client_list` answer in the recorded settings
/// session names, at most [`MAX_LISTED_CLIENTS`] in all, in order and without repeats:
/// what `mps-host` observes in `/proc` ([`HostFacts::listed_clients`]). Empty when nothing
/// was asked or answered.
pub fn listed_client_pids(facts: &HostFacts) -> Vec<i64> {
    let Some(record) = facts.settings_query.as_ref() else {
        return Vec::new();
    };
    let directory = facts.env.pipe_directory();
    let Ok(answers) = session_answers(record, directory.as_bytes()) else {
        return Vec::new();
    };
    let mut pids: Vec<i64> = Vec::new();
    for (command, lines) in &answers {
        if let ReadOnlyCommand::GetClientList(server) = command
            && let Ok(clients) = client_pids(*server, lines)
        {
            for client in clients {
                if pids.len() < MAX_LISTED_CLIENTS && !pids.contains(&client.get()) {
                    pids.push(client.get());
                }
            }
        }
    }
    pids
}

/// The limit `lines` (one answer of `get_default_device_pinned_mem_limit`) give: `None` when
/// the daemon printed nothing (no limit set for that device identifier).
pub(crate) fn pinned_limit(device: u32, lines: &[&str]) -> Read<Option<(MemSize, String)>> {
    let command = ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(device);
    match mps_protocol::default_pinned_limit(lines) {
        Answer::Value(size) => Ok(with_raw(size, lines)),
        Answer::UnknownCommand => Err(AnswerUnread::UnknownCommand(command)),
        _ => Err(unexpected(command, lines)),
    }
}
