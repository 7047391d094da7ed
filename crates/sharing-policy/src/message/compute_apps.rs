//! The words of the compute-apps record ([`crate::compute_apps`]): why it does not prove a GPU
//! free of compute processes.

use crate::COMPUTE_APPS_QUERY_ARGS;
use crate::compute_apps::AppsUnknown;
use crate::text::repr;

/// Why the compute-apps record does not prove the GPU free.
pub(crate) fn apps_unknown(why: &AppsUnknown) -> String {
    match why {
        AppsUnknown::OtherQuery => format!(
            "the recorded query is not nvidia-smi {}",
            COMPUTE_APPS_QUERY_ARGS.join(" ")
        ),
        AppsUnknown::SpawnFailed(error) => format!("nvidia-smi could not be started: {error}"),
        AppsUnknown::TimedOut(timeout_ms) => {
            format!("nvidia-smi did not answer within {timeout_ms} ms")
        }
        AppsUnknown::Truncated => "its output was cut off at the capture cap".to_owned(),
        AppsUnknown::Failed {
            code,
            signal,
            stderr,
        } => format!(
            "nvidia-smi {} ({})",
            code.map_or_else(
                || format!("was killed by signal {}", signal.unwrap_or_default()),
                |code| format!("exited with status {code}")
            ),
            repr(stderr.trim())
        ),
        AppsUnknown::UnreadableLine(line) => format!(
            "nvidia-smi printed {}, which is not a gpu_uuid, pid, process_name row",
            repr(line)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_quotes_its_stderr_and_an_unreadable_line_is_quoted() {
        let failed = AppsUnknown::Failed {
            code: Some(9),
            signal: None,
            stderr: "Failed to initialize NVML\n".to_owned(),
        };
        assert_eq!(
            apps_unknown(&failed),
            "nvidia-smi exited with status 9 ('Failed to initialize NVML')"
        );
        let killed = AppsUnknown::Failed {
            code: None,
            signal: Some(9),
            stderr: String::new(),
        };
        assert_eq!(
            apps_unknown(&killed),
            "nvidia-smi was killed by signal 9 ('')"
        );
        let line = AppsUnknown::UnreadableLine("No running processes found".to_owned());
        assert_eq!(
            apps_unknown(&line),
            "nvidia-smi printed 'No running processes found', which is not a gpu_uuid, pid, process_name row"
        );
    }
}
