//! Which process is the control daemon, from facts only the daemon can produce
//! (docs/mps-daemon.md, "Identity"). The lock on `<pipe directory>/control_lock` proves the
//! holder; the pid file and the `/proc` scan are witnesses, which any local user can forge (a
//! 0666 pid file, a look-alike argv) and which never name the daemon on their own.

use crate::lock::{self, LockHolder};
use crate::proc_text::{FileUnread, effective_uid};
use crate::{
    DaemonLockFacts, DaemonSearch, DaemonSearchMethod, HostFacts, OsText, PidFileFacts,
    ProcessFacts, parse_pid,
};

/// Why the lock does not prove the control daemon's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotByLock {
    /// The lock proves no holder: why, as the lock reads it, and the path of the pid file
    /// that names a process meanwhile (a witness, named but never used).
    Unproven {
        why: lock::Unproven,
        pid_file: Option<OsText>,
    },
    /// This PID holds the lock, but its process was not observed.
    HolderNotObserved(i64),
    /// The holder runs as `uid`, neither root nor the pipe directory's owner
    /// (`directory_uid`, when read).
    AnotherUser {
        pid: i64,
        lock: OsText,
        uid: u32,
        directory_uid: Option<u32>,
    },
    /// The holder's `/proc` status `Uid:` line, as recorded, does not parse.
    UidUnparsed { pid: i64, line: String },
    /// The holder's `/proc` status was not read.
    StatusUnread(FileUnread),
}

/// The daemon's process when the lock proves it and it runs as root or as the pipe directory's
/// owner; otherwise why not (the witnesses are named, never used).
pub(crate) fn by_lock<'a>(
    search: &'a DaemonSearch,
    lock: &DaemonLockFacts,
    pid_file: Option<&PidFileFacts>,
) -> Result<&'a ProcessFacts, NotByLock> {
    let pid = match lock::holder(lock) {
        LockHolder::Proven(pid) => pid,
        LockHolder::NoneVisible(why) | LockHolder::NotProven(why) => {
            return Err(NotByLock::Unproven {
                why,
                pid_file: witness(search, pid_file),
            });
        }
    };
    let found = search
        .processes
        .iter()
        .find(|process| process.pid == pid && search.method == DaemonSearchMethod::Lock);
    let Some(process) = found else {
        return Err(NotByLock::HolderNotObserved(pid));
    };
    match process.status_uid.as_deref().map(effective_uid) {
        Some(Some(uid)) if uid == 0 || Some(uid) == lock.directory_uid => Ok(process),
        Some(Some(uid)) => Err(NotByLock::AnotherUser {
            pid,
            lock: lock.path.clone(),
            uid,
            directory_uid: lock.directory_uid,
        }),
        Some(None) => Err(NotByLock::UidUnparsed {
            pid,
            line: process.status_uid.clone().unwrap_or_default(),
        }),
        None => Err(NotByLock::StatusUnread(FileUnread::of(process, "status"))),
    }
}

/// The pid file that named a process, for the reason of an unproven identity (no PID: it is
/// the witness's claim). A `/proc` scan's finds are not named: they change from one probe to
/// the next, and prove no more.
fn witness(search: &DaemonSearch, pid_file: Option<&PidFileFacts>) -> Option<OsText> {
    match (search.method, search.processes.is_empty(), pid_file) {
        (DaemonSearchMethod::PidFile, false, Some(file)) => Some(file.path.clone()),
        _ => None,
    }
}

/// When the lock proves the daemon and the pid file names another PID: the pid file's text
/// and the holder, for the warning. The pid file is never used either way.
pub(crate) fn pid_file_disagreement(facts: &HostFacts) -> Option<(i64, i64)> {
    let search = facts.daemon_process.as_ref()?;
    let lock = search.lock.as_ref()?;
    let LockHolder::Proven(holder) = lock::holder(lock) else {
        return None;
    };
    let contents = facts.pid_file.as_ref()?.contents.as_ref()?;
    let named = parse_pid(&contents.text)?;
    (named != holder).then_some((named, holder))
}

/// The path of the daemon's lock when it shows the daemon runs in another PID namespace than
/// the observer: the daemon answered (the caller checks), yet no process this `/proc` can see
/// holds its lock.
pub(crate) fn lock_split(search: Option<&DaemonSearch>) -> Option<&OsText> {
    let lock = search?.lock.as_ref()?;
    match lock::holder(lock) {
        LockHolder::NoneVisible(_) => Some(&lock.path),
        LockHolder::Proven(_) | LockHolder::NotProven(_) => None,
    }
}
