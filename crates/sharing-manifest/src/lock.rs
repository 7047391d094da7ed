//! The manifest lock: launchers share one run manifest, so every writer
//! takes `flock(LOCK_EX)` on the sidecar `<manifest>.lock` around its read-modify-write. A lock
//! on the manifest itself would not do: the atomic rename replaces its inode. The sidecar is
//! created with mode 0644 when missing and never removed (removing it would let two writers
//! lock two different files). docs/cli.md gives the protocol and a Python launcher example.

use std::ffi::OsString;
use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, OFlags, flock};

use crate::error::ManifestError;

/// How long a writer waits for the lock before it gives up and leaves the manifest untouched.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The mode a missing lock file is created with.
pub const LOCK_FILE_MODE: u32 = 0o644;

/// How often a waiting writer tries the lock again.
const POLL: Duration = Duration::from_millis(10);

/// `<manifest>.lock`: the manifest's own name with `.lock` appended, in the same directory.
pub fn lock_path(manifest: &Path) -> PathBuf {
    let mut name = OsString::from(manifest.as_os_str());
    name.push(".lock");
    PathBuf::from(name)
}

/// A held manifest lock; released when dropped (the file is closed, never removed).
#[derive(Debug)]
pub(crate) struct ManifestLock {
    _file: File,
}

impl ManifestLock {
    /// Takes the lock of `manifest`, waiting at most `wait`.
    pub(crate) fn acquire(manifest: &Path, wait: Duration) -> Result<Self, ManifestError> {
        let path = lock_path(manifest);
        let file = open_lock_file(&path)?;
        let started = Instant::now();
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(Self { _file: file }),
                Err(errno) if errno == rustix::io::Errno::WOULDBLOCK => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(errno) => {
                    return Err(ManifestError::lock(&path, "lock", io::Error::from(errno)));
                }
            }
            if started.elapsed() >= wait {
                return Err(ManifestError::LockTimeout {
                    lock: path,
                    waited: wait,
                });
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Opens the lock file, creating it (mode exactly 0644) when missing. Never follows a symbolic
/// link (one planted in a shared directory could make root create a file elsewhere) and never
/// blocks on a FIFO; anything but a regular file is refused.
fn open_lock_file(path: &Path) -> Result<File, ManifestError> {
    let flags = (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits();
    let flags = i32::try_from(flags).unwrap_or(0);
    let created = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(LOCK_FILE_MODE)
        .custom_flags(flags)
        .open(path);
    let file = match created {
        Ok(file) => {
            // The umask may have narrowed the mode: other users' launchers must open it too.
            let _ = file.set_permissions(Permissions::from_mode(LOCK_FILE_MODE));
            file
        }
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            // Read-only is enough for flock, and works on a lock file another user created.
            OpenOptions::new()
                .read(true)
                .custom_flags(flags)
                .open(path)
                .map_err(|error| ManifestError::lock(path, "open", error))?
        }
        Err(error) => return Err(ManifestError::lock(path, "create", error)),
    };
    let file_type = file
        .metadata()
        .map_err(|error| ManifestError::lock(path, "inspect", error))?
        .file_type();
    if !file_type.is_file() {
        return Err(ManifestError::lock(
            path,
            "use",
            io::Error::other("not a regular file"),
        ));
    }
    Ok(file)
}
