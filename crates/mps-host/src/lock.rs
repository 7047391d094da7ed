//! The control daemon's lock (docs/mps-daemon.md F10, "Identity"): `lstat` of
//! `<pipe directory>/control_lock`, the pipe directory's owner, what `fcntl(F_GETLK)` on the
//! file says of the lock that blocks it, and, when that proves no holder, the lines of
//! `/proc/locks` that name the lock file's inode. Passive reads only: nothing is locked,
//! nothing connects to the daemon, nothing is written to its log. Which process they prove is
//! the validator's decision ([`sharing_policy::lock_holder_pid`]).
//!
//! Why the lock test comes first: reading `/proc/locks` takes the kernel's global file-lock
//! semaphore for writing (`locks_start`: `percpu_down_write(&file_rwsem)`), which waits for an
//! RCU grace period unless another reader took it moments before: 10-20 ms on an idle
//! two-vCPU machine, four times the rest of a probe. `F_GETLK` takes only the file's own lock
//! context.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::process::{Flock, FlockOffsetType, FlockType};
use sharing_policy::{DaemonLockFacts, LockFileFacts, LockTestFacts, OsText};

/// The name of the daemon's lock file in the pipe directory.
pub const LOCK_FILE_NAME: &str = "control_lock";

/// The most bytes of `/proc/locks` read: about 60 bytes a lock, so some 70,000 locks. A table
/// longer than this is recorded as not read to its end, and proves nothing.
const LOCKS_CAP: u64 = 4 * 1024 * 1024;

/// The most lines naming the inode that are kept (the daemon's is one; waiters add more).
const LINES_CAP: usize = 64;

/// Observes the lock of the daemon serving `pipe_directory`, reading `<proc_root>/locks`.
pub fn observe_daemon_lock(proc_root: &Path, pipe_directory: &OsText) -> DaemonLockFacts {
    let directory = Path::new(OsStr::from_bytes(pipe_directory.as_bytes()));
    let path = directory.join(LOCK_FILE_NAME);
    let mut facts = DaemonLockFacts {
        path: OsText::from_bytes(path.as_os_str().as_bytes().to_vec()),
        file: None,
        file_error: None,
        directory_uid: rustix::fs::stat(directory).ok().map(|stat| stat.st_uid),
        locks: None,
        locks_error: None,
        test: None,
        test_error: None,
    };
    match rustix::fs::lstat(&path) {
        Ok(stat) => {
            let dev = stat.st_dev;
            facts.file = Some(LockFileFacts {
                kind: kind_name(FileType::from_raw_mode(stat.st_mode)).to_owned(),
                dev_major: rustix::fs::major(dev),
                dev_minor: rustix::fs::minor(dev),
                ino: stat.st_ino,
                uid: stat.st_uid,
            });
        }
        Err(errno) => facts.file_error = Some(std::io::Error::from(errno).to_string()),
    }
    let Some(file) = facts.file.clone() else {
        return facts;
    };
    // The test's PID is in this process's namespace: it is asked only where the `/proc` read
    // is this namespace's, so that the holder it names is the one read there.
    if crate::procfs::is_own_proc(proc_root) && file.kind == "file" {
        match test_lock(&path, &file) {
            Ok(test) => facts.test = Some(test),
            Err(error) => facts.test_error = Some(error),
        }
        if sharing_policy::lock_holder_pid(&facts).is_some() {
            return facts;
        }
    }
    match lines_naming(&proc_root.join("locks"), file.ino) {
        Ok(lines) => facts.locks = Some(lines),
        Err((lines, error)) => {
            facts.locks = lines;
            facts.locks_error = Some(error);
        }
    }
    facts
}

