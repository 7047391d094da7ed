//! The one atomic writer. Every file the tools write goes through here: run
//! manifests, `capture --output`, `test --junit`, `probe --prom-textfile`, `attest
//! --save-snapshot`. So one mode rule, one refusal of targets that are not regular files and
//! one error shape hold for all of them, and a later fix lands everywhere at once.
//!
//! The mode rule, because root often writes into directories other users can write:
//! - no file is ever created with the set-user-ID, set-group-ID or sticky bit;
//! - a replaced file keeps its permission bits when its owner is the writing user;
//! - a replaced file of another user gets its old permission bits intersected with the new-file
//!   rule (0666, or the caller's mode, less the umask): never wider than either. Keeping the
//!   bits of another user's file would hand root's file to that user (a `06777` file planted at
//!   the path would come back set-ID and world-writable: it gets 0644), and the new-file rule
//!   alone would widen a private file (root writing `nobody`'s 0640 manifest must not make it
//!   readable by everyone: it stays 0640, and 0600 stays 0600).

use std::fmt;
use std::fs::{self, File, Metadata, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use crate::error::ManifestError;

/// The permission bits a file may carry: read, write and execute for owner, group and others;
/// never set-user-ID, set-group-ID or sticky.
const PERMISSION_BITS: u32 = 0o777;

/// How [`write_file`] writes: whether it creates missing parent directories, and the mode of
/// a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    create_parents: bool,
    new_file_mode: u32,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteOptions {
    /// A missing directory is an error; a new file gets 0666 less the umask.
    pub const fn new() -> Self {
        Self {
            create_parents: false,
            new_file_mode: 0o666,
        }
    }

    /// Whether missing parent directories are created first (0777 less the umask, as
    /// `mkdir -p` does). CI users expect `--junit reports/x.xml` to work on a fresh checkout.
    #[must_use]
    pub const fn create_parents(mut self, create: bool) -> Self {
        self.create_parents = create;
        self
    }

    /// The mode a new file is created with, before the umask. Only the permission bits count:
    /// set-user-ID, set-group-ID and sticky bits are dropped.
    #[must_use]
    pub const fn new_file_mode(mut self, mode: u32) -> Self {
        self.new_file_mode = mode & PERMISSION_BITS;
        self
    }
}

/// What a failed write left at the path: the part of every write error that tells an operator
/// whether an old file (stale metrics, an old report) is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileState {
    /// Something was at the path before; it is still there, byte for byte.
    Unchanged,
    /// Nothing was at the path; nothing is there now.
    NotCreated,
}

impl FileState {
    /// What a failed write will leave at `path`, judged before writing: whatever is there
    /// (a file, a link, a FIFO) stays as it is, and a missing path stays missing.
    pub fn before_writing(path: &Path) -> Self {
        if path.symlink_metadata().is_ok() {
            Self::Unchanged
        } else {
            Self::NotCreated
        }
    }
}

impl fmt::Display for FileState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unchanged => "it was left unchanged",
            Self::NotCreated => "no file was created",
        })
    }
}

/// A failed [`write_file`]: what was asked, what failed, and the file's state.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {what}: {failure}; {state}")]
#[non_exhaustive]
pub struct WriteError {
    /// What the caller was writing, as it names it ("the snapshot to --output", …).
    pub what: String,
    /// What failed, naming the path.
    pub failure: ManifestError,
    /// What is at the path now.
    pub state: FileState,
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, written and
/// flushed to disk, then renamed over `path`, so a reader sees the old file or the new one,
/// never half of one.
///
/// - An existing `path` must be a regular file (not a symbolic link, directory, FIFO, socket
///   or device) that this user can already write; anything else is refused untouched.
/// - The mode follows the rule at the top of this module; when the OS allows it, a replaced
///   file's owner and group are kept.
/// - `what` names the file in the error ("the snapshot to --output").
///
/// # Errors
/// A [`WriteError`]; on every error the path is as it was ([`WriteError::state`]), though
/// with [`WriteOptions::create_parents`] a directory may have been created.
pub fn write_file(
    path: &Path,
    bytes: &[u8],
    what: &str,
    options: WriteOptions,
) -> Result<(), WriteError> {
    let state = FileState::before_writing(path);
    let write = || {
        if options.create_parents {
            let directory = directory_of(path);
            fs::create_dir_all(directory)
                .map_err(|error| ManifestError::io(directory, "create the directory", error))?;
        }
        let existing = checked_target(path)?;
        replace(path, bytes, existing.as_ref(), options.new_file_mode)
    };
    write().map_err(|failure| WriteError {
        what: what.to_owned(),
        failure,
        state,
    })
}

/// The checks before any write: an existing path must be a regular file this user can write
/// (its metadata, not following a link, is returned); a missing one's directory must exist.
pub(crate) fn checked_target(path: &Path) -> Result<Option<Metadata>, ManifestError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ManifestError::Symlink {
            path: path.to_owned(),
            target: fs::read_link(path).ok(),
        }),
        Ok(meta) => {
            ensure_regular(path, &meta)?;
            ensure_writable(path, &meta)?;
            Ok(Some(meta))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let directory = directory_of(path);
            let action = "create a temporary file there";
            match fs::metadata(directory) {
                Ok(meta) if meta.is_dir() => Ok(None),
                Ok(_) => Err(ManifestError::io(
                    directory,
                    action,
                    io::Error::from(io::ErrorKind::NotADirectory),
                )),
                Err(error) => Err(ManifestError::io(directory, action, error)),
            }
        }
        Err(error) => Err(ManifestError::io(path, "inspect", error)),
    }
}

