//! The attestation snapshot: what `attest` observed after the learner and the collector
//! started, raw. `mps-host` records it; [`attest`](super::attest) judges it, live or replayed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{CallerFacts, OsText, ProcessFacts, QueryRecord};

/// The attestation snapshot schema.
pub const ATTEST_SCHEMA: &str = "mps-preflight/attest-facts/v1";

/// The variables of a client's `/proc/<pid>/environ` that are recorded (raw): the pipe
/// directory its CUDA connects through, its GPU mask, and its own MPS limits (issue 20: a
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
}

/// A process that should be an MPS client, as `/proc/<pid>` showed it, raw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClientFacts {
    /// The PID given on the command line.
    pub pid: i64,
    /// Whether `/proc/<pid>` exists (`None`: the check failed for another reason; see
    /// `errors.entry`).
    pub exists: Option<bool>,
    /// The text after `State:` in `/proc/<pid>/status` (`S (sleeping)`, `Z (zombie)`), raw.
    pub state: Option<String>,
    /// The text after `Uid:` in `/proc/<pid>/status`, uncut.
    pub status_uid: Option<String>,
    /// The [`CLIENT_ENVIRON_VARS`] its `/proc/<pid>/environ` sets (an absent key is unset;
    /// `None` when the file could not be read: another user's, without root).
    pub environ: Option<BTreeMap<String, OsText>>,
    /// The OS error of each file that could not be read (`entry`, `status`, `environ`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
}

impl ClientFacts {
    /// A process of which nothing has been read yet.
    pub fn new(pid: i64) -> Self {
        Self {
            pid,
            exists: None,
            state: None,
            status_uid: None,
            environ: None,
            errors: BTreeMap::new(),
        }
    }
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
    /// Issue 20: its state, active-thread percentage and pinned-memory limit for device 0
    /// (`sharing_policy::attest_settings_commands`); absent from older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_query: Option<QueryRecord>,
}
