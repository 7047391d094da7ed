//! The daemon's log as a snapshot records it: where it is, and each file's tail, raw. The
//! record types only, so that the snapshot (`facts.rs`) does not import what reads them
//! (`daemon_log.rs`).

use serde::{Deserialize, Serialize};

use crate::OsText;

/// Where a daemon started without `CUDA_MPS_LOG_DIRECTORY` writes its log.
pub const DEFAULT_LOG_DIRECTORY: &str = "/var/log/nvidia-mps";

/// The most bytes read from the end of each log file: one bounded read.
pub const LOG_TAIL_CAP: u64 = 64 * 1024;

/// The log files read, in order: the daemon's own, then the servers' (absent on some hosts).
pub const LOG_FILES: [&str; 2] = ["control.log", "server.log"];

/// The daemon's log as `mps-host` read it, raw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DaemonLogFacts {
    /// The log directory read: the proven daemon's `CUDA_MPS_LOG_DIRECTORY`, else
    /// [`DEFAULT_LOG_DIRECTORY`]. Absent when it could not be decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<OsText>,
    /// Why the directory could not be decided (the daemon's process is not proven, or its
    /// environment could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
    /// Each file of [`LOG_FILES`] read (none when the directory is unknown).
    #[serde(default)]
    pub files: Vec<LogFileFacts>,
}

/// One log file's tail, raw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LogFileFacts {
    /// `<directory>/<name>`.
    pub path: OsText,
    /// The bytes read (at most [`LOG_TAIL_CAP`], from the end), as lossy UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the read started after the file's first byte (its first line may be partial).
    #[serde(default)]
    pub cut_at_start: bool,
    /// The file's size when it was opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Why it was not read (the OS error, or the kind of file found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The OS error number, when the open failed (2: no such file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errno: Option<i32>,
}
