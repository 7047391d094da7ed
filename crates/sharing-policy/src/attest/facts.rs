//! The attestation snapshot: what `attest` observed after the learner and the collector
//! started, raw. `mps-host` records it; [`attest`](super::attest) judges it, live or replayed.

use serde::{Deserialize, Serialize};

use crate::{
    CallerFacts, ClientFacts, DaemonSearch, OsText, PidFileFacts, ProcessFacts, QueryRecord,
};

/// The attestation snapshot schema.
pub const ATTEST_SCHEMA: &str = "mps-preflight/attest-facts/v1";

/// Field 22 of a `/proc/<pid>/stat` line (`starttime`): counted after the last `)`, since the
/// command name in parentheses may hold spaces and parentheses. `None` when it does not parse.
///
/// ```
/// use sharing_policy::stat_start_time;
///
/// let stat = "4267 (py (x) 3) S 1 4267 4267 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3";
/// assert_eq!(stat_start_time(stat), Some(987_654));
/// assert_eq!(stat_start_time("4267 (python3) S 1"), None);
/// ```
pub fn stat_start_time(stat: &str) -> Option<u64> {
    let (_, after) = stat.rsplit_once(')')?;
    // After the name: field 3 (state) is the first; field 22 is the twentieth.
    let field = after.split_ascii_whitespace().nth(19)?;
    if field.bytes().all(|b| b.is_ascii_digit()) {
        field.parse().ok()
    } else {
        None
    }
}

/// The variables of a client's `/proc/<pid>/environ` that are recorded (raw): the pipe
/// directory its CUDA connects through, its GPU mask, and its own MPS limits (a
/// client may lower, never raise, the daemon's active-thread percentage).
pub const CLIENT_ENVIRON_VARS: [&str; 4] = [
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
    "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
];

/// Where the pipe directory that was asked came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PipeDirectorySource {
    /// The validated evidence of the manifest (`cuda_process_sharing.pipe_directory`).
    Manifest,
    /// The attesting process's own environment (`CUDA_MPS_PIPE_DIRECTORY`, else the default).
    Environment,
}

/// One attestation's observations. `None` means "not observed".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AttestFacts {
    /// [`ATTEST_SCHEMA`].
    pub schema: String,
    /// The operating system, as Rust names it.
    pub os: String,
    /// The pipe directory whose control daemon was asked.
    pub pipe_directory: OsText,
    /// Where that pipe directory came from.
    pub pipe_directory_source: PipeDirectorySource,
    /// The attesting process's user IDs.
    pub caller: Option<CallerFacts>,
    /// The learner's process.
    pub learner: ClientFacts,
    /// The collector's process.
    pub collector: ClientFacts,
    /// The last round's server query (`get_default_active_thread_percentage`, then
    /// `get_server_list`).
    pub server_query: Option<QueryRecord>,
    /// Each listed server, in the order listed: its client query and its process.
    pub servers: Vec<ServerFacts>,
    /// How long `attest` was allowed to wait for both to attach, in milliseconds.
    pub wait_ms: u64,
    /// How many rounds of observation ran (the record holds the last).
    pub rounds: u32,
    /// How long the whole observation took, in milliseconds.
    pub elapsed_ms: u64,
    /// The host's name (`uname` nodename), raw.
    pub host_name: Option<OsText>,
    /// The pipe directory's pid file (550+), as the preflight records it (absent in
    /// snapshots written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_file: Option<PidFileFacts>,
    /// The control daemon's process (its command line shows multi-user mode), found as the
    /// preflight finds it: the pid file, else a bounded `/proc` scan (absent in
    /// older snapshots: multi-user mode unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_process: Option<DaemonSearch>,
    /// `readlink /proc/self/ns/pid` of the attesting process, raw: its PID namespace (absent
    /// in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer_pid_namespace: Option<String>,
}

/// One listed server: the question asked about its clients, and its process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServerFacts {
    /// The server PID as `get_server_list` printed it.
    pub pid: i64,
    /// `get_default_active_thread_percentage`, then `get_client_list <pid>`.
    pub client_query: QueryRecord,
    /// The server's process (its owner).
    pub process: ProcessFacts,
    /// Its state, active-thread percentage and pinned-memory limit for device 0
    /// (`sharing_policy::attest_settings_commands`); absent from older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_query: Option<QueryRecord>,
}
