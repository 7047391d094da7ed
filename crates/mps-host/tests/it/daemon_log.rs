//! The daemon's log as `mps-host` reads it: real files, FIFOs and links. Each read is one
//! bounded read of the file's tail; a FIFO never blocks and a link is never followed.

use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

use mps_host::{observe_log_directory, read_tail};
use sharing_policy::{LOG_TAIL_CAP, OsText};

fn text(path: &Path) -> OsText {
    OsText::from_bytes(path.as_os_str().as_bytes().to_vec())
}

#[test]
fn a_small_log_is_read_whole_and_an_absent_server_log_is_recorded_as_absent() {
    let dir = tempfile::tempdir().unwrap();
    let line = "[2026-05-31 23:48:21.748 Control 11107] NEW SERVER 11803: Ready\n";
    std::fs::write(dir.path().join("control.log"), line).unwrap();
    let log = observe_log_directory(&text(dir.path()));
    assert_eq!(log.files.len(), 2);
    let control = &log.files[0];
    assert_eq!(control.text.as_deref(), Some(line));
    assert_eq!(control.size, Some(line.len() as u64));
    assert!(!control.cut_at_start && control.error.is_none());
    let server = &log.files[1];
    assert_eq!(server.errno, Some(2), "{server:?}");
    assert!(server.text.is_none());
}

#[test]
fn a_50_mib_log_is_read_only_at_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.log");
    let mut file = std::fs::File::create(&path).unwrap();
    let filler = "[2026-05-31 23:48:21.748 Control 11107] Accepting connection...\n".repeat(1024);
    while file.metadata().unwrap().len() < 50 * 1024 * 1024 {
        file.write_all(filler.as_bytes()).unwrap();
    }
    let last = "[2026-05-31 23:48:22.000 Control 11107] NEW SERVER 42: Ready\n";
    file.write_all(last.as_bytes()).unwrap();
    drop(file);
    let size = std::fs::metadata(&path).unwrap().len();
    let started = Instant::now();
    let tail = read_tail(&text(&path));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(tail.size, Some(size));
    assert!(tail.cut_at_start);
    let read = tail.text.unwrap();
    assert_eq!(read.len() as u64, LOG_TAIL_CAP);
    assert!(read.ends_with(last));
}

#[test]
fn a_fifo_is_not_read_and_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.log");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .unwrap();
    let started = Instant::now();
    let tail = read_tail(&text(&path));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(tail.text.is_none());
    assert!(
        tail.error
            .as_deref()
            .unwrap()
            .contains("not a regular file"),
        "{tail:?}"
    );
}

#[test]
fn a_symbolic_link_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere.log");
    std::fs::write(&target, "[x Control 1] NEW SERVER 1: Ready\n").unwrap();
    let path = dir.path().join("control.log");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let tail = read_tail(&text(&path));
    assert!(tail.text.is_none());
    assert!(
        tail.error.as_deref().unwrap().contains("symbolic link"),
        "{tail:?}"
    );
    assert_eq!(tail.errno, Some(40));
}

#[test]
fn a_directory_or_a_rotated_away_log_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("control.log")).unwrap();
    let tail = read_tail(&text(&dir.path().join("control.log")));
    assert!(tail.text.is_none() && tail.error.is_some(), "{tail:?}");
    std::fs::write(dir.path().join("control.log.1"), "old\n").unwrap();
    let gone = read_tail(&text(&dir.path().join("server.log")));
    assert_eq!(gone.errno, Some(2));
}

#[test]
fn an_unproven_daemon_leaves_the_directory_unknown() {
    let facts = sharing_policy::HostFacts::unobserved("linux", sharing_policy::EnvFacts::default());
    let log = mps_host::observe_daemon_log(&facts, &OsText::from("/tmp/nvidia-mps"));
    assert!(log.directory.is_none() && log.files.is_empty());
    assert!(log.unknown.unwrap().contains("not proven"));
}
