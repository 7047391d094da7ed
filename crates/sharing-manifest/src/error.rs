//! The error every file operation of this crate reports, below the modules that read, lock
//! and write files (`file.rs` and `lock.rs` used to import each other for it).

use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use crate::json::MANIFEST_KEY;

/// A path as every message here names it: quoted, with newlines, control characters and bytes
/// that are not UTF-8 escaped ([`sharing_policy::quote_name`]), so a hostile file name can
/// neither break a one-line message nor forge another.
pub fn quote_path(path: &Path) -> String {
    sharing_policy::quote_name(path.as_os_str().as_bytes())
}

/// Why a JSON file could not be read, or evidence could not be recorded into a manifest.
///
/// When [`crate::record_in_manifest`] returns any of these, the manifest file is byte-for-byte
/// what it was before the call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The path is a symbolic link; replacing it would replace the link, not its target.
    #[error(
        "{}: is a symbolic link{}; pass the path of the file itself",
        quote_path(path),
        target.as_ref().map(|target| format!(" to {}", quote_path(target))).unwrap_or_default()
    )]
    Symlink {
        /// The path given.
        path: PathBuf,
        /// Where the link points, when it could be read.
        target: Option<PathBuf>,
    },
    /// The path is a directory, FIFO, socket or device.
    #[error("{}: is {kind}, not a regular file", quote_path(path))]
    NotRegularFile {
        /// The path given.
        path: PathBuf,
        /// "a directory", "a FIFO", …
        kind: &'static str,
    },
    /// The file is larger than [`crate::MAX_FILE_BYTES`].
    #[error(
        "{}: is {size} bytes, over the {limit}-byte limit for a JSON file here",
        quote_path(path)
    )]
    TooLarge {
        /// The path given.
        path: PathBuf,
        /// Its size (at least; the file may still be growing).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The probing user cannot already write the manifest, so it is not replaced either.
    #[error("{}: not writable by this user ({reason})", quote_path(path))]
    NotWritable {
        /// The path given.
        path: PathBuf,
        /// What the permission check said.
        reason: String,
    },
    /// The file is not JSON (or not UTF-8).
    #[error("{}: not valid JSON: {message}", quote_path(path))]
    NotJson {
        /// The path given.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// The manifest is JSON but not an object, so there is no place for a key in it.
    #[error(
        "{}: holds {found}, not a JSON object; evidence is recorded only into an object under `{MANIFEST_KEY}`",
        quote_path(path)
    )]
    NotAnObject {
        /// The path given.
        path: PathBuf,
        /// "an array", "a string", …
        found: &'static str,
    },
    /// The manifest's lock file (`<manifest>.lock`) could not be opened or locked.
    #[error(
        "{}: cannot {action} the manifest's lock file: {error}",
        quote_path(path)
    )]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The step: "create", "open", "lock", …
        action: &'static str,
        /// The OS error.
        error: io::Error,
    },
    /// Another writer held the manifest's lock for longer than the wait.
    #[error(
        "{}: another writer held the manifest's lock for more than {} s; try again once it is released",
        quote_path(lock),
        waited.as_secs_f64()
    )]
    LockTimeout {
        /// The lock file.
        lock: PathBuf,
        /// How long this writer waited.
        waited: std::time::Duration,
    },
    /// Any other I/O failure, with the step that failed.
    #[error("{}: cannot {action}: {error}", quote_path(path))]
    Io {
        /// The path the step worked on.
        path: PathBuf,
        /// The step: "read", "create a temporary file there", …
        action: &'static str,
        /// The OS error.
        error: io::Error,
    },
}

impl ManifestError {
    pub(crate) fn lock(path: &Path, action: &'static str, error: io::Error) -> Self {
        Self::Lock {
            path: path.to_owned(),
            action,
            error,
        }
    }

    pub(crate) fn io(path: &Path, action: &'static str, error: io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            action,
            error,
        }
    }
}
