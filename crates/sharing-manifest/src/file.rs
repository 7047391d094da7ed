//! Reading JSON files with a cap, and recording evidence into a manifest file atomically.

use std::fs::{self, Metadata};
use std::io::{self, Read as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};
use sharing_policy::Evidence;

use crate::error::ManifestError;
use crate::json::{
    EVIDENCE_SCHEMA, MANIFEST_KEY, MANIFEST_SCHEMA_KEY, MANIFEST_WRITER, MANIFEST_WRITER_KEY,
    evidence_to_json, kind_of,
};
use crate::lock::{LOCK_WAIT, ManifestLock};
use crate::write::{checked_target, ensure_regular, replace};

/// The largest file this crate reads (16 MiB): a manifest or snapshot is kilobytes, so a
/// larger file is a wrong path, not a bigger manifest.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

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
///   file keeps its permission bits when this user owns it (never a set-ID or sticky bit;
///   another user's file gets its bits intersected with the new-file mode, so it is never
///   widened, see [`crate::write_file`]) and, when the OS allows it, its owner and group.
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
    checked_target(path)?;
    let _lock = ManifestLock::acquire(path, wait)?;
    update_locked(path, edit)
}

/// The read-modify-write itself, with the manifest's lock held.
fn update_locked(path: &Path, edit: &Edit<'_>) -> Result<(), ManifestError> {
    let Some(_) = checked_target(path)? else {
        let mut document = Map::new();
        edit(&mut document)?;
        return write_document(path, &document, None);
    };
    let (value, meta) = read_capped_json(path)?;
    let Value::Object(mut document) = value else {
        return Err(ManifestError::NotAnObject {
            path: path.to_owned(),
            found: kind_of(&value),
        });
    };
    edit(&mut document)?;
    write_document(path, &document, Some(&meta))
}

/// The document as pretty JSON with a trailing newline, through the crate's one atomic writer
/// (`original`: the manifest being replaced; `None`: create, never overwrite).
fn write_document(
    path: &Path,
    document: &Map<String, Value>,
    original: Option<&Metadata>,
) -> Result<(), ManifestError> {
    let mut bytes = serde_json::to_vec_pretty(document).map_err(|error| {
        ManifestError::io(path, "serialise the new content", io::Error::other(error))
    })?;
    bytes.push(b'\n');
    replace(path, &bytes, original, 0o666)
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

#[cfg(test)]
mod tests;
