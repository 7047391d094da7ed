//! Schema v2's process facts: who asked, who owns the listed servers, and the control daemon's
//! own process. Raw, as `mps-host` cut them from `/proc`; the validator interprets them
//! (`served`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::OsText;

/// What `/proc/<pid>/comm` shows for the control daemon (and its servers): the kernel keeps
/// 15 bytes of `nvidia-cuda-mps-control`. A `/proc` scan records every process of this name.
pub const DAEMON_COMM: &str = "nvidia-cuda-mps";

/// The variables of the daemon's `/proc/<pid>/environ` that are recorded (raw): its GPU scope,
/// its pipe directory, its protocol, the order its index mask is read in, and its log
/// directory.
pub const DAEMON_ENVIRON_VARS: [&str; 5] = [
    "CUDA_VISIBLE_DEVICES",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_PROTOCOL_VERSION",
    "CUDA_DEVICE_ORDER",
    "CUDA_MPS_LOG_DIRECTORY",
];

/// The probing process's user IDs (`getuid`, `geteuid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CallerFacts {
    /// The real UID.
    pub uid: u32,
    /// The effective UID (what the daemon sees on its socket, and what a server would run as).
    pub euid: u32,
    /// The effective capability set (`CapEff:` of `/proc/self/status`), when it was read
    /// (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_eff: Option<u64>,
}

/// `CAP_SYS_PTRACE`'s bit in a capability set (`linux/capability.h`).
pub const CAP_SYS_PTRACE_BIT: u32 = 19;

/// One process as `/proc/<pid>` showed it, raw. A file that could not be read has its OS error
/// in `errors`, keyed by the file's name (`status`, `comm`, `cmdline`, `environ`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProcessFacts {
    /// The PID.
    pub pid: i64,
    /// The text after `Uid:` in `/proc/<pid>/status` (real, effective, saved and filesystem
    /// UIDs, tab-separated), uncut.
    pub status_uid: Option<String>,
    /// `/proc/<pid>/comm` without its newline.
    pub comm: Option<String>,
    /// `/proc/<pid>/cmdline`, split at its NUL bytes (recorded for daemon candidates and, in
    /// newer snapshots, listed servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<Vec<OsText>>,
    /// The [`DAEMON_ENVIRON_VARS`] that `/proc/<pid>/environ` sets (an absent key is unset;
    /// recorded for daemon candidates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environ: Option<BTreeMap<String, OsText>>,
    /// The OS error of each file that could not be read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
    /// `readlink /proc/<pid>/ns/pid` (`pid:[4026531836]`), raw: its PID namespace (absent
    /// in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_namespace: Option<String>,
    /// The text after `NSpid:` in `/proc/<pid>/status`: its PID in each namespace from the
    /// observer's `/proc` down to its own, raw (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nspid: Option<String>,
}

impl ProcessFacts {
    /// A process of which nothing has been read yet.
    pub fn new(pid: i64) -> Self {
        Self {
            pid,
            status_uid: None,
            comm: None,
            cmdline: None,
            environ: None,
            errors: BTreeMap::new(),
            pid_namespace: None,
            nspid: None,
        }
    }
}

/// How the control daemon's process was looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DaemonSearchMethod {
    /// The pid file named a live control daemon (550+ drivers): only that PID was read.
    PidFile,
    /// No pid file identified it (470/535 write none): `/proc` was scanned for processes named
    /// [`DAEMON_COMM`].
    ProcScan,
    /// The kernel's lock table named the process holding the write lock on
    /// `<pipe directory>/control_lock`: only that PID was read.
    Lock,
}

