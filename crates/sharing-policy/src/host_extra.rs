//! Raw facts of what the clients and the MPS server share beyond the control pipe: the
//! `/dev/shm` each sees (and its room), and the capacity settings that bound how many clients
//! one server takes. Recorded by mps-host, judged in `assess::shm` and `assess::capacity`.

use serde::{Deserialize, Serialize};

use crate::OsText;

/// `/dev/shm` as one process sees it: `stat`, `statvfs` and its `/proc/<pid>/mountinfo` line.
/// Every field is `None` when it could not be read; `errors` says why, keyed by the call
/// (`stat`, `statvfs`, `mountinfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ShmView {
    /// The path that was looked at (`/dev/shm`, or `/proc/<pid>/root/dev/shm`).
    pub path: OsText,
    /// `st_dev` of the directory (the filesystem it lies on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<u64>,
    /// `st_ino` of the directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inode: Option<u64>,
    /// `f_bavail * f_frsize`: the bytes an unprivileged process can still write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_bytes: Option<u64>,
    /// `f_blocks * f_frsize`: the filesystem's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
    /// Field 3 (`major:minor`) of the last `mountinfo` line whose mount point (field 5) is
    /// `/dev/shm`, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_source: Option<String>,
    /// Field 4 of that line: the mount's root within its filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_root: Option<String>,
    /// The OS error of each call that failed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub errors: std::collections::BTreeMap<String, String>,
}

impl ShmView {
    /// Which `/dev/shm` this is: its `st_dev` and `st_ino`, when `stat` read them (the same
    /// filesystem and the same directory in it).
    pub fn identity(&self) -> Option<(u64, u64)> {
        Some((self.device?, self.inode?))
    }
}

/// Whether the `mountinfo` lines of `/dev/shm` are worth reading for `shm`: only where the
/// caller's and the daemon's `/dev/shm` are both identified and differ. The check compares
/// identities ([`ShmView::identity`]); the lines only name the two mounts in the message that
/// says they differ. Reading a `mountinfo` costs the kernel a formatted line per mount (1.5 ms
/// at 1,000 mounts, 4.2 ms at 4,000, on the benchmark machine), and a Kubernetes node has
/// thousands.
pub fn shm_mount_lines_wanted(shm: &ShmFacts) -> bool {
    let daemon = shm.daemon.as_ref().and_then(ShmView::identity);
    matches!((shm.caller.identity(), daemon), (Some(caller), Some(daemon)) if caller != daemon)
}

/// The caller's `/dev/shm` and the proven control daemon's (which its servers inherit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ShmFacts {
    /// `/dev/shm` of the probing process.
    pub caller: ShmView,
    /// The PID of the control daemon the lock proved; `None` when none was proven (then
    /// `daemon` is `None` too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_pid: Option<i64>,
    /// `/proc/<daemon_pid>/root/dev/shm` and the daemon's `mountinfo` (no `statvfs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<ShmView>,
}

/// What bounds how many clients one server takes: the caller's
/// `CUDA_DEVICE_MAX_CONNECTIONS` and the proven daemon's open-files limit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CapacityFacts {
    /// The caller's `CUDA_DEVICE_MAX_CONNECTIONS`, raw (`None` = unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_max_connections: Option<OsText>,
    /// The PID of the control daemon the lock proved, whose limits were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_pid: Option<i64>,
    /// The `Max open files` line of `/proc/<daemon_pid>/limits`, raw (soft limit, hard limit,
    /// unit, separated by spaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_max_open_files: Option<String>,
    /// Why the daemon's limits could not be read, when they could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_limits_error: Option<String>,
}

/// The proven daemon's open-files soft limit from [`CapacityFacts::daemon_max_open_files`]
/// (`unlimited` is `u64::MAX`); `None` when the line does not read.
pub(crate) fn open_files_soft(line: &str) -> Option<u64> {
    let soft = line.split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(u64::MAX);
    }
    soft.parse::<u64>().ok()
}

/// The most MPS clients one server takes per device on Volta and newer (NVIDIA's MPS
/// documentation, "Limitations": 48 client CUDA contexts per device).
pub const MAX_CLIENTS_PER_DEVICE: u32 = 48;

/// The client limit of a MIG compute instance holding `slices` of a GPU's `total_slices`
/// compute slices: the device limit in proportion, rounded down, at least 1; the whole
/// device's when no MIG instance is named.
pub fn client_limit(mig: Option<(u32, u32)>) -> u32 {
    match mig {
        Some((slices, total)) if total > 0 && slices < total => {
            let share = u64::from(MAX_CLIENTS_PER_DEVICE) * u64::from(slices) / u64::from(total);
            u32::try_from(share)
                .unwrap_or(MAX_CLIENTS_PER_DEVICE)
                .max(1)
        }
        _ => MAX_CLIENTS_PER_DEVICE,
    }
}

/// Whether `listed` clients and the `coming` ones (the learner and the collector: 2) fit the
/// per-device client limit of [`client_limit`].
///
/// # Errors
/// The limit they exceed.
pub fn clients_fit(listed: u32, coming: u32, mig: Option<(u32, u32)>) -> Result<(), u32> {
    let limit = client_limit(mig);
    if listed.saturating_add(coming) <= limit {
        Ok(())
    } else {
        Err(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shm_view(identity: Option<(u64, u64)>) -> ShmView {
        ShmView {
            path: crate::OsText::from("/dev/shm"),
            device: identity.map(|(device, _)| device),
            inode: identity.map(|(_, inode)| inode),
            free_bytes: None,
            total_bytes: None,
            mount_source: None,
            mount_root: None,
            errors: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn mount_lines_are_wanted_only_for_two_identified_dev_shm_that_differ() {
        let facts = |caller, daemon: Option<Option<(u64, u64)>>| ShmFacts {
            caller: shm_view(caller),
            daemon_pid: daemon.map(|_| 4242),
            daemon: daemon.map(shm_view),
        };
        assert!(shm_mount_lines_wanted(&facts(
            Some((38, 1)),
            Some(Some((39, 1)))
        )));
        assert!(shm_mount_lines_wanted(&facts(
            Some((38, 1)),
            Some(Some((38, 2)))
        )));
        assert!(!shm_mount_lines_wanted(&facts(
            Some((38, 1)),
            Some(Some((38, 1)))
        )));
        assert!(!shm_mount_lines_wanted(&facts(Some((38, 1)), Some(None))));
        assert!(!shm_mount_lines_wanted(&facts(None, Some(Some((38, 1))))));
        assert!(!shm_mount_lines_wanted(&facts(Some((38, 1)), None)));
    }

    #[test]
    fn client_limit_is_48_and_proportional_on_mig() {
        assert_eq!(client_limit(None), 48);
        assert_eq!(client_limit(Some((7, 7))), 48);
        assert_eq!(client_limit(Some((1, 7))), 6);
        assert_eq!(client_limit(Some((3, 7))), 20);
        assert_eq!(client_limit(Some((0, 7))), 1);
        assert_eq!(clients_fit(46, 2, None), Ok(()));
        assert_eq!(clients_fit(47, 2, None), Err(48));
        assert_eq!(clients_fit(5, 2, Some((1, 7))), Err(6));
    }

    #[test]
    fn open_files_soft_reads_the_limits_line() {
        assert_eq!(
            open_files_soft("1024                 524288               files"),
            Some(1024)
        );
        assert_eq!(open_files_soft("unlimited unlimited files"), Some(u64::MAX));
        assert_eq!(open_files_soft("x"), None);
        assert_eq!(open_files_soft(""), None);
    }
}
