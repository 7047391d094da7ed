//! The host-facts snapshot: raw observations only. Interpretation lives in the validator,
//! so a recorded snapshot exercises the same parsers as a live probe.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{CallerFacts, CapturedText, DaemonSearch, OsText, ProcessFacts, QueryRecord};

/// The snapshot schema this crate writes: v4 adds what says whether the clients will run:
/// the daemon's own log ([`HostFacts::daemon_log`]), the clients the listed servers name
/// ([`HostFacts::listed_clients`]), an older driver's rejected GPU query
/// ([`HostFacts::gpu_query_rejected`]), `/dev/shm` ([`HostFacts::shm`]) and the capacity
/// settings ([`HostFacts::capacity`]), the GPU query's health columns, and the compute
/// processes holding an `Exclusive_Process` GPU ([`HostFacts::compute_apps_query`]).
pub const SCHEMA: &str = "mps-preflight/host-facts/v4";

/// The third snapshot schema, still read: v3 added the settings session
/// ([`HostFacts::settings_query`]: each listed server's state, each GPU ordinal's default
/// pinned-memory limit). What it never recorded counts as unverified where a check needs it.
pub const SCHEMA_V3: &str = "mps-preflight/host-facts/v3";

/// The second snapshot schema, still read: v2 added who asked ([`HostFacts::caller`]), the
/// listed servers' owners ([`HostFacts::server_processes`]), the control daemon's process
/// ([`HostFacts::daemon_process`]) and the GPU query's compute mode and driver version columns.
/// What it never recorded (the settings session) counts as unverified.
pub const SCHEMA_V2: &str = "mps-preflight/host-facts/v2";

/// Every snapshot schema this crate reads, newest first.
pub const SCHEMAS_READ: [&str; 4] = [SCHEMA, SCHEMA_V3, SCHEMA_V2, SCHEMA_V1];

/// The top-level fields that only [`SCHEMA`] (v4) defines; an older snapshot that carries
/// one is refused ([`schema_field_error`]).
pub const V4_ONLY_FIELDS: [&str; 7] = [
    "daemon_log",
    "listed_clients",
    "gpu_query_rejected",
    "shm",
    "capacity",
    "compute_apps_query",
    "pipe_access",
];

/// The top-level fields that v3 ([`SCHEMA_V3`]) added; a v1 or v2 snapshot that carries one is
/// refused ([`schema_field_error`]).
pub const V3_ONLY_FIELDS: [&str; 1] = ["settings_query"];

/// The first snapshot schema, still read: what it never recorded counts as unverified.
pub const SCHEMA_V1: &str = "mps-preflight/host-facts/v1";

/// The top-level fields that v2 ([`SCHEMA_V2`]) added; a v1 snapshot that carries one is
/// refused ([`schema_field_error`]).
pub const V2_ONLY_FIELDS: [&str; 4] = ["caller", "server_processes", "daemon_process", "host_name"];

/// Why a snapshot's top-level `fields` do not belong to its `schema`, if they do not: a
/// reader calls this before deserialising, so a v1 snapshot that carries a v2 fact is refused
/// instead of silently read under v2's meaning. Fields no schema defines are refused by
/// deserialisation itself (`deny_unknown_fields`).
///
/// ```
/// use sharing_policy::{schema_field_error, SCHEMA, SCHEMA_V1, SCHEMA_V2};
///
/// use sharing_policy::SCHEMA_V3;
///
/// assert_eq!(schema_field_error(SCHEMA, ["schema", "caller", "settings_query", "daemon_log"]), None);
/// assert_eq!(schema_field_error(SCHEMA_V3, ["settings_query"]), None);
/// assert_eq!(
///     schema_field_error(SCHEMA_V3, ["daemon_log"]).as_deref(),
///     Some("field `daemon_log` is not defined by schema mps-preflight/host-facts/v3 (it is a v4 field)")
/// );
/// assert_eq!(
///     schema_field_error(SCHEMA_V1, ["schema", "caller"]).as_deref(),
///     Some("field `caller` is not defined by schema mps-preflight/host-facts/v1 (it is a v2 field)")
/// );
/// assert_eq!(
///     schema_field_error(SCHEMA_V2, ["caller", "settings_query"]).as_deref(),
///     Some("field `settings_query` is not defined by schema mps-preflight/host-facts/v2 (it is a v3 field)")
/// );
/// ```
pub fn schema_field_error<'a>(
    schema: &str,
    fields: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let before_v3 = schema == SCHEMA_V1 || schema == SCHEMA_V2;
    let later = |field: &str| {
        if V4_ONLY_FIELDS.contains(&field) && schema != SCHEMA {
            Some("v4")
        } else if V3_ONLY_FIELDS.contains(&field) && before_v3 {
            Some("v3")
        } else if V2_ONLY_FIELDS.contains(&field) && schema == SCHEMA_V1 {
            Some("v2")
        } else {
            None
        }
    };
    fields.into_iter().find_map(|field| {
        later(field).map(|version| {
            format!("field `{field}` is not defined by schema {schema} (it is a {version} field)")
        })
    })
}

