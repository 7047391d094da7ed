//! The control daemon's identity from its lock (docs/mps-daemon.md F10, "Identity"): the
//! daemon holds a POSIX write lock on `<pipe directory>/control_lock` for its whole life, and
//! the kernel's `/proc/locks` names the holder's PID. While it holds the lock no other process
//! can take a conflicting one, so the holder is a fact only the daemon can produce, unlike a
//! pid file (mode 0666), a process's name or its argv, which any local user can write.

use crate::{DaemonLockFacts, LockFileFacts, LockTestFacts};

/// What the lock proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockHolder {
    /// The one process holding a POSIX write lock on the lock file's inode.
    Proven(i64),
    /// The lock file and the whole lock table were read, and no process visible here holds
    /// the lock: the daemon is not running, or runs in another PID namespace (the kernel lists
    /// only the locks of processes in the reader's). Its `found` is [`LockFound::NoHolder`].
    NoneVisible(Unproven),
    /// Nothing is proven, and why.
    NotProven(Unproven),
}

/// Why the lock proves no daemon: the lock file's path, as read, and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unproven {
    pub(crate) path: String,
    pub(crate) found: LockFound,
}

/// What was found where the lock proves no daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockFound {
    /// The lock file was not observed: the error recorded, if any.
    FileNotObserved(Option<String>),
    /// The lock file is not a regular file: its kind (`symlink`, `directory`, …).
    NotARegularFile(String),
    /// The kernel's lock table was not read: the error recorded, if any.
    TableNotRead(Option<String>),
    /// The kernel's lock table was read only in part: the error recorded.
    TableCutShort(String),
    /// A line of the lock table that does not parse.
    UnparsedLine(String),
    /// No process visible here holds a write lock on the file.
    NoHolder,
    /// Several processes hold a write lock on the file: their PIDs.
    SeveralHolders(Vec<i64>),
}

/// One `/proc/locks` record: `1: POSIX  ADVISORY  WRITE 20836 fe:00:10146360 0 EOF`. A
/// blocked waiter has `->` after the ordinal; it holds nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockLine<'a> {
    pub(crate) waiter: bool,
    pub(crate) class: &'a str,
    pub(crate) access: &'a str,
    pub(crate) pid: i64,
    pub(crate) dev_major: u32,
    pub(crate) dev_minor: u32,
    pub(crate) ino: u64,
}

/// Parses one line strictly, as `fs/locks.c` (`lock_get_status`) prints it: the ordinal and
/// `:`, an optional `->`, the class (`POSIX`, `FLOCK`, `OFDLCK`, `DELEG`, `LEASE`, …), the
/// mode (`ADVISORY`, `MANDATORY`, …), the access (`READ`, `WRITE`, `UNLCK`, …), the PID, the
/// device's major and minor numbers in hex and the inode in decimal, then the range.
pub(crate) fn parse_line(line: &str) -> Option<LockLine<'_>> {
    let mut fields = line.split_ascii_whitespace();
    let ordinal = fields.next()?.strip_suffix(':')?;
    if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut class = fields.next()?;
    let waiter = class == "->";
    if waiter {
        class = fields.next()?;
    }
    let _mode = fields.next()?;
    let access = fields.next()?;
    let pid = signed_decimal(fields.next()?)?;
    let mut identity = fields.next()?.split(':');
    let dev_major = u32::from_str_radix(hex(identity.next()?)?, 16).ok()?;
    let dev_minor = u32::from_str_radix(hex(identity.next()?)?, 16).ok()?;
    let ino = decimal(identity.next()?)?.parse().ok()?;
    if identity.next().is_some() {
        return None;
    }
    let (start, end) = (fields.next()?, fields.next()?);
    decimal(start)?;
    if end != "EOF" {
        decimal(end)?;
    }
    if fields.next().is_some() {
        return None;
    }
    Some(LockLine {
        waiter,
        class,
        access,
        pid,
        dev_major,
        dev_minor,
        ino,
    })
}

fn hex(text: &str) -> Option<&str> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit())).then_some(text)
}

fn decimal(text: &str) -> Option<&str> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then_some(text)
}

/// A PID as the kernel prints it: decimal, `-1` for an open-file-description lock.
fn signed_decimal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    decimal(digits)?;
    text.parse().ok()
}

/// Whether `line` is a held POSIX write lock on `file`.
fn holds_write_lock(line: &LockLine<'_>, file: &LockFileFacts) -> bool {
    !line.waiter
        && line.class == "POSIX"
        && line.access == "WRITE"
        && line.pid > 0
        && (line.dev_major, line.dev_minor, line.ino) == (file.dev_major, file.dev_minor, file.ino)
}

/// The PID a lock test proves: a write lock on the whole file (from byte 0 to the end, however
/// long it grows) held by a process visible here. Such a lock excludes every other lock on the
/// file, so its holder is the only one. Anything else proves nothing, and the kernel's lock
/// table decides.
fn tested_holder(test: &LockTestFacts) -> Option<i64> {
    (test.lock == "write" && test.start == 0 && test.length == 0 && test.pid > 0)
        .then_some(test.pid)
}

