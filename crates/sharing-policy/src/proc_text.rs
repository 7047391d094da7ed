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

/// Why `file` of `process` is not known: its recorded OS error, or that it was not read.
pub(crate) fn read_error(process: &ProcessFacts, file: &str) -> String {
    process.errors.get(file).map_or_else(
        || format!("/proc/{}/{file} was not read", process.pid),
        |error| format!("/proc/{}/{file} could not be read: {error}", process.pid),
    )
}
