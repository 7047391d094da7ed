//! Raw facts of whether the job's user can reach the pipe directory (notes row
//! 6): the MPS server runs as the client's UID and must traverse every directory above
//! `<pipe>` and `<log>`, write the `log` FIFO and connect to `control`. Recorded by mps-host
//! (`lstat`, the POSIX ACL xattr, the user's groups, `SELinux`'s mode), judged in
//! [`crate::pipe_reach`] and `assess::reach`.

use serde::{Deserialize, Serialize};

use crate::OsText;

/// The name of the FIFO in the pipe directory that a server writes its log lines to.
pub const LOG_FIFO_NAME: &str = "log";

/// The extended attribute that holds a file's POSIX access ACL.
pub const POSIX_ACL_XATTR: &str = "system.posix_acl_access";

/// Where `SELinux` says whether it enforces (`1`) or only logs (`0`); absent without `SELinux`.
pub const SELINUX_ENFORCE_PATH: &str = "/sys/fs/selinux/enforce";

/// What `lstat` says a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A directory.
    Directory,
    /// A symbolic link (not followed).
    Symlink,
    /// A Unix socket.
    Socket,
    /// A FIFO.
    Fifo,
    /// A regular file.
    Regular,
    /// Anything else (a device).
    Other,
    /// `lstat` said `ENOENT`.
    Missing,
}

/// One path as `lstat` showed it, raw: its type, permission bits (`st_mode & 0o7777`),
/// owner and group, and whether it carries a POSIX access ACL. A field is `None` when it
/// could not be read; `error` says why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PathEntry {
    /// The path looked at.
    pub path: OsText,
    /// Its type; `None` when `lstat` failed with another error than `ENOENT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<EntryKind>,
    /// `st_mode & 0o7777`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// `st_uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// `st_gid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
    /// Whether `system.posix_acl_access` is among its extended attributes (`llistxattr`, no
    /// link followed); `Some(false)` also when the filesystem supports no extended
    /// attributes; `None` when that could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<bool>,
    /// The OS error of a call that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The group IDs of the user the request is judged for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UserGroups {
    /// The user's UID.
    pub uid: u32,
    /// The primary GID.
    pub gid: u32,
    /// The supplementary GIDs.
    pub groups: Vec<u32>,
    /// Where they were read: `/proc/self/status` (the probing process's own: the filesystem
    /// GID of `Gid:` and `Groups:`) or `/etc/passwd,/etc/group` (for `--as-user`).
    pub source: String,
}

/// What the server of the judged user must reach, raw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PipeAccessFacts {
    /// Each path component of the effective pipe directory, from `/` down to the directory
    /// itself ([`path_prefixes`]).
    pub pipe_path: Vec<PathEntry>,
    /// `<pipe>/control`.
    pub control: PathEntry,
    /// `<pipe>/log`, the FIFO the servers write their log lines to.
    pub log_fifo: PathEntry,
    /// Each path component of the proven daemon's log directory, from `/` down to the
    /// directory itself; `None` when it is unknown (`log_unknown` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<Vec<PathEntry>>,
    /// Why the log directory is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_unknown: Option<String>,
    /// The judged user's groups; `None` when they could not be read (`user_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserGroups>,
    /// Why the user's groups could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_error: Option<String>,
    /// The first bytes of [`SELINUX_ENFORCE_PATH`], raw; `None` when it does not exist (no
    /// `SELinux`) or could not be read (`selinux_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selinux_enforce: Option<String>,
    /// Why [`SELINUX_ENFORCE_PATH`] could not be read (not set when it does not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selinux_error: Option<String>,
}

/// The paths to `lstat`, from `/` down to `path` itself: `/`, `/a`, `/a/b` for `/a/b`.
/// Empty and repeated `/` are skipped; `.` and `..` stay literal components (the kernel
/// resolves them the same way). A relative path yields no prefixes: it is resolved against the
/// daemon's working directory, which is not known here.
///
/// ```
/// use sharing_policy::{path_prefixes, OsText};
///
/// let prefixes = path_prefixes(&OsText::from("/tmp//nvidia-mps/"));
/// let shown: Vec<String> = prefixes.iter().map(OsText::to_string_lossy).collect();
/// assert_eq!(shown, ["/", "/tmp", "/tmp/nvidia-mps"]);
/// assert!(path_prefixes(&OsText::from("pipe")).is_empty());
/// ```
pub fn path_prefixes(path: &OsText) -> Vec<OsText> {
    let bytes = path.as_bytes();
    if !bytes.starts_with(b"/") {
        return Vec::new();
    }
    let mut prefixes = vec![OsText::from("/")];
    let mut current: Vec<u8> = Vec::with_capacity(bytes.len());
    for part in bytes
        .split(|byte| *byte == b'/')
        .filter(|part| !part.is_empty())
    {
        current.push(b'/');
        current.extend_from_slice(part);
        prefixes.push(OsText::from_bytes(current.clone()));
    }
    prefixes
}