/// The search for the control daemon's process, and every candidate it recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DaemonSearch {
    /// The `/proc` directory that was read.
    pub proc_root: OsText,
    /// Pid file or scan.
    pub method: DaemonSearchMethod,
    /// How many entries of `proc_root` the scan looked at (0 for the pid file).
    pub scanned: u64,
    /// The most entries the scan may look at.
    pub limit: u64,
    /// Why the scan stopped before the end of `proc_root` (`limit`, `deadline`), if it did.
    pub stopped: Option<String>,
    /// The OS error of reading `proc_root` itself, when it could not be listed.
    pub error: Option<String>,
    /// The lock holder's process, the pid file's, or every scanned process named
    /// [`DAEMON_COMM`] (capped).
    pub processes: Vec<ProcessFacts>,
    /// The control daemon's lock file and the kernel's lock records on it (absent in
    /// snapshots recorded before the daemon was identified by its lock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<DaemonLockFacts>,
}

/// `<pipe directory>/control_lock`, on which the control daemon holds a POSIX write lock for
/// its whole life (docs/mps-daemon.md F10), and what the kernel's `/proc/locks` says of it.
/// Raw: which process the lock proves is the validator's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DaemonLockFacts {
    /// `<pipe directory>/control_lock`.
    pub path: OsText,
    /// `lstat` of it (never followed), when it succeeded.
    pub file: Option<LockFileFacts>,
    /// The OS error of `lstat`, when it failed.
    pub file_error: Option<String>,
    /// The owner of the pipe directory (`lstat`), when it could be read.
    pub directory_uid: Option<u32>,
    /// The lines of `<proc>/locks` that name the file's inode number, raw, in order (capped);
    /// `None` when the file was not read.
    pub locks: Option<Vec<String>>,
    /// Why `<proc>/locks` was not read, or not read to its end.
    pub locks_error: Option<String>,
    /// What `fcntl(F_GETLK)` on the lock file answered for a read lock of the whole file: the
    /// write lock that would block it, if any, with its holder's PID in the observer's own PID
    /// namespace. Asked only where the `/proc` read is that namespace's (its `self` link names
    /// the observer); `None` when not asked (and in snapshots recorded before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<LockTestFacts>,
    /// Why the lock file could not be opened or tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_error: Option<String>,
}

/// The answer of `fcntl(F_GETLK)` on the lock file (raw, as the kernel gave it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LockTestFacts {
    /// The blocking lock's type: `write`, `read`, or `none` (nothing would block a read lock).
    pub lock: String,
    /// Its first byte.
    pub start: u64,
    /// Its length in bytes; 0 means to the end of the file, however long it grows.
    pub length: u64,
    /// Its holder's PID in the observer's PID namespace; 0 when the holder is not visible
    /// there (another PID namespace) or the lock belongs to an open file description.
    pub pid: i64,
}

/// What `lstat` says of the lock file: its kind and identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LockFileFacts {
    /// `file`, `directory`, `symlink`, `fifo`, `socket`, `char_device`, `block_device`.
    pub kind: String,
    /// The major number of the device holding it (`/proc/locks` prints it in hex).
    pub dev_major: u32,
    /// The minor number of that device.
    pub dev_minor: u32,
    /// Its inode number.
    pub ino: u64,
    /// Its owner.
    pub uid: u32,
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
    /// The [`CLIENT_ENVIRON_VARS`](crate::CLIENT_ENVIRON_VARS) its `/proc/<pid>/environ` sets (an absent key is unset;
    /// `None` when the file could not be read: another user's, without root).
    pub environ: Option<BTreeMap<String, OsText>>,
    /// The OS error of each file that could not be read (`entry`, `status`, `environ`, `stat`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
    /// Its start time: field 22 of `/proc/<pid>/stat` (clock ticks after boot), read in this
    /// round (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
    /// The start time pinned at the first observation that read one (`--wait-ms` rounds): a
    /// later round that reads another start time saw another process that reused the PID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_start_time: Option<u64>,
    /// `readlink /proc/<pid>/ns/pid`, raw (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_namespace: Option<String>,
    /// The text after `NSpid:` in `/proc/<pid>/status`, raw (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nspid: Option<String>,
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
            start_time: None,
            first_start_time: None,
            pid_namespace: None,
            nspid: None,
        }
    }
}