/// Where CUDA looks for the control pipe when `CUDA_MPS_PIPE_DIRECTORY` is unset or empty.
pub const DEFAULT_PIPE_DIRECTORY: &str = "/tmp/nvidia-mps";

/// One host snapshot: what a probe saw, uninterpreted. `None` means "not observed".
///
/// Unknown fields are refused when a snapshot is read: a fact the reader does not know may be
/// one its writer meant to fail the check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostFacts {
    /// [`SCHEMA`], or an older one still read: [`SCHEMA_V2`] (no settings session) or
    /// [`SCHEMA_V1`] (none of the v2 fields either).
    pub schema: String,
    /// The operating system, as Rust names it (`linux`, `macos`, `windows`, …).
    pub os: String,
    /// The CUDA-related environment variables, raw.
    pub env: EnvFacts,
    /// The host GPU table query (`nvidia-smi --query-gpu=… --format=csv,noheader`).
    pub gpu_query: Option<QueryRecord>,
    /// What the filesystem says about `<pipe directory>/control`.
    pub control_pipe: Option<PipeFacts>,
    /// The read-only query sent to the control daemon.
    pub daemon_query: Option<QueryRecord>,
    /// `<pipe directory>/nvidia-cuda-mps-control.pid` (written by 550+ drivers).
    pub pid_file: Option<PidFileFacts>,
    /// The learner's GPU UUID as its own CUDA runtime reported it, when the caller gave one.
    pub learner_uuid: Option<String>,
    /// The UUID this process's own CUDA runtime reports for each device index it was asked
    /// about (`cuda:N` → UUID; the drop-in's `torch_module`). One equal to the host table's row
    /// that the index maps to proves CUDA's device order for that index. Absent when no
    /// runtime was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_device_uuids: Option<BTreeMap<u32, String>>,
    /// The GPU models query ([`crate::MODELS_QUERY_ARGS`]) the drop-in asks after the
    /// reference's `index,uuid` query, which names no model: only when that table shows more
    /// than one GPU, `CUDA_DEVICE_ORDER` is not `PCI_BUS_ID` and no device of the request is
    /// proven by [`Self::cuda_device_uuids`] ([`crate::needs_gpu_models`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_models_query: Option<QueryRecord>,
    /// The GPU query with the health columns ([`crate::GPU_QUERY_ARGS`]) when `nvidia-smi`
    /// rejected one of its fields as an older driver does (`Field "…" is not a valid field to
    /// query.`, exit status 2); [`Self::gpu_query`] is then the base query
    /// ([`crate::BASE_GPU_QUERY_ARGS`]) asked within the same deadline, and the GPU's health
    /// is unverified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_query_rejected: Option<QueryRecord>,
    /// v2: the probing process's user IDs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<CallerFacts>,
    /// v2: each server PID the daemon query listed, as `/proc` shows it (owner, name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_processes: Option<Vec<ProcessFacts>>,
    /// v2: the control daemon's own process, found through the pid file or a `/proc` scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_process: Option<DaemonSearch>,
    /// The host's name as `uname(2)` gives it (`nodename`), raw. Recorded in the evidence so
    /// that `merge` can tell ranks on different nodes apart. Absent from older snapshots
    /// (read as `None`) and left out of the JSON when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<OsText>,
    /// v3: the settings session asked after a live daemon answered (see
    /// [`crate::separated`]): each listed server's state, clients and limits, and the default
    /// pinned-memory limit of each GPU ordinal the first session did not ask
    /// ([`crate::first_session`]), between liveness lines; absent when nothing was left to ask
    /// (an idle daemon on a host with at most eight GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_query: Option<QueryRecord>,
    /// The tail of the control daemon's log (`control.log`, and `server.log` when present),
    /// read from the proven daemon's log directory; absent in snapshots that did not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_log: Option<crate::DaemonLogFacts>,
    /// Each client PID the listed servers' `get_client_list` answers named in the settings
    /// session ([`crate::listed_client_pids`], bounded), as `/proc` shows it: whether it
    /// exists, its `State:` and start time. A dead or zombie client left by a killed run
    /// means its server must be restarted. Absent when no server was listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_clients: Option<Vec<crate::ClientFacts>>,
    /// The caller's and the proven daemon's `/dev/shm` (same filesystem, room).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm: Option<crate::ShmFacts>,
    /// The capacity settings: the caller's `CUDA_DEVICE_MAX_CONNECTIONS`, the daemon's
    /// open-files limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::CapacityFacts>,
    /// `nvidia-smi` with [`crate::COMPUTE_APPS_QUERY_ARGS`]: the compute processes on each
    /// GPU, asked only when [`crate::compute_apps_wanted`] (a GPU in `Exclusive_Process` and
    /// no server listed: a process holding it keeps the MPS server from starting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_apps_query: Option<QueryRecord>,
    /// What the MPS server of the judged user must reach: each directory on the way to the
    /// pipe and log directories, `<pipe>/control` and `<pipe>/log`, and the user's groups
    /// (notes row 6). Absent in snapshots that did not record it (then unverified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe_access: Option<crate::PipeAccessFacts>,
}

