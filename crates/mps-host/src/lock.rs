//! The control daemon's lock (docs/mps-daemon.md F10, "Identity"): `lstat` of
//! `<pipe directory>/control_lock`, the pipe directory's owner, and the lines of `/proc/locks`
//! that name the lock file's inode. Passive reads only: nothing is locked, nothing connects to
//! the daemon, nothing is written to its log. Which process the lines prove is the validator's
//! decision ([`sharing_policy::lock_holder_pid`]).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::FileType;
use sharing_policy::{DaemonLockFacts, LockFileFacts, OsText};

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
    if let Some(file) = &facts.file {
        match lines_naming(&proc_root.join("locks"), file.ino) {
            Ok(lines) => facts.locks = Some(lines),
            Err((lines, error)) => {
                facts.locks = lines;
                facts.locks_error = Some(error);
            }
        }
    }
    facts
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