/// The process the lock proves to be the control daemon, or why none is proven: the lock
/// test's whole-file write lock when it shows one (and the table, when also recorded, agrees),
/// otherwise the kernel's lock table.
pub(crate) fn holder(lock: &DaemonLockFacts) -> LockHolder {
    let unproven = |found| Unproven {
        path: lock.path.to_string_lossy(),
        found,
    };
    let Some(file) = &lock.file else {
        let found = LockFound::FileNotObserved(lock.file_error.clone());
        return LockHolder::NotProven(unproven(found));
    };
    if file.kind != "file" {
        let found = LockFound::NotARegularFile(file.kind.clone());
        return LockHolder::NotProven(unproven(found));
    }
    let tested = lock.test.as_ref().and_then(tested_holder);
    let from_table = match (&lock.locks, tested) {
        (None, Some(pid)) if lock.locks_error.is_none() => return LockHolder::Proven(pid),
        (None, _) => {
            let found = LockFound::TableNotRead(lock.locks_error.clone());
            return LockHolder::NotProven(unproven(found));
        }
        (Some(lines), _) => table_holder(lines, lock.locks_error.as_ref(), file),
    };
    match (from_table, tested) {
        (Ok(pid), Some(other)) if pid != other => {
            LockHolder::NotProven(unproven(LockFound::SeveralHolders(vec![other, pid])))
        }
        (Ok(pid), _) => LockHolder::Proven(pid),
        (Err(LockFound::NoHolder), _) => LockHolder::NoneVisible(unproven(LockFound::NoHolder)),
        (Err(found), _) => LockHolder::NotProven(unproven(found)),
    }
}

/// The one process the kernel's lock table shows holding a POSIX write lock on `file`.
fn table_holder(
    lines: &[String],
    error: Option<&String>,
    file: &LockFileFacts,
) -> Result<i64, LockFound> {
    if let Some(why) = error {
        return Err(LockFound::TableCutShort(why.clone()));
    }
    let mut holders = Vec::new();
    for line in lines {
        let parsed = parse_line(line).ok_or_else(|| LockFound::UnparsedLine(line.clone()))?;
        if holds_write_lock(&parsed, file) && !holders.contains(&parsed.pid) {
            holders.push(parsed.pid);
        }
    }
    match holders.as_slice() {
        [pid] => Ok(*pid),
        [] => Err(LockFound::NoHolder),
        _ => Err(LockFound::SeveralHolders(holders)),
    }
}