impl HostFacts {
    /// An empty snapshot of this schema: nothing observed.
    pub fn unobserved(os: &str, env: EnvFacts) -> Self {
        Self {
            schema: SCHEMA.to_owned(),
            os: os.to_owned(),
            env,
            gpu_query: None,
            control_pipe: None,
            daemon_query: None,
            pid_file: None,
            learner_uuid: None,
            cuda_device_uuids: None,
            gpu_models_query: None,
            gpu_query_rejected: None,
            caller: None,
            server_processes: None,
            daemon_process: None,
            host_name: None,
            settings_query: None,
            daemon_log: None,
            listed_clients: None,
            shm: None,
            capacity: None,
            compute_apps_query: None,
            pipe_access: None,
        }
    }
}

/// The raw environment. `None` = unset, which CUDA treats differently from empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EnvFacts {
    /// `CUDA_VISIBLE_DEVICES`.
    pub cuda_visible_devices: Option<OsText>,
    /// `CUDA_DEVICE_ORDER`.
    pub cuda_device_order: Option<OsText>,
    /// `CUDA_MPS_PIPE_DIRECTORY`.
    pub cuda_mps_pipe_directory: Option<OsText>,
    /// `CUDA_MPS_LOG_DIRECTORY`.
    pub cuda_mps_log_directory: Option<OsText>,
}

impl EnvFacts {
    /// The pipe directory CUDA would use: a non-empty `CUDA_MPS_PIPE_DIRECTORY`, else
    /// [`DEFAULT_PIPE_DIRECTORY`]. Both the probe and the validator call this, so they agree.
    pub fn effective_pipe_directory(&self) -> OsText {
        self.pipe_directory().into_owned()
    }

    /// [`Self::effective_pipe_directory`], borrowed when the variable gives it.
    pub(crate) fn pipe_directory(&self) -> Cow<'_, OsText> {
        match &self.cuda_mps_pipe_directory {
            Some(dir) if !dir.as_bytes().is_empty() => Cow::Borrowed(dir),
            _ => Cow::Owned(OsText::from(DEFAULT_PIPE_DIRECTORY)),
        }
    }

    /// `<effective pipe directory>/control`, joined as `Path::join` joins (one `/` added unless
    /// the directory already ends with one). The probe records this path in
    /// [`PipeFacts::path`]; the validator refuses a snapshot whose pipe facts name another.
    pub fn control_pipe_path(&self) -> OsText {
        join(&self.pipe_directory(), CONTROL_PIPE_NAME)
    }

    /// `<effective pipe directory>/nvidia-cuda-mps-control.pid` (written by 550+ drivers).
    pub fn pid_file_path(&self) -> OsText {
        join(&self.pipe_directory(), PID_FILE_NAME)
    }
}

