//! The control daemon's log: the tail of `<log directory>/control.log` and of `server.log`,
//! raw. The directory is the proven daemon's ([`sharing_policy::daemon_log_directory`]). Each
//! file is opened without following a symbolic link and without blocking on a FIFO, checked to
//! be a regular file, and read once: at most [`LOG_TAIL_CAP`] bytes from its end.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use sharing_policy::{DaemonLogFacts, HostFacts, LOG_FILES, LOG_TAIL_CAP, LogFileFacts, OsText};

/// Reads the log of the daemon serving `pipe_directory`, when its process is proven; else
/// records why its directory is unknown.
pub fn observe_daemon_log(facts: &HostFacts, pipe_directory: &OsText) -> DaemonLogFacts {
    match sharing_policy::daemon_log_directory(facts, pipe_directory.as_bytes()) {
        Ok(directory) => observe_log_directory(&directory),
        Err(why) => DaemonLogFacts {
            directory: None,
            unknown: Some(why),
            files: Vec::new(),
        },
    }
}

/// Reads the tail of each of [`LOG_FILES`] in `directory`.
pub fn observe_log_directory(directory: &OsText) -> DaemonLogFacts {
    let files = LOG_FILES
        .iter()
        .map(|name| read_tail(&sharing_policy_join(directory, name)))
        .collect();
    DaemonLogFacts {
        directory: Some(directory.clone()),
        unknown: None,
        files,
    }
}

/// `directory/name`, as `sharing_policy`'s `facts::join` joins them.
pub(crate) fn sharing_policy_join(directory: &OsText, name: &str) -> OsText {
    let mut bytes = directory.as_bytes().to_vec();
    if !bytes.ends_with(b"/") {
        bytes.push(b'/');
    }
    bytes.extend_from_slice(name.as_bytes());
    OsText::from_bytes(bytes)
}

/// One bounded read of `path`'s last [`LOG_TAIL_CAP`] bytes.
pub fn read_tail(path: &OsText) -> LogFileFacts {
    let mut facts = LogFileFacts {
        path: path.clone(),
        text: None,
        cut_at_start: false,
        size: None,
        error: None,
        errno: None,
    };
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = match rustix::fs::open(
        Path::new(OsStr::from_bytes(path.as_bytes())),
        flags,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(errno) => {
            facts.errno = Some(errno.raw_os_error());
            facts.error = Some(match errno {
                Errno::LOOP => format!("{}: a symbolic link (not followed)", error_text(errno)),
                other => error_text(other),
            });
            return facts;
        }
    };
    let stat = match rustix::fs::fstat(&fd) {
        Ok(stat) => stat,
        Err(errno) => {
            facts.error = Some(error_text(errno));
            return facts;
        }
    };
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        facts.error = Some(format!("not a regular file ({kind:?}); not read"));
        return facts;
    }
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    facts.size = Some(size);
    let offset = size.saturating_sub(LOG_TAIL_CAP);
    let file = std::fs::File::from(fd);
    let mut bytes = vec![0u8; usize::try_from(size - offset).unwrap_or(0)];
    let mut filled = 0;
    while filled < bytes.len() {
        let Some(rest) = bytes.get_mut(filled..) else {
            break;
        };
        match file.read_at(rest, offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                facts.error = Some(err.to_string());
                return facts;
            }
        }
    }
    bytes.truncate(filled);
    facts.cut_at_start = offset > 0;
    facts.text = Some(String::from_utf8_lossy(&bytes).into_owned());
    facts
}

/// An OS error as text, the way `std::io::Error` prints it.
fn error_text(errno: Errno) -> String {
    std::io::Error::from(errno).to_string()
}
