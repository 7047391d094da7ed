//! Reading the recorded text of a `/proc` entry: a `Uid:` line's effective UID, and why a file
//! of a process was not read. Shared by the daemon's identity and the served facts.

use crate::ProcessFacts;

/// The effective UID of a `Uid:` line's text (real, effective, saved, filesystem).
pub(crate) fn effective_uid(status_uid: &str) -> Option<u32> {
    let mut fields = status_uid.split_ascii_whitespace();
    let _real = fields.next()?;
    let effective = fields.next()?;
    if effective.bytes().all(|b| b.is_ascii_digit()) {
        effective.parse().ok()
    } else {
        None
    }
}

/// Why a file of a process is not known: the process, the file's name under `/proc/<pid>/`,
/// and its recorded OS error (none when the file was not read at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileUnread {
    pub(crate) pid: i64,
    pub(crate) file: &'static str,
    pub(crate) error: Option<String>,
}

impl FileUnread {
    /// Why `file` of `process` is not known.
    pub(crate) fn of(process: &ProcessFacts, file: &'static str) -> Self {
        Self {
            pid: process.pid,
            file,
            error: process.errors.get(file).cloned(),
        }
    }

    /// Whether the recorded error says the process no longer exists (`ENOENT`, `ESRCH`): it
    /// exited while it was read.
    pub(crate) fn process_gone(&self) -> bool {
        self.error.as_deref().is_some_and(says_process_gone)
    }
}

/// Whether a recorded OS error, as the probe prints it (`… (os error 2)`), says the file or
/// process does not exist (`ENOENT`, `ESRCH`).
pub(crate) fn says_process_gone(error: &str) -> bool {
    error.contains("(os error 2)") || error.contains("(os error 3)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unread_file_keeps_its_recorded_error() {
        let mut process = ProcessFacts::new(4428);
        let unread = FileUnread::of(&process, "environ");
        assert_eq!(unread.error, None);
        assert!(!unread.process_gone());
        process.errors.insert(
            "environ".to_owned(),
            "No such process (os error 3)".to_owned(),
        );
        let gone = FileUnread::of(&process, "environ");
        assert_eq!(gone.error.as_deref(), Some("No such process (os error 3)"));
        assert!(gone.process_gone());
    }
}
