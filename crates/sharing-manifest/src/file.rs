//! Reading JSON files with a cap, and recording evidence into a manifest file atomically.

use std::fs::{self, File, Metadata, Permissions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{
    FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use sharing_policy::Evidence;

use crate::json::{
    EVIDENCE_SCHEMA, MANIFEST_KEY, MANIFEST_SCHEMA_KEY, MANIFEST_WRITER, MANIFEST_WRITER_KEY,
    evidence_to_json, kind_of,
};
use crate::lock::{LOCK_WAIT, ManifestLock};

/// A path as every message here names it: quoted, with newlines, control characters and bytes
/// that are not UTF-8 escaped ([`sharing_policy::quote_name`]), so a hostile file name can
/// neither break a one-line message nor forge another.
pub fn quote_path(path: &Path) -> String {
    sharing_policy::quote_name(path.as_os_str().as_bytes())
}

/// The largest file this crate reads (16 MiB): a manifest or snapshot is kilobytes, so a
/// larger file is a wrong path, not a bigger manifest.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Why a JSON file could not be read, or evidence could not be recorded into a manifest.
///
/// When [`record_in_manifest`] returns any of these, the manifest file is byte-for-byte
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
    /// The file is larger than [`MAX_FILE_BYTES`].
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

    fn io(path: &Path, action: &'static str, error: io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            action,
            error,
        }
    }
}

/// Reads a JSON file of at most [`MAX_FILE_BYTES`].
///
/// Symbolic links are followed (reading through one is harmless). A FIFO, socket, device
/// or directory is refused before it is opened, so the call never blocks on a pipe.
///
/// # Errors
/// [`ManifestError::NotRegularFile`], [`ManifestError::TooLarge`], [`ManifestError::NotJson`]
/// or [`ManifestError::Io`] (missing file, no permission, …).
pub fn read_json_file(path: &Path) -> Result<Value, ManifestError> {
    let meta = fs::metadata(path).map_err(|error| ManifestError::io(path, "read", error))?;
    ensure_regular(path, &meta)?;
    let (value, _) = read_capped_json(path)?;
    Ok(value)
}

/// Records `evidence` in the manifest at `path` under `cuda_process_sharing`, and its version
/// ([`crate::EVIDENCE_SCHEMA`]) beside it under `cuda_process_sharing_schema`, then the release
/// that wrote it ([`crate::MANIFEST_WRITER`]) under `cuda_process_sharing_writer`.
///
/// - An existing manifest must be a regular file (not a symbolic link) holding a JSON object
///   of at most [`MAX_FILE_BYTES`] that this user can already write. Every other key keeps its
///   value and its position; an existing `cuda_process_sharing` is replaced in place. The
///   file keeps its permission bits (and, when the OS allows it, its owner and group).
/// - A missing manifest is created as `{"cuda_process_sharing": …, "cuda_process_sharing_schema": …,
///   "cuda_process_sharing_writer": …}` with the usual
///   permissions for a new file (0666 less the umask). Its directory must exist.
///
/// The new content is written to a temporary file in the same directory, flushed to disk,
/// then renamed over the manifest, and the directory is flushed: a crash leaves the old
/// manifest or the new one, never half of one. The output is pretty-printed JSON (two-space
/// indent, trailing newline), so the layout of the old file is not kept, only its content.
/// Numbers keep their value as an `f64`/`i64`/`u64` holds it; an integer beyond 64 bits is
/// rewritten as a float.
///
/// The whole read-modify-write holds `flock(LOCK_EX)` on `<manifest>.lock` (created with mode
/// 0644 when missing, never removed), so writers that follow the same protocol never lose each
/// other's keys; the lock is waited for at most [`LOCK_WAIT`].
///
/// # Errors
/// Any [`ManifestError`] ([`ManifestError::LockTimeout`] when the lock stayed taken); on every
/// error the manifest is left byte-for-byte untouched.
pub fn record_in_manifest(path: &Path, evidence: &Evidence) -> Result<(), ManifestError> {
    record_in_manifest_within(path, evidence, LOCK_WAIT)
}