/// The control pipe's name inside the pipe directory.
pub const CONTROL_PIPE_NAME: &str = "control";

/// The control daemon's pid file name inside the pipe directory.
pub const PID_FILE_NAME: &str = "nvidia-cuda-mps-control.pid";

/// `directory/name`, as [`EnvFacts::control_pipe_path`] joins them.
pub(crate) fn join(directory: &OsText, name: &str) -> OsText {
    let mut bytes = directory.as_bytes().to_vec();
    if !bytes.ends_with(b"/") {
        bytes.push(b'/');
    }
    bytes.extend_from_slice(name.as_bytes());
    OsText::from_bytes(bytes)
}

/// What the filesystem says about the control pipe path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PipeFacts {
    /// The pipe directory the probe looked in.
    pub directory: OsText,
    /// `<directory>/control`.
    pub path: OsText,
    /// The length of `path` in bytes (`AF_UNIX` allows at most 107).
    pub path_len: usize,
    /// `lstat(path)`: the entry itself.
    pub lstat: FileFacts,
    /// `stat(path)`: what a symlink points at.
    pub stat: FileFacts,
    /// Whether the probing user can use it.
    pub access: AccessFacts,
}

/// The kind of a filesystem entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A Unix domain socket.
    Socket,
    /// A named pipe.
    Fifo,
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (only `lstat` reports this).
    Symlink,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// Nothing there (ENOENT).
    Missing,
    /// The call failed for another reason; see `error`.
    Unknown,
}

/// One `stat`/`lstat` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FileFacts {
    /// The entry's kind.
    pub kind: FileKind,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: Option<u32>,
    /// Owner UID.
    pub uid: Option<u32>,
    /// Owner GID.
    pub gid: Option<u32>,
    /// The OS error, when the call failed.
    pub error: Option<String>,
}

/// Access checks made as the probing user (effective IDs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AccessFacts {
    /// The probing user's effective UID.
    pub uid: Option<u32>,
    /// Whether every directory from `/` to the pipe directory can be searched.
    pub directory_traversable: Option<bool>,
    /// Whether the control pipe can be read and written (`access(R_OK|W_OK)`).
    pub read_write: Option<bool>,
    /// The OS error of the access check, when it failed for a reason other than denial.
    pub error: Option<String>,
}

/// The control daemon's pid file, read with a small cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PidFileFacts {
    /// `<pipe directory>/nvidia-cuda-mps-control.pid`.
    pub path: OsText,
    /// What the file held (at most a few dozen bytes), when it could be read.
    pub contents: Option<CapturedText>,
    /// The OS error, when it could not be read (ENOENT on 470/535 drivers).
    pub error: Option<String>,
    /// Whether the PID in `contents` names a live process (`None`: not a PID or not checked).
    pub pid_alive: Option<bool>,
    /// That process's name from `/proc/<pid>/comm`, when readable.
    pub process_name: Option<String>,
}

/// Reads a PID the way the control daemon writes it: decimal, surrounding whitespace allowed.
pub fn parse_pid(text: &str) -> Option<i64> {
    let trimmed = text.trim();
    if trimmed.is_empty() || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    trimmed.parse::<i64>().ok().filter(|pid| *pid > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::QueryOutcome;

    #[test]
    fn unknown_fields_are_refused_at_every_depth() {
        let bytes: OsText = serde_json::from_str(r#"{"non_utf8_bytes": [255]}"#).unwrap();
        assert_eq!(bytes.as_bytes(), [255]);
        assert!(serde_json::from_str::<OsText>(r#"{"non_utf8_bytes": [255], "x": 1}"#).is_err());
        let outcome = r#"{"status": "spawn_failed", "error": "x"}"#;
        assert!(serde_json::from_str::<QueryOutcome>(outcome).is_ok());
        let extra = r#"{"status": "spawn_failed", "error": "x", "retried": true}"#;
        let err = serde_json::from_str::<QueryOutcome>(extra).unwrap_err();
        assert!(err.to_string().contains("retried"), "{err}");
        let caller = r#"{"uid": 0, "euid": 0, "gid": 0}"#;
        assert!(serde_json::from_str::<CallerFacts>(caller).is_err());
    }
}