/// `fcntl(F_GETLK)` for a read lock of the whole lock file: the write lock that blocks it, if
/// any. The file is opened read-only without following a link, waiting on a FIFO or taking a
/// terminal, and must be the file `lstat` saw (a file swapped in meanwhile proves nothing).
fn test_lock(path: &Path, seen: &LockFileFacts) -> Result<LockTestFacts, String> {
    let error = |errno: rustix::io::Errno| std::io::Error::from(errno).to_string();
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(error)?;
    let stat = rustix::fs::fstat(&fd).map_err(error)?;
    let opened = (
        rustix::fs::major(stat.st_dev),
        rustix::fs::minor(stat.st_dev),
        stat.st_ino,
    );
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile
        || opened != (seen.dev_major, seen.dev_minor, seen.ino)
    {
        return Err("the lock file changed between lstat and open".to_owned());
    }
    let whole_file = Flock {
        start: 0,
        length: 0,
        pid: None,
        typ: FlockType::ReadLock,
        offset_type: FlockOffsetType::Set,
    };
    let blocking = rustix::process::fcntl_getlk(&fd, &whole_file).map_err(error)?;
    Ok(match blocking {
        None => LockTestFacts {
            lock: "none".to_owned(),
            start: 0,
            length: 0,
            pid: 0,
        },
        Some(lock) => LockTestFacts {
            lock: match lock.typ {
                FlockType::WriteLock => "write",
                FlockType::ReadLock => "read",
                FlockType::Unlocked => "none",
            }
            .to_owned(),
            start: lock.start,
            length: lock.length,
            pid: lock
                .pid
                .map_or(0, |pid| i64::from(pid.as_raw_nonzero().get())),
        },
    })
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "char_device",
        FileType::BlockDevice => "block_device",
        FileType::Unknown => "unknown",
    }
}

/// Whether a `/proc/locks` line has a `major:minor:inode` field ending in `ino`.
fn names_inode(line: &str, ino: &str) -> bool {
    line.split_ascii_whitespace().any(|field| {
        let mut parts = field.split(':');
        matches!(
            (parts.next(), parts.next(), parts.next(), parts.next()),
            (Some(_), Some(_), Some(last), None) if last == ino
        )
    })
}

/// The lines of the lock table at `path` naming `ino`, read to its end within [`LOCKS_CAP`].
/// On error, the lines read so far (if any) and why.
fn lines_naming(path: &Path, ino: u64) -> Result<Vec<String>, (Option<Vec<String>>, String)> {
    let file =
        std::fs::File::open(path).map_err(|err| (None, format!("{}: {err}", path.display())))?;
    let ino = ino.to_string();
    let mut reader = BufReader::new(file.take(LOCKS_CAP + 1));
    let (mut kept, mut read, mut line) = (Vec::new(), 0_u64, Vec::new());
    loop {
        line.clear();
        let got = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| (None, format!("{}: {err}", path.display())))?;
        if got == 0 {
            return Ok(kept);
        }
        read += got as u64;
        if read > LOCKS_CAP {
            return Err((Some(kept), format!("longer than {LOCKS_CAP} bytes")));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\n');
        if names_inode(text, &ino) {
            if kept.len() == LINES_CAP {
                return Err((
                    Some(kept),
                    format!("more than {LINES_CAP} locks on the file"),
                ));
            }
            kept.push(text.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_lines_naming_the_inode_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let locks = dir.path().join("locks");
        std::fs::write(
            &locks,
            "1: POSIX  ADVISORY  WRITE 20836 fe:00:10146360 0 EOF\n\
             2: FLOCK  ADVISORY  WRITE 77 fe:00:1014636 0 EOF\n\
             3: -> POSIX  ADVISORY  WRITE 78 fe:00:10146360 0 EOF\n",
        )
        .unwrap();
        assert_eq!(
            lines_naming(&locks, 10_146_360).unwrap(),
            [
                "1: POSIX  ADVISORY  WRITE 20836 fe:00:10146360 0 EOF",
                "3: -> POSIX  ADVISORY  WRITE 78 fe:00:10146360 0 EOF"
            ]
        );
        assert!(lines_naming(&dir.path().join("absent"), 1).is_err());
    }

    #[test]
    fn a_lock_file_that_is_a_symlink_is_recorded_as_one() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join(LOCK_FILE_NAME)).unwrap();
        let pipe = OsText::from_bytes(dir.path().as_os_str().as_bytes().to_vec());
        let facts = observe_daemon_lock(Path::new("/proc"), &pipe);
        assert_eq!(facts.file.unwrap().kind, "symlink");
    }
}