/// [`record_in_manifest`], waiting at most `wait` for the manifest's lock.
///
/// # Errors
/// As [`record_in_manifest`].
pub fn record_in_manifest_within(
    path: &Path,
    evidence: &Evidence,
    wait: Duration,
) -> Result<(), ManifestError> {
    update_manifest(path, wait, &|document| {
        insert_evidence(document, evidence);
        Ok(())
    })
}

/// A change to a manifest's top-level object.
pub(crate) type Edit<'a> = dyn Fn(&mut Map<String, Value>) -> Result<(), ManifestError> + 'a;

/// The locked read-modify-write of a manifest that [`record_in_manifest`] and
/// [`crate::record_attestation`] share: `edit` changes the document (a missing manifest is an
/// empty one), which is then written atomically. On any error the file is left untouched.
pub(crate) fn update_manifest(
    path: &Path,
    wait: Duration,
    edit: &Edit<'_>,
) -> Result<(), ManifestError> {
    // Refuse what is refused anyway before creating a lock file beside it; then check again
    // under the lock, since another writer may have changed the file meanwhile.
    refuse_early(path)?;
    let _lock = ManifestLock::acquire(path, wait)?;
    update_locked(path, edit)
}

/// The checks of [`update_locked`] that need no lock: an existing path must be a writable
/// regular file, and a missing one's directory must exist.
fn refuse_early(path: &Path) -> Result<(), ManifestError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ManifestError::Symlink {
            path: path.to_owned(),
            target: fs::read_link(path).ok(),
        }),
        Ok(meta) => {
            ensure_regular(path, &meta)?;
            ensure_writable(path, &meta)
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let directory = directory_of(path);
            match fs::metadata(directory) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err(ManifestError::io(
                    directory,
                    "create a temporary file there",
                    io::Error::from(io::ErrorKind::NotADirectory),
                )),
                Err(error) => Err(ManifestError::io(
                    directory,
                    "create a temporary file there",
                    error,
                )),
            }
        }
        Err(error) => Err(ManifestError::io(path, "inspect", error)),
    }
}

/// The read-modify-write itself, with the manifest's lock held.
fn update_locked(path: &Path, edit: &Edit<'_>) -> Result<(), ManifestError> {
    let existing = match fs::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(ManifestError::io(path, "inspect", error)),
    };
    let Some(link_meta) = existing else {
        let mut document = Map::new();
        edit(&mut document)?;
        return write_atomically(path, &document, None);
    };
    if link_meta.file_type().is_symlink() {
        return Err(ManifestError::Symlink {
            path: path.to_owned(),
            target: fs::read_link(path).ok(),
        });
    }
    ensure_regular(path, &link_meta)?;
    ensure_writable(path, &link_meta)?;
    let (value, meta) = read_capped_json(path)?;
    let Value::Object(mut document) = value else {
        return Err(ManifestError::NotAnObject {
            path: path.to_owned(),
            found: kind_of(&value),
        });
    };
    edit(&mut document)?;
    write_atomically(path, &document, Some(&meta))
}

/// The evidence under [`MANIFEST_KEY`] (with `preserve_order`, an existing key keeps its
/// position), its version under [`MANIFEST_SCHEMA_KEY`] right after it, then the release that
/// wrote it under [`MANIFEST_WRITER_KEY`].
fn insert_evidence(document: &mut Map<String, Value>, evidence: &Evidence) {
    document.insert(MANIFEST_KEY.to_owned(), evidence_to_json(evidence));
    document.shift_remove(MANIFEST_SCHEMA_KEY);
    document.shift_remove(MANIFEST_WRITER_KEY);
    let beside = document
        .keys()
        .position(|key| key == MANIFEST_KEY)
        .map_or(document.len(), |index| index + 1);
    document.shift_insert(
        beside,
        MANIFEST_SCHEMA_KEY.to_owned(),
        Value::from(EVIDENCE_SCHEMA),
    );
    document.shift_insert(
        beside + 1,
        MANIFEST_WRITER_KEY.to_owned(),
        Value::from(MANIFEST_WRITER),
    );
}

