//! Which process is the control daemon, from facts only the daemon can produce
//! (docs/mps-daemon.md, "Identity"). The lock on `<pipe directory>/control_lock` proves the
//! holder; the pid file and the `/proc` scan are witnesses, which any local user can forge (a
//! 0666 pid file, a look-alike argv) and which never name the daemon on their own.

use crate::lock::{self, LockHolder};
use crate::proc_text::{effective_uid, read_error};
use crate::{
    DaemonLockFacts, DaemonSearch, DaemonSearchMethod, HostFacts, PidFileFacts, ProcessFacts,
    parse_pid,
};

/// The daemon's process when the lock proves it and it runs as root or as the pipe directory's
/// owner; otherwise why not (the witnesses are named, never used).
pub(crate) fn by_lock<'a>(
    search: &'a DaemonSearch,
    lock: &DaemonLockFacts,
    pid_file: Option<&PidFileFacts>,
) -> Result<&'a ProcessFacts, String> {
    let pid = match lock::holder(lock) {
        LockHolder::Proven(pid) => pid,
        LockHolder::NoneVisible(why) | LockHolder::NotProven(why) => {
            return Err(format!(
                "the control daemon's identity is not proven: {why}{}",
                witnesses(search, pid_file)
            ));
        }
    };
    let found = search
        .processes
        .iter()
        .find(|process| process.pid == pid && search.method == DaemonSearchMethod::Lock);
    let Some(process) = found else {
        return Err(format!(
            "PID {pid} holds the daemon's lock, but its process was not observed"
        ));
    };
    let path = lock.path.to_string_lossy();
    match process.status_uid.as_deref().map(effective_uid) {
        Some(Some(uid)) if uid == 0 || Some(uid) == lock.directory_uid => Ok(process),
        Some(Some(uid)) => Err(format!(
            "PID {pid} holds the daemon's lock on {path} but runs as uid {uid}, neither root nor the owner of the pipe directory ({}); another user can start a daemon of their own in a world-writable pipe directory, so it is not taken as this host's daemon",
            lock.directory_uid
                .map_or_else(|| "not read".to_owned(), |owner| format!("uid {owner}"))
        )),
        Some(None) => Err(format!(
            "the /proc status Uid line {:?} of PID {pid}, which holds the daemon's lock, does not parse",
            process.status_uid.as_deref().unwrap_or_default()
        )),
        None => Err(read_error(process, "status")),
    }
}

/// What the pid file named, for the reason of an unproven identity (no PID: it is the
/// witness's claim). A `/proc` scan's finds are not named: they change from one probe to the
/// next, and prove no more.
fn witnesses(search: &DaemonSearch, pid_file: Option<&PidFileFacts>) -> String {
    match (search.method, search.processes.is_empty(), pid_file) {
        (DaemonSearchMethod::PidFile, false, Some(file)) => format!(
            " (the pid file {} names a process; a pid file is not proof, and it is not used)",
            file.path.to_string_lossy()
        ),
        _ => String::new(),
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

/// Why the daemon looks like it runs in another PID namespace than the observer, when its lock
/// shows it: the daemon answered (the caller checks), yet no process this `/proc` can see
/// holds its lock.
pub(crate) fn lock_split(search: Option<&DaemonSearch>) -> Option<String> {
    let lock = search?.lock.as_ref()?;
    match lock::holder(lock) {
        LockHolder::NoneVisible(_) => Some(format!(
            "the control daemon answers, but no process in this PID namespace holds its lock on {}: the daemon runs in another one",
            lock.path.to_string_lossy()
        )),
        LockHolder::Proven(_) | LockHolder::NotProven(_) => None,
    }
}
