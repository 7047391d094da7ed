//! The daemon's lock as the probe records it, for the tests of the daemon's identity.

use sharing_policy::{
    DaemonLockFacts, DaemonSearch, DaemonSearchMethod, LockFileFacts, OsText, ProcessFacts,
};

/// The lock of the daemon of `pipe` as the probe records it, held by `holders` (each line a
/// POSIX write lock, as `/proc/locks` prints the real daemon's), the pipe directory root's.
pub(crate) fn lock_held_by(pipe: &OsText, holders: &[i64]) -> DaemonLockFacts {
    DaemonLockFacts {
        path: OsText::from(format!("{}/control_lock", pipe.to_string_lossy()).as_str()),
        file: Some(LockFileFacts {
            kind: "file".to_owned(),
            dev_major: 0xfe,
            dev_minor: 0,
            ino: 10_146_360,
            uid: 0,
        }),
        file_error: None,
        directory_uid: Some(0),
        locks: Some(
            holders
                .iter()
                .map(|pid| format!("1: POSIX  ADVISORY  WRITE {pid} fe:00:10146360 0 EOF"))
                .collect(),
        ),
        locks_error: None,
        test: None,
        test_error: None,
    }
}

/// A search that found `process` as the holder of the daemon's `lock`.
pub(crate) fn by_lock(process: ProcessFacts, lock: DaemonLockFacts) -> DaemonSearch {
    DaemonSearch {
        proc_root: OsText::from("/proc"),
        method: DaemonSearchMethod::Lock,
        scanned: 0,
        limit: 0,
        stopped: None,
        error: None,
        processes: vec![process],
        lock: Some(lock),
    }
}