fn ensure_regular(path: &Path, meta: &Metadata) -> Result<(), ManifestError> {
    let file_type = meta.file_type();
    let kind = if file_type.is_file() {
        return Ok(());
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else {
        "an unknown kind of file"
    };
    Err(ManifestError::NotRegularFile {
        path: path.to_owned(),
        kind,
    })
}

fn ensure_writable(path: &Path, meta: &Metadata) -> Result<(), ManifestError> {
    // A rename would replace even a read-only file (only the directory's permissions count),
    // so honour the file's own permissions explicitly. Root passes `access`, hence the mode check.
    if meta.permissions().readonly() {
        return Err(ManifestError::NotWritable {
            path: path.to_owned(),
            reason: format!(
                "mode {:04o} grants no write permission",
                meta.mode() & 0o7777
            ),
        });
    }
    rustix::fs::accessat(
        rustix::fs::CWD,
        path,
        rustix::fs::Access::WRITE_OK,
        rustix::fs::AtFlags::EACCESS,
    )
    .map_err(|errno| ManifestError::NotWritable {
        path: path.to_owned(),
        reason: io::Error::from(errno).to_string(),
    })
}

/// Opens without blocking (a FIFO swapped in after the type check cannot hang the read),
/// checks the open file's type and size, and parses at most the cap.
fn read_capped_json(path: &Path) -> Result<(Value, Metadata), ManifestError> {
    let nonblock = i32::try_from(rustix::fs::OFlags::NONBLOCK.bits()).unwrap_or(0);
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nonblock)
        .open(path)
        .map_err(|error| ManifestError::io(path, "open", error))?;
    let meta = file
        .metadata()
        .map_err(|error| ManifestError::io(path, "inspect", error))?;
    ensure_regular(path, &meta)?;
    let too_large = |size| ManifestError::TooLarge {
        path: path.to_owned(),
        size,
        limit: MAX_FILE_BYTES,
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| ManifestError::io(path, "read", error))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_FILE_BYTES {
        return Err(too_large(read));
    }
    let value = serde_json::from_slice(&bytes).map_err(|error| ManifestError::NotJson {
        path: path.to_owned(),
        message: error.to_string(),
    })?;
    Ok((value, meta))
}

/// The directory `path` is in (`.` for a bare name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Temp file beside `path`, write, fsync, rename over `path`, fsync the directory.
/// `original` is the manifest being replaced (`None`: create, never overwrite).
fn write_atomically(
    path: &Path,
    document: &Map<String, Value>,
    original: Option<&Metadata>,
) -> Result<(), ManifestError> {
    let mut bytes = serde_json::to_vec_pretty(document).map_err(|error| {
        ManifestError::io(path, "serialise the new content", io::Error::other(error))
    })?;
    bytes.push(b'\n');

    let directory = directory_of(path);
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    let mode = original.map_or(0o666, |meta| meta.mode() & 0o7777);
    let mut temp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(directory)
        .map_err(|error| ManifestError::io(directory, "create a temporary file there", error))?;
    if let Some(meta) = original {
        // The umask may have narrowed the mode at creation: set it exactly.
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))
            .map_err(|error| ManifestError::io(path, "set the new copy's permissions", error))?;
        let ours = temp
            .as_file()
            .metadata()
            .map_err(|error| ManifestError::io(path, "inspect the new copy", error))?;
        if (ours.uid(), ours.gid()) != (meta.uid(), meta.gid()) {
            // Best effort: only root (or the owner, for the group) may do this. Failing
            // leaves the new manifest owned by this user, which could write the old one.
            let _ = std::os::unix::fs::fchown(temp.as_file(), Some(meta.uid()), Some(meta.gid()));
            // fchown clears set-id bits: restore the exact mode once more.
            let _ = temp.as_file().set_permissions(Permissions::from_mode(mode));
        }
    }
    temp.write_all(&bytes)
        .map_err(|error| ManifestError::io(path, "write the new copy", error))?;
    temp.as_file()
        .sync_all()
        .map_err(|error| ManifestError::io(path, "flush the new copy", error))?;

    if original.is_some() {
        temp.persist(path)
            .map_err(|err| ManifestError::io(path, "replace", err.error))?;
    } else {
        temp.persist_noclobber(path)
            .map_err(|err| ManifestError::io(path, "create", err.error))?;
    }
    File::open(directory)
        .and_then(|dir| dir.sync_all())
        .map_err(|error| ManifestError::io(directory, "flush the directory", error))
}

#[cfg(test)]
mod tests;
