//! The words of the control daemon's identity ([`crate::daemon_identity`]): why its lock does
//! not prove its process, and how the lock shows it runs in another PID namespace.

use crate::OsText;
use crate::daemon_identity::NotByLock;

/// Why the lock does not prove the control daemon's process.
pub(crate) fn not_by_lock(why: &NotByLock) -> String {
    match why {
        NotByLock::Unproven { why, pid_file } => format!(
            "the control daemon's identity is not proven: {why}{}",
            pid_file.as_ref().map_or_else(String::new, |path| format!(
                " (the pid file {} names a process; a pid file is not proof, and it is not used)",
                path.to_string_lossy()
            ))
        ),
        NotByLock::HolderNotObserved(pid) => {
            format!("PID {pid} holds the daemon's lock, but its process was not observed")
        }
        NotByLock::AnotherUser {
            pid,
            lock,
            uid,
            directory_uid,
        } => format!(
            "PID {pid} holds the daemon's lock on {} but runs as uid {uid}, neither root nor the owner of the pipe directory ({}); another user can start a daemon of their own in a world-writable pipe directory, so it is not taken as this host's daemon",
            lock.to_string_lossy(),
            directory_uid.map_or_else(|| "not read".to_owned(), |owner| format!("uid {owner}"))
        ),
        NotByLock::UidUnparsed { pid, line } => format!(
            "the /proc status Uid line {line:?} of PID {pid}, which holds the daemon's lock, does not parse"
        ),
        NotByLock::StatusUnread(why) => super::proc_text::file_unread(why),
    }
}

/// How the daemon's lock at `lock` shows it runs in another PID namespace: it answers, yet no
/// process here holds the lock.
pub(crate) fn lock_split(lock: &OsText) -> String {
    format!(
        "the control daemon answers, but no process in this PID namespace holds its lock on {}: the daemon runs in another one",
        lock.to_string_lossy()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unproven_lock_names_its_witness_and_an_ordinary_holder_its_uid() {
        let unproven = NotByLock::Unproven {
            why: crate::lock::Unproven {
                path: "/tmp/nvidia-mps/control_lock".to_owned(),
                found: crate::lock::LockFound::TableNotRead(None),
            },
            pid_file: Some(OsText::from("/tmp/nvidia-mps/nvidia-cuda-mps-control.pid")),
        };
        assert_eq!(
            not_by_lock(&unproven),
            "the control daemon's identity is not proven: the kernel's lock table was not read (it was not read) (the pid file /tmp/nvidia-mps/nvidia-cuda-mps-control.pid names a process; a pid file is not proof, and it is not used)"
        );
        let ordinary = NotByLock::AnotherUser {
            pid: 20836,
            lock: OsText::from("/tmp/nvidia-mps/control_lock"),
            uid: 1000,
            directory_uid: None,
        };
        assert_eq!(
            not_by_lock(&ordinary),
            "PID 20836 holds the daemon's lock on /tmp/nvidia-mps/control_lock but runs as uid 1000, neither root nor the owner of the pipe directory (not read); another user can start a daemon of their own in a world-writable pipe directory, so it is not taken as this host's daemon"
        );
    }
}
