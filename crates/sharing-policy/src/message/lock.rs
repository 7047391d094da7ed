//! The words of what the daemon's lock proves ([`crate::lock`]): why it proves no daemon.

use std::fmt;

use crate::lock::{LockFound, Unproven};

/// The reason an unproven daemon identity quotes. A `Display` rather than a function of this
/// floor: its one consumer (`daemon_identity`, which `served` reads) lies below the message
/// layer and may not import it.
impl fmt::Display for Unproven {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.found {
            LockFound::FileNotObserved(error) => {
                let why = error.as_deref().unwrap_or("it was not observed");
                write!(f, "the daemon's lock file {path} ({why})")
            }
            LockFound::NotARegularFile(kind) => write!(
                f,
                "the daemon's lock file {path} is a {kind}, not a regular file"
            ),
            LockFound::TableNotRead(error) => {
                let why = error.as_deref().unwrap_or("it was not read");
                write!(f, "the kernel's lock table was not read ({why})")
            }
            LockFound::TableCutShort(why) => {
                write!(f, "the kernel's lock table was not read to its end ({why})")
            }
            LockFound::UnparsedLine(line) => {
                write!(
                    f,
                    "a line of the kernel's lock table does not parse: {line:?}"
                )
            }
            LockFound::NoHolder => write!(
                f,
                "no process that this /proc can see holds the daemon's lock on {path} (the kernel lists only the locks of processes in the reader's PID namespace): the daemon is not running, or runs in another PID namespace"
            ),
            LockFound::SeveralHolders(pids) => write!(
                f,
                "{} processes hold a write lock on {path} (PIDs {})",
                pids.len(),
                crate::text::listed(pids)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_holders_are_counted_and_listed() {
        let unproven = Unproven {
            path: "/tmp/nvidia-mps/control_lock".to_owned(),
            found: LockFound::SeveralHolders(vec![20836, 7]),
        };
        assert_eq!(
            unproven.to_string(),
            "2 processes hold a write lock on /tmp/nvidia-mps/control_lock (PIDs 20836, 7)"
        );
    }
}
