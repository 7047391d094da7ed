//! `cargo bench -p mps-host`: the cost of the `/proc` scan that finds a 470/535 control daemon
//! (no pid file), on fake `/proc` trees of 1,000 and 10,000 processes (each with `comm` and
//! `status`, one of them the daemon). The trees live on the real filesystem under the system
//! temp directory, so a scan pays real `readdir` and `open` costs; a real `/proc` is served by
//! the kernel and is usually cheaper per entry. BENCHMARKS.md has the figures.

// A benchmark is not shipped code: a tree that cannot be built should fail loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::path::Path;
use std::time::{Duration, Instant};

use divan::Bencher;
use sharing_policy::{OsText, PidFileFacts};

fn main() {
    divan::main();
}

/// A fake `/proc` with `count` processes named `bash`, and the daemon as the last one.
fn tree(count: u32) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for pid in 1..=count {
        let dir = root.path().join(pid.to_string());
        std::fs::create_dir(&dir).unwrap();
        let comm = if pid == count {
            "nvidia-cuda-mps"
        } else {
            "bash"
        };
        std::fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
        std::fs::write(dir.join("status"), "Name:\tx\nUid:\t0\t0\t0\t0\n").unwrap();
        if pid == count {
            std::fs::write(dir.join("cmdline"), "nvidia-cuda-mps-control\0-d\0").unwrap();
            std::fs::write(dir.join("environ"), "CUDA_VISIBLE_DEVICES=GPU-1\0").unwrap();
        }
    }
    root
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

/// The lock of a pipe directory that does not exist: it proves nothing, so the search scans.
fn no_lock() -> sharing_policy::DaemonLockFacts {
    mps_host::observe_daemon_lock(Path::new("/proc"), &OsText::from("/nonexistent/pipe"))
}

fn scan(root: &Path) -> usize {
    let deadline = Instant::now() + Duration::from_mins(1);
    let search = mps_host::find_daemon(root, &no_pid_file(), no_lock(), 65_536, deadline);
    assert!(search.stopped.is_none());
    search.processes.len()
}

#[divan::bench(args = [1_000, 10_000], sample_count = 20, sample_size = 1)]
fn find_daemon_by_scan(bencher: Bencher<'_, '_>, processes: u32) {
    let root = tree(processes);
    bencher.bench(|| assert_eq!(scan(divan::black_box(root.path())), 1));
}

/// The real `/proc` of this machine, for comparison.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn find_daemon_by_scan_real_proc(bencher: Bencher<'_, '_>) {
    bencher.bench(|| {
        let deadline = Instant::now() + Duration::from_mins(1);
        let root = Path::new("/proc");
        mps_host::find_daemon(root, &no_pid_file(), no_lock(), 65_536, deadline).scanned
    });
}
