//! The daemon's lock asked with `fcntl(F_GETLK)`, against real processes holding real POSIX
//! locks on `control_lock` (a small C program, so that the lock is another process's): a
//! whole-file write lock is proven without reading `/proc/locks`; a lock on part of the file,
//! no lock, or another `/proc` root falls back to the kernel's table, as before.

use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use mps_host::{LOCK_FILE_NAME, observe_daemon_lock};
use sharing_policy::{Code, LockTestFacts, OsText, Request, lock_holder_pid, validate};

/// A program that takes a write lock on `argv[1]` from byte 0 for `argv[2]` bytes (0: to the
/// end), a POSIX one or, with `argv[3]` `ofd`, an open file description's, prints `locked` and
/// waits to be killed.
const HOLDER: &str = r#"#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_RDWR | O_CREAT, 0666);
    struct flock lock = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = atol(argv[2]) };
    int ofd = argc > 3 && strcmp(argv[3], "ofd") == 0;
    if (fd < 0 || fcntl(fd, ofd ? F_OFD_SETLKW : F_SETLKW, &lock) != 0) return 1;
    printf("locked\n");
    fflush(stdout);
    pause();
    return 0;
}
"#;

struct Holder {
    child: Child,
    pipe: tempfile::TempDir,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pipe directory whose `control_lock` another process holds, `length` bytes from 0.
fn held(length: u64) -> Holder {
    held_as(length, "posix")
}

/// [`held`], the lock taken as `kind`: `posix` or `ofd`.
fn held_as(length: u64, kind: &str) -> Holder {
    let pipe = tempfile::tempdir().unwrap();
    let program = crate::common::compile_c(pipe.path(), "holder", HOLDER);
    #[allow(clippy::disallowed_methods, reason = "test harness: the lock holder")]
    let mut child = Command::new(&program)
        .arg(pipe.path().join(LOCK_FILE_NAME))
        .arg(length.to_string())
        .arg(kind)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "locked\n");
    Holder { child, pipe }
}

fn pipe_of(dir: &Path) -> OsText {
    OsText::from_bytes(dir.as_os_str().as_bytes().to_vec())
}

#[test]
fn a_whole_file_write_lock_is_proven_by_the_test_without_the_table() {
    let holder = held(0);
    let facts = observe_daemon_lock(Path::new("/proc"), &pipe_of(holder.pipe.path()));
    let pid = i64::from(holder.child.id());
    assert_eq!(
        facts.test,
        Some(LockTestFacts {
            lock: "write".to_owned(),
            start: 0,
            length: 0,
            pid,
        }),
        "{facts:?}"
    );
    assert_eq!(facts.locks, None, "the table is not read: {facts:?}");
    assert_eq!(lock_holder_pid(&facts), Some(pid));
}

#[test]
fn a_lock_on_part_of_the_file_is_judged_from_the_table() {
    let holder = held(1);
    let facts = observe_daemon_lock(Path::new("/proc"), &pipe_of(holder.pipe.path()));
    let pid = i64::from(holder.child.id());
    assert_eq!(
        facts.test.as_ref().map(|t| (t.length, t.pid)),
        Some((1, pid))
    );
    let lines = facts.locks.as_ref().unwrap();
    assert_eq!(lines.len(), 1, "{facts:?}");
    assert!(
        lines[0].contains(&format!("POSIX  ADVISORY  WRITE {pid} ")),
        "{facts:?}"
    );
}

#[test]
fn no_lock_and_another_proc_root_fall_back_to_the_table() {
    let holder = held(0);
    let pipe = pipe_of(holder.pipe.path());
    // Another /proc root: its PIDs may be another namespace's, so no test is asked.
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("locks"), "").unwrap();
    let other = observe_daemon_lock(root.path(), &pipe);
    assert_eq!(
        (other.test.as_ref(), other.locks.as_deref()),
        (None, Some(&[][..]))
    );
    assert_eq!(lock_holder_pid(&other), None);
    drop(holder);

    let free = tempfile::tempdir().unwrap();
    std::fs::write(free.path().join(LOCK_FILE_NAME), "").unwrap();
    let facts = observe_daemon_lock(Path::new("/proc"), &pipe_of(free.path()));
    assert_eq!(facts.test.as_ref().map(|t| t.lock.as_str()), Some("none"));
    assert_eq!(facts.locks.as_deref(), Some(&[][..]), "{facts:?}");
    assert_eq!(lock_holder_pid(&facts), None);
}

