//! The words of the daemon's log directory ([`crate::daemon_log`]): why it cannot be decided,
//! as `mps-host` records it when it does not read the log.

use crate::OsText;
use crate::daemon_log::{self, LogDirectoryUnknown};

/// The log directory of the control daemon serving `pipe_directory`, from the proven
/// daemon's own environment (`CUDA_MPS_LOG_DIRECTORY`, else
/// [`DEFAULT_LOG_DIRECTORY`](crate::DEFAULT_LOG_DIRECTORY)): what `mps-host` reads. No other
/// process's word is taken.
///
/// # Errors
///
/// Why the directory cannot be decided: the daemon's process is not proven, or its
/// environment was not read.
pub fn daemon_log_directory(
    facts: &crate::HostFacts,
    pipe_directory: &[u8],
) -> Result<OsText, String> {
    daemon_log::log_directory(facts, pipe_directory).map_err(|why| log_directory_unknown(&why))
}

/// Why the daemon's log directory cannot be decided.
fn log_directory_unknown(why: &LogDirectoryUnknown<'_>) -> String {
    match why {
        LogDirectoryUnknown::NotProven(why) => format!(
            "the control daemon's process is not proven ({}), so its log directory is unknown",
            super::served::not_identified(why)
        ),
        LogDirectoryUnknown::EnvironUnread { pid, error } => format!(
            "the control daemon's environment (PID {pid}) could not be read: {}",
            error.unwrap_or("not read")
        ),
    }
}