/// Refuses anything but a regular file, naming what it is.
pub(crate) fn ensure_regular(path: &Path, meta: &Metadata) -> Result<(), ManifestError> {
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

/// The directory `path` is in (`.` for a bare name).
pub(crate) fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The permission bits the new copy of `path` is created with (the umask applies at creation),
/// and whether they are set exactly afterwards. Never a set-ID or sticky bit.
/// - A replaced file this user owns: its own bits, set exactly (the umask may not narrow them).
/// - A replaced file of another user: its bits intersected with `new_file_mode`, less the umask.
/// - No file: `new_file_mode`, less the umask.
fn new_copy_mode(original: Option<&Metadata>, new_file_mode: u32) -> (u32, bool) {
    let euid = rustix::process::geteuid().as_raw();
    match original {
        Some(meta) if meta.uid() == euid => (meta.mode() & PERMISSION_BITS, true),
        Some(meta) => (meta.mode() & new_file_mode & PERMISSION_BITS, false),
        None => (new_file_mode & PERMISSION_BITS, false),
    }
}

/// Temp file beside `path`, write, fsync, rename over `path`, fsync the directory.
/// `original` is the checked file being replaced (`None`: create, never overwrite).
pub(crate) fn replace(
    path: &Path,
    bytes: &[u8],
    original: Option<&Metadata>,
    new_file_mode: u32,
) -> Result<(), ManifestError> {
    let directory = directory_of(path);
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    let (mode, exact) = new_copy_mode(original, new_file_mode);
    let mut temp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(directory)
        .map_err(|error| {
            ManifestError::io(directory, "create a temporary file there", plain(error))
        })?;
    if exact {
        // The umask may have narrowed the mode at creation: set the kept bits exactly.
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))
            .map_err(|error| ManifestError::io(path, "set the new copy's permissions", error))?;
    }
    if let Some(meta) = original {
        keep_owner(temp.as_file(), meta);
    }
    temp.write_all(bytes)
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
    // After the rename the new file is in place: an error here must not claim otherwise, and
    // some file systems refuse fsync on a directory. Durability is best effort from here.
    let _ = File::open(directory).and_then(|dir| dir.sync_all());
    Ok(())
}

/// Gives the new copy the replaced file's owner and group, when the OS allows it (root may;
/// the owner may set a group it is in). Failing leaves the copy owned by this user, which
/// could write the old file anyway. The mode was chosen before: it holds no set-ID bit, so
/// `fchown` clearing those bits changes nothing.
fn keep_owner(file: &File, original: &Metadata) {
    let Ok(ours) = file.metadata() else {
        return;
    };
    if (ours.uid(), ours.gid()) != (original.uid(), original.gid()) {
        let _ = std::os::unix::fs::fchown(file, Some(original.uid()), Some(original.gid()));
    }
}

/// tempfile appends " at path `<temporary file>`" to the OS error's text: the random name means
/// nothing to the caller, so drop it.
fn plain(error: io::Error) -> io::Error {
    let text = error.to_string();
    match text.split_once(" at path ") {
        Some((os, _)) => io::Error::new(error.kind(), os.to_owned()),
        None => error,
    }
}

#[cfg(test)]
mod tests;