/// The PID the lock proves to be the control daemon, when it proves one: `mps-host` calls this
/// to know which process to read, so the decision stays here.
pub fn lock_holder_pid(lock: &DaemonLockFacts) -> Option<i64> {
    match holder(lock) {
        LockHolder::Proven(pid) => Some(pid),
        LockHolder::NoneVisible(_) | LockHolder::NotProven(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OsText;

    fn file(ino: u64) -> LockFileFacts {
        LockFileFacts {
            kind: "file".to_owned(),
            dev_major: 0xfe,
            dev_minor: 0,
            ino,
            uid: 0,
        }
    }

    fn lock(lines: &[&str]) -> DaemonLockFacts {
        DaemonLockFacts {
            path: OsText::from("/tmp/nvidia-mps/control_lock"),
            file: Some(file(10_146_360)),
            file_error: None,
            directory_uid: Some(0),
            locks: Some(lines.iter().map(|l| (*l).to_owned()).collect()),
            locks_error: None,
            test: None,
            test_error: None,
        }
    }

    /// A lock file whose table was not read because the lock test answered `test`.
    fn tested(test: LockTestFacts) -> DaemonLockFacts {
        DaemonLockFacts {
            locks: None,
            test: Some(test),
            ..lock(&[])
        }
    }

    fn test(lock: &str, start: u64, length: u64, pid: i64) -> LockTestFacts {
        LockTestFacts {
            lock: lock.to_owned(),
            start,
            length,
            pid,
        }
    }

    #[test]
    fn only_a_whole_file_write_lock_held_here_proves_a_holder_without_the_table() {
        assert_eq!(
            holder(&tested(test("write", 0, 0, 20836))),
            LockHolder::Proven(20836)
        );
        // A part of the file, a read lock, no lock, or a holder not visible here: the table
        // decides, and without it nothing is proven.
        for answer in [
            test("write", 0, 1, 20836),
            test("write", 1, 0, 20836),
            test("read", 0, 0, 20836),
            test("none", 0, 0, 0),
            test("write", 0, 0, 0),
            test("write", 0, 0, -1),
        ] {
            assert!(
                matches!(holder(&tested(answer.clone())), LockHolder::NotProven(_)),
                "{answer:?}"
            );
            let with_table = DaemonLockFacts {
                test: Some(answer.clone()),
                ..lock(&[REAL])
            };
            assert_eq!(holder(&with_table), LockHolder::Proven(20836), "{answer:?}");
        }
        // A table cut short is not read to its end: the test does not stand in for it.
        let cut = DaemonLockFacts {
            locks_error: Some("longer than 4194304 bytes".to_owned()),
            ..tested(test("write", 0, 0, 20836))
        };
        assert!(matches!(holder(&cut), LockHolder::NotProven(_)));
    }

    #[test]
    fn a_test_and_a_table_that_name_different_holders_prove_neither() {
        let both = DaemonLockFacts {
            test: Some(test("write", 0, 0, 7)),
            ..lock(&[REAL])
        };
        assert!(matches!(
            holder(&both),
            LockHolder::NotProven(Unproven {
                found: LockFound::SeveralHolders(ref pids),
                ..
            }) if pids == &[7, 20836]
        ));
        let agree = DaemonLockFacts {
            test: Some(test("write", 0, 0, 20836)),
            ..lock(&[REAL])
        };
        assert_eq!(holder(&agree), LockHolder::Proven(20836));
    }

    /// The line the real 535 daemon's lock shows (`-d`, no GPU).
    const REAL: &str = "1: POSIX  ADVISORY  WRITE 20836 fe:00:10146360 0 EOF";

    #[test]
    fn the_real_daemons_line_proves_its_pid() {
        assert_eq!(holder(&lock(&[REAL])), LockHolder::Proven(20836));
        let parsed = parse_line(REAL).unwrap();
        assert_eq!((parsed.dev_major, parsed.dev_minor), (0xfe, 0));
    }

    #[test]
    fn waiters_flock_ofd_read_and_other_inodes_prove_nothing() {
        for line in [
            "1: -> POSIX  ADVISORY  WRITE 999 fe:00:10146360 0 EOF",
            "1: FLOCK  ADVISORY  WRITE 999 fe:00:10146360 0 EOF",
            "1: OFDLCK ADVISORY  WRITE -1 fe:00:10146360 0 EOF",
            "1: POSIX  ADVISORY  READ 999 fe:00:10146360 0 EOF",
            "1: POSIX  ADVISORY  WRITE 999 fe:01:10146360 0 EOF",
            "1: POSIX  ADVISORY  WRITE 999 fe:00:1014636 0 EOF",
        ] {
            assert!(
                matches!(holder(&lock(&[line])), LockHolder::NoneVisible(_)),
                "{line}"
            );
        }
        assert_eq!(
            holder(&lock(&[
                "1: FLOCK  ADVISORY  WRITE 999 fe:00:10146360 0 EOF",
                REAL
            ])),
            LockHolder::Proven(20836)
        );
    }

    #[test]
    fn anything_unreadable_or_odd_is_not_proven() {
        let mut symlink = lock(&[REAL]);
        symlink.file.as_mut().unwrap().kind = "symlink".to_owned();
        let mut cut = lock(&[REAL]);
        cut.locks_error = Some("longer than 4194304 bytes".to_owned());
        let mut unread = lock(&[REAL]);
        unread.locks = None;
        let mut absent = lock(&[REAL]);
        absent.file = None;
        let garbled_line = "2: POSIX ADVISORY WRITE x fe:00:10146360 0 EOF";
        let garbled = lock(&[REAL, garbled_line]);
        let two = lock(&[REAL, "2: POSIX ADVISORY WRITE 7 fe:00:10146360 0 EOF"]);
        for (facts, found) in [
            (symlink, LockFound::NotARegularFile("symlink".to_owned())),
            (
                cut,
                LockFound::TableCutShort("longer than 4194304 bytes".to_owned()),
            ),
            (unread, LockFound::TableNotRead(None)),
            (absent, LockFound::FileNotObserved(None)),
            (garbled, LockFound::UnparsedLine(garbled_line.to_owned())),
            (two, LockFound::SeveralHolders(vec![20836, 7])),
        ] {
            let unproven = Unproven {
                path: "/tmp/nvidia-mps/control_lock".to_owned(),
                found,
            };
            assert_eq!(holder(&facts), LockHolder::NotProven(unproven), "{facts:?}");
        }
        for nothing in [
            lock(&[]),
            lock(&["1: POSIX  ADVISORY  WRITE 5 fe:00:99 0 EOF"]),
        ] {
            assert!(matches!(
                holder(&nothing),
                LockHolder::NoneVisible(Unproven {
                    found: LockFound::NoHolder,
                    ..
                })
            ));
        }
    }

    #[test]
    fn strict_parsing() {
        for line in [
            "",
            "1 POSIX ADVISORY WRITE 1 fe:00:1 0 EOF",
            "1: POSIX ADVISORY WRITE 1 fe:00:1 0",
            "1: POSIX ADVISORY WRITE 1 fe:00:1 0 EOF x",
            "1: POSIX ADVISORY WRITE 1 fe:00:1:2 0 EOF",
            "1: POSIX ADVISORY WRITE 1 zz:00:1 0 EOF",
            "1: POSIX ADVISORY WRITE +1 fe:00:1 0 EOF",
        ] {
            assert_eq!(parse_line(line), None, "{line:?}");
        }
    }
}