/// Any user can open the 0666 `control_lock` and take an open file description's lock on it
/// when no daemon holds it: `F_GETLK` names no process for it (-1), so nothing is proven, and
/// the table's `OFDLCK` line proves nothing either; no build panics on it.
#[test]
fn an_open_file_description_lock_proves_nothing() {
    let holder = held_as(0, "ofd");
    let facts = observe_daemon_lock(Path::new("/proc"), &pipe_of(holder.pipe.path()));
    let tested = facts.test.as_ref().unwrap();
    assert_eq!(
        (tested.lock.as_str(), tested.pid),
        ("write", -1),
        "{facts:?}"
    );
    let lines = facts.locks.as_ref().unwrap();
    assert!(lines[0].contains("OFDLCK ADVISORY  WRITE -1 "), "{facts:?}");
    assert_eq!(lock_holder_pid(&facts), None);
}

/// Another user (`nobody`, through `setpriv`) holding the whole 0666 `control_lock` in a
/// root-owned, world-writable pipe directory, beside a control front-end that answers live:
/// `F_GETLK` names that process, and it is never taken as the daemon, so the daemon's identity
/// is unverified (a rejection under `--require-verified`), never proven.
#[test]
fn another_users_lock_in_a_shared_directory_proves_no_daemon() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED another_users_lock_in_a_shared_directory_proves_no_daemon: needs root");
        return;
    }
    let dir = crate::common::short_tempdir("lockn");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let holder = crate::common::compile_c(dir.path(), "holder", HOLDER);
    let pipe = dir.path().join("pipe");
    std::fs::create_dir(&pipe).unwrap();
    std::fs::set_permissions(&pipe, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let lock = pipe.join(LOCK_FILE_NAME);
    std::fs::write(&lock, "").unwrap();
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o666)).unwrap();
    #[allow(clippy::disallowed_methods, reason = "test harness: the hostile user")]
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&holder)
        .arg(&lock)
        .arg("0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // The holder is killed, then the directory removed, when the test ends.
    let holder = Holder { child, pipe: dir };
    let dir = holder.pipe.path();
    assert_eq!(line, "locked\n");

    std::fs::create_dir(dir.join("bin")).unwrap();
    crate::common::shared_fake_daemon(dir, &[]);
    let _control = std::os::unix::net::UnixListener::bind(pipe.join("control")).unwrap();
    crate::common::fake_program(
        &dir.join("bin"),
        "nvidia-smi",
        "echo 'Default, 550.163.01, Enabled, None, No, No, No, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0'",
    );
    let env = sharing_policy::EnvFacts {
        cuda_mps_pipe_directory: Some(pipe_of(&pipe)),
        ..sharing_policy::EnvFacts::default()
    };
    let options = mps_host::ProbeOptions {
        timeout: Duration::from_secs(5),
        search_path: Some(dir.join("bin").into_os_string()),
        ..mps_host::ProbeOptions::default()
    };
    let facts = crate::common::capture_on(env, &options);
    let search = facts.daemon_process.as_ref().unwrap();
    let tested = search.lock.as_ref().and_then(|l| l.test.as_ref()).unwrap();
    assert_eq!(tested.pid, i64::from(holder.child.id()), "{search:?}");

    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    let evidence = validate(&request, &facts).unwrap();
    assert_eq!(evidence.daemon_pid, None, "{evidence:?}");
    assert!(
        evidence
            .unverified
            .contains(&Code::DaemonIdentityUnverified),
        "{evidence:?}"
    );
    let strict = Request {
        require_verified: true,
        ..request
    };
    let rejection = validate(&strict, &facts).unwrap_err();
    assert_eq!(
        rejection.code(),
        Code::DaemonIdentityUnverified,
        "{rejection}"
    );
    assert!(
        rejection.to_string().contains("runs as uid 65534"),
        "{rejection}"
    );
}
