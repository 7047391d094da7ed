//! What the attested server serves its clients with: its state
//! (`get_server_status`, 550+), its active-thread percentage and its pinned-memory limit for
//! device 0 in its own view, asked in one separated session per server; and each client's own
//! `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` / `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, raw.

use serde::{Deserialize, Serialize};

use super::AttestFacts;
use super::message::answered;
use crate::message::session::{answer_unread, session_unreadable};
use crate::session::{self, ServerState};
use crate::{MemSize, Percentage};
use crate::{Pid, ReadOnlyCommand};

/// The device ordinal `attest` asks the server's pinned-memory limit for: the first device in
/// the server's view (a per-GPU daemon's only one). `attest` runs no `nvidia-smi`, so it cannot
/// map the validated GPU to the server's numbering.
pub const ATTEST_DEVICE: u32 = 0;

/// The settings questions `attest` asks about one server, in a [`crate::separated`] session.
///
/// ```
/// use sharing_policy::{Pid, attest_settings_commands, probe_stdin};
///
/// let stdin = probe_stdin(&attest_settings_commands(Pid::new(4428).unwrap()));
/// assert!(stdin.contains("\nget_server_status 4428\n"));
/// assert!(stdin.contains("\nget_active_thread_percentage 4428\n"));
/// assert!(stdin.contains("\nget_device_pinned_mem_limit 4428 0\n"));
/// ```
pub fn attest_settings_commands(server: Pid) -> Vec<ReadOnlyCommand> {
    crate::separated(&[
        ReadOnlyCommand::GetServerStatus(server),
        ReadOnlyCommand::GetActiveThreadPercentage(server),
        ReadOnlyCommand::GetDevicePinnedMemLimit(server, ATTEST_DEVICE),
    ])
}

/// One server's settings as its daemon answered; each `None` was not read (`unread` says why).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ServerSettings {
    /// The server's PID.
    pub pid: i64,
    /// `ACTIVE`, `INITIALIZING` or `FAULT` (550+).
    pub status: Option<String>,
    /// Its active-thread percentage (`%.1f`).
    pub active_thread_percentage: Option<Percentage>,
    /// Its pinned-memory limit for device 0 of its view, as printed (`10G`, `512M`); null
    /// when none is set or it was not read.
    pub device_pinned_mem_limit: Option<String>,
    /// Why each value that is null was not read (none for a limit that is simply not set).
    pub unread: Vec<String>,
}

impl ServerSettings {
    /// Whether the server answered `FAULT`: it rejects new clients, and its clients are not
    /// being served.
    pub fn is_fault(&self) -> bool {
        self.status.as_deref() == Some(ServerState::Fault.as_str())
    }
}

/// The settings of `server`, when its session was recorded.
pub(super) fn read(facts: &AttestFacts, server: i64) -> Option<ServerSettings> {
    let record = facts
        .servers
        .iter()
        .find(|s| s.pid == server)?
        .settings_query
        .as_ref()?;
    let pid = Pid::new(server)?;
    let mut settings = ServerSettings {
        pid: server,
        status: None,
        active_thread_percentage: None,
        device_pinned_mem_limit: None,
        unread: Vec::new(),
    };
    let answers = match session::session_answers(record, facts.pipe_directory.as_bytes()) {
        Ok(answers) => answers,
        Err(why) => {
            settings.unread.push(session_unreadable(&why));
            return Some(settings);
        }
    };
    let answer = |command: ReadOnlyCommand| {
        answers
            .iter()
            .find(|(asked, _)| *asked == command)
            .map(|(_, lines)| lines.as_slice())
            .ok_or_else(|| super::message::not_asked(&command.line()))
    };
    match answer(ReadOnlyCommand::GetServerStatus(pid))
        .and_then(|lines| session::server_state(pid, lines).map_err(|why| answer_unread(&why)))
    {
        Ok(state) => settings.status = Some(state.as_str().to_owned()),
        Err(why) => settings.unread.push(why),
    }
    match answer(ReadOnlyCommand::GetActiveThreadPercentage(pid)).and_then(|lines| match lines {
        [line] => Percentage::parse_daemon(line)
            .ok_or_else(|| answered(&format!("get_active_thread_percentage {pid}"), line)),
        other => Err(answered(
            &format!("get_active_thread_percentage {pid}"),
            &other,
        )),
    }) {
        Ok(percentage) => settings.active_thread_percentage = Some(percentage),
        Err(why) => settings.unread.push(why),
    }
    match answer(ReadOnlyCommand::GetDevicePinnedMemLimit(pid, ATTEST_DEVICE)).and_then(|lines| {
        match lines {
            [] => Ok(None),
            [line] => MemSize::parse_daemon(line)
                .map(|_| Some((*line).to_owned()))
                .ok_or_else(|| answered(&format!("get_device_pinned_mem_limit {pid} 0"), line)),
            other => Err(answered(
                &format!("get_device_pinned_mem_limit {pid} 0"),
                &other,
            )),
        }
    }) {
        Ok(limit) => settings.device_pinned_mem_limit = limit,
        Err(why) => settings.unread.push(why),
    }
    Some(settings)
}
