//! `/dev/shm` and capacity observation: the caller's `/dev/shm` (`stat`, `statvfs`), the proven
//! control daemon's (`stat` of `/proc/<pid>/root/dev/shm`), the `mountinfo` line of each when
//! the two differ, and the daemon's `Max open files` limit. Raw facts only; which daemon is
//! proven is the validator's rule ([`sharing_policy::proven_daemon_pid`]). No file is read
//! whole: `mountinfo` and `limits` have a size cap; `stat` and `statvfs` read no file.

use std::path::{Path, PathBuf};

use sharing_policy::{CapacityFacts, OsText, ShmFacts, ShmView};

use crate::procfs::read_capped;

/// Where clients and servers map their shared memory.
pub const SHM_PATH: &str = "/dev/shm";
/// The most bytes of a `mountinfo` read (a host with thousands of mounts stays under it).
const MOUNTINFO_CAP: u64 = 1024 * 1024;
/// The most bytes of `/proc/<pid>/limits` read (about 1.5 KiB).
const LIMITS_CAP: u64 = 8 * 1024;

/// The caller's `/dev/shm` (its own `/proc/self`) and, when `daemon` is the PID the lock
/// proves, the daemon's, read through `proc_root` (`/proc`).
pub fn observe_shm(proc_root: &Path, daemon: Option<i64>) -> ShmFacts {
    let mut facts = ShmFacts {
        caller: view(Path::new(SHM_PATH), true),
        daemon_pid: daemon,
        daemon: daemon.map(|pid| {
            let path: PathBuf = proc_root.join(pid.to_string()).join("root/dev/shm");
            view(&path, false)
        }),
    };
    // The mount lines only describe two /dev/shm that differ; the validator says when.
    if sharing_policy::shm_mount_lines_wanted(&facts) {
        let own = read_capped(Path::new("/proc"), "self", "mountinfo", MOUNTINFO_CAP);
        mount_line(&mut facts.caller, own);
        if let (Some(pid), Some(view)) = (daemon, facts.daemon.as_mut()) {
            mount_line(
                view,
                read_capped(proc_root, pid, "mountinfo", MOUNTINFO_CAP),
            );
        }
    }
    facts
}

/// `stat` (following a link: `/dev/shm` is a link to `/run/shm` on some systems) and, with
/// `room`, `statvfs` of `path`.
fn view(path: &Path, room: bool) -> ShmView {
    let mut view = ShmView {
        path: OsText::from_bytes(path.as_os_str().as_encoded_bytes().to_vec()),
        device: None,
        inode: None,
        free_bytes: None,
        total_bytes: None,
        mount_source: None,
        mount_root: None,
        errors: std::collections::BTreeMap::new(),
    };
    match rustix::fs::stat(path) {
        Ok(stat) => {
            view.device = Some(stat.st_dev);
            view.inode = Some(stat.st_ino);
        }
        Err(err) => {
            view.errors.insert("stat".to_owned(), err.to_string());
        }
    }
    if room {
        match rustix::fs::statvfs(path) {
            Ok(vfs) => {
                view.free_bytes = Some(vfs.f_bavail.saturating_mul(vfs.f_frsize));
                view.total_bytes = Some(vfs.f_blocks.saturating_mul(vfs.f_frsize));
            }
            Err(err) => {
                view.errors.insert("statvfs".to_owned(), err.to_string());
            }
        }
    }
    view
}

/// Fields 3 and 4 of the last `mountinfo` line whose mount point (field 5) is `/dev/shm`
/// (the last one is the mount on top, the one a path walk meets).
fn mount_line(view: &mut ShmView, mountinfo: Result<Vec<u8>, String>) {
    let bytes = match mountinfo {
        Ok(bytes) => bytes,
        Err(error) => {
            view.errors.insert("mountinfo".to_owned(), error);
            return;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let found = text.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').take(5).collect();
        match fields.as_slice() {
            [_, _, source, root, point] if *point == SHM_PATH => {
                Some(((*source).to_owned(), (*root).to_owned()))
            }
            _ => None,
        }
    });
    if let Some((source, root)) = found {
        view.mount_source = Some(source);
        view.mount_root = Some(root);
    }
}

/// The caller's `CUDA_DEVICE_MAX_CONNECTIONS` (`max_connections`) and, when `daemon` is the
/// PID the lock proves, the `Max open files` line of its `limits`.
pub fn observe_capacity(
    proc_root: &Path,
    daemon: Option<i64>,
    max_connections: Option<OsText>,
) -> CapacityFacts {
    let mut facts = CapacityFacts {
        device_max_connections: max_connections,
        daemon_pid: daemon,
        ..CapacityFacts::default()
    };
    let Some(pid) = daemon else {
        return facts;
    };
    match read_capped(proc_root, pid, "limits", LIMITS_CAP) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            facts.daemon_max_open_files = text
                .lines()
                .find_map(|line| line.strip_prefix("Max open files"))
                .map(|rest| rest.trim().to_owned());
            if facts.daemon_max_open_files.is_none() {
                facts.daemon_limits_error = Some("no \"Max open files\" line".to_owned());
            }
        }
        Err(error) => facts.daemon_limits_error = Some(error),
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_dev_shm_mount_line_is_recorded() {
        let mut view = view(Path::new("/nonexistent-shm"), true);
        assert!(view.errors.contains_key("stat"));
        let info = b"22 1 0:21 / /dev/shm rw - tmpfs tmpfs rw\n40 22 0:50 /sub /dev/shm rw - tmpfs tmpfs rw\n41 1 0:51 / /dev/shm2 rw\n".to_vec();
        mount_line(&mut view, Ok(info));
        assert_eq!(view.mount_source.as_deref(), Some("0:50"));
        assert_eq!(view.mount_root.as_deref(), Some("/sub"));
    }

    #[test]
    fn capacity_reads_the_open_files_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("7")).unwrap();
        std::fs::write(
            dir.path().join("7/limits"),
            "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 524288               files     \n",
        )
        .unwrap();
        let facts = observe_capacity(dir.path(), Some(7), None);
        assert_eq!(
            facts.daemon_max_open_files.as_deref(),
            Some("1024                 524288               files")
        );
        let facts = observe_capacity(dir.path(), Some(8), None);
        assert!(facts.daemon_limits_error.is_some());
    }
}
