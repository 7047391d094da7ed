//! The `/proc` observation against fake `/proc` trees (real files in a temp directory): the
//! daemon found by a scan, the pid file's daemon, hidden processes, and the scan's bounds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::Path;
use std::time::{Duration, Instant};

use mps_host::{find_daemon, observe_process};
use sharing_policy::{CapturedText, DaemonSearchMethod, OsText, PidFileFacts};

/// Writes `root/<pid>/{status,comm,cmdline,environ}`; `None` leaves a file out.
fn fake_process(
    root: &Path,
    pid: u32,
    uid: u32,
    comm: &str,
    cmdline: Option<&[&str]>,
    environ: Option<&[&str]>,
) {
    let dir = root.join(pid.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("status"),
        format!(
            "Name:\t{comm}\nUmask:\t0022\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t0\t0\t0\t0\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
    let nul = |items: &[&str]| items.iter().fold(String::new(), |all, i| all + i + "\0");
    if let Some(cmdline) = cmdline {
        std::fs::write(dir.join("cmdline"), nul(cmdline)).unwrap();
    }
    if let Some(environ) = environ {
        std::fs::write(dir.join("environ"), nul(environ)).unwrap();
    }
}

fn no_pid_file() -> PidFileFacts {
    PidFileFacts {
        path: OsText::from("/tmp/nvidia-mps/nvidia-cuda-mps-control.pid"),
        contents: None,
        error: Some("No such file or directory (os error 2)".to_owned()),
        pid_alive: None,
        process_name: None,
    }
}

fn later() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

#[test]
fn a_scan_records_every_daemon_named_process_with_its_raw_facts() {
    let root = tempfile::tempdir().unwrap();
    fake_process(
        root.path(),
        2718,
        0,
        "nvidia-cuda-mps",
        Some(&["nvidia-cuda-mps-control", "-d", "-m"]),
        Some(&[
            "HOME=/root",
            "CUDA_VISIBLE_DEVICES=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
            "CUDA_MPS_PROTOCOL_VERSION=2",
        ]),
    );
    fake_process(
        root.path(),
        4428,
        1001,
        "nvidia-cuda-mps",
        Some(&["nvidia-cuda-mps-server"]),
        Some(&[]),
    );
    fake_process(root.path(), 1, 0, "systemd", Some(&["/sbin/init"]), None);
    std::fs::create_dir(root.path().join("self")).unwrap();

    let search = find_daemon(root.path(), &no_pid_file(), 1000, later());

    assert_eq!(search.method, DaemonSearchMethod::ProcScan);
    assert_eq!(search.scanned, 4);
    assert_eq!(search.stopped, None);
    let mut pids: Vec<i64> = search.processes.iter().map(|p| p.pid).collect();
    pids.sort_unstable();
    assert_eq!(pids, [2718, 4428], "only nvidia-cuda-mps processes");
    let daemon = search.processes.iter().find(|p| p.pid == 2718).unwrap();
    assert_eq!(daemon.status_uid.as_deref(), Some("0\t0\t0\t0"));
    assert_eq!(daemon.comm.as_deref(), Some("nvidia-cuda-mps"));
    assert_eq!(
        daemon.cmdline.as_deref().unwrap(),
        [
            OsText::from("nvidia-cuda-mps-control"),
            OsText::from("-d"),
            OsText::from("-m")
        ]
    );
    let environ = daemon.environ.as_ref().unwrap();
    assert_eq!(environ.len(), 2, "{environ:?}");
    assert_eq!(
        environ["CUDA_VISIBLE_DEVICES"],
        OsText::from("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6")
    );
    assert_eq!(environ["CUDA_MPS_PROTOCOL_VERSION"], OsText::from("2"));
}

#[test]
fn an_unreadable_environment_is_recorded_as_its_error() {
    // What hidepid or another user's process looks like: the file cannot be read.
    let root = tempfile::tempdir().unwrap();
    fake_process(
        root.path(),
        2718,
        0,
        "nvidia-cuda-mps",
        Some(&["nvidia-cuda-mps-control", "-d"]),
        None,
    );
    let process = observe_process(root.path(), 2718, true);
    assert!(process.environ.is_none());
    assert!(
        process.errors["environ"].contains("No such file"),
        "{:?}",
        process.errors
    );
    let gone = observe_process(root.path(), 9999, false);
    assert!(gone.status_uid.is_none() && gone.comm.is_none());
    assert!(gone.errors.contains_key("status") && gone.errors.contains_key("comm"));
}

#[test]
fn a_pid_file_daemon_is_read_without_a_scan() {
    let root = tempfile::tempdir().unwrap();
    fake_process(
        root.path(),
        2718,
        0,
        "nvidia-cuda-mps",
        Some(&["nvidia-cuda-mps-control", "-d"]),
        Some(&[]),
    );
    let pid_file = PidFileFacts {
        contents: Some(CapturedText::from_bytes(b"2718", false)),
        error: None,
        pid_alive: Some(true),
        process_name: Some("nvidia-cuda-mps".to_owned()),
        ..no_pid_file()
    };
    let search = find_daemon(root.path(), &pid_file, 1000, later());
    assert_eq!(search.method, DaemonSearchMethod::PidFile);
    assert_eq!(search.scanned, 0);
    assert_eq!(search.processes.len(), 1);
    assert_eq!(
        search.processes[0]
            .environ
            .as_ref()
            .map(std::collections::BTreeMap::len),
        Some(0)
    );
}

#[test]
fn a_scan_of_ten_thousand_entries_stops_at_its_bounds() {
    let root = tempfile::tempdir().unwrap();
    for pid in 1..=10_000 {
        std::fs::create_dir(root.path().join(pid.to_string())).unwrap();
    }
    let bounded = find_daemon(root.path(), &no_pid_file(), 1000, later());
    assert_eq!(bounded.scanned, 1000);
    assert_eq!(bounded.stopped.as_deref(), Some("limit"));
    let full = find_daemon(root.path(), &no_pid_file(), 65_536, later());
    assert_eq!(full.scanned, 10_000);
    assert_eq!(full.stopped, None);
    let late = find_daemon(root.path(), &no_pid_file(), 65_536, Instant::now());
    assert_eq!(late.scanned, 0);
    assert_eq!(late.stopped.as_deref(), Some("deadline"));
    let missing = find_daemon(&root.path().join("nope"), &no_pid_file(), 10, later());
    assert!(missing.error.is_some());
}
