//! Control-pipe and pid-file observation against real filesystem objects: a bound Unix socket, a
//! FIFO, a regular file, a directory, symlinks, an over-long path, and sockets seen by an
//! unprivileged user (this test binary re-runs itself under `setpriv`).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Command;

use crate::common::daemon::os_text;
use crate::common::short_tempdir;
use mps_host::{PID_FILE_CAP, observe_control_pipe, observe_pid_file};
use sharing_policy::{EnvFacts, FileKind, OsText, PidFileFacts, PipeFacts};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn env_for(dir: &Path) -> EnvFacts {
    EnvFacts {
        cuda_mps_pipe_directory: Some(os_text(dir)),
        ..EnvFacts::default()
    }
}

fn observe(dir: &Path) -> PipeFacts {
    observe_control_pipe(&env_for(dir))
}

#[allow(
    clippy::disallowed_methods,
    reason = "test: runs mkfifo, setpriv and helper processes"
)]
fn command(program: &str) -> Command {
    Command::new(program)
}

#[test]
fn a_bound_unix_socket_is_a_socket_with_its_mode_and_owner() {
    let dir = short_tempdir("sock");
    let _listener = UnixListener::bind(dir.path().join("control")).unwrap();
    chmod(&dir.path().join("control"), 0o666);

    let facts = observe(dir.path());

    assert_eq!(facts.directory, os_text(dir.path()));
    assert_eq!(facts.path, os_text(&dir.path().join("control")));
    assert_eq!(facts.path_len, dir.path().join("control").as_os_str().len());
    for stat in [&facts.lstat, &facts.stat] {
        assert_eq!(stat.kind, FileKind::Socket);
        assert_eq!(stat.mode, Some(0o666));
        assert_eq!(stat.uid, Some(euid()));
        assert_eq!(stat.gid, Some(rustix::process::getegid().as_raw()));
        assert_eq!(stat.error, None);
    }
    assert_eq!(facts.access.uid, Some(euid()));
    assert_eq!(facts.access.read_write, Some(true));
    assert_eq!(facts.access.directory_traversable, Some(true));
    assert_eq!(facts.access.error, None);
}

#[test]
fn a_fifo_a_regular_file_and_a_directory_are_recorded_as_what_they_are() {
    let fifo = short_tempdir("fifo");
    let status = command("mkfifo")
        .arg(fifo.path().join("control"))
        .status()
        .unwrap();
    assert!(status.success());
    chmod(&fifo.path().join("control"), 0o640);
    let regular = short_tempdir("file");
    std::fs::write(regular.path().join("control"), b"not a socket").unwrap();
    let directory = short_tempdir("dir");
    std::fs::create_dir(directory.path().join("control")).unwrap();

    let cases = [
        (fifo.path(), FileKind::Fifo, 0o640),
        (regular.path(), FileKind::Regular, 0o644),
        (directory.path(), FileKind::Directory, 0o755),
    ];
    for (dir, kind, mode) in cases {
        chmod(&dir.join("control"), mode);
        let facts = observe(dir);
        assert_eq!((facts.lstat.kind, facts.stat.kind), (kind, kind), "{dir:?}");
        assert_eq!(facts.lstat.mode, Some(mode));
    }
}

#[test]
fn symlinks_are_recorded_by_lstat_and_followed_by_stat() {
    let dangling = short_tempdir("dang");
    std::os::unix::fs::symlink("/nonexistent/mps/control", dangling.path().join("control"))
        .unwrap();
    let to_socket = short_tempdir("lnk");
    let _listener = UnixListener::bind(to_socket.path().join("real")).unwrap();
    std::os::unix::fs::symlink("real", to_socket.path().join("control")).unwrap();

    let facts = observe(dangling.path());
    assert_eq!(facts.lstat.kind, FileKind::Symlink);
    assert_eq!(facts.stat.kind, FileKind::Missing);
    assert!(
        facts
            .stat
            .error
            .as_deref()
            .unwrap()
            .contains("No such file")
    );
    assert_eq!(facts.stat.mode, None);

    let facts = observe(to_socket.path());
    assert_eq!(facts.lstat.kind, FileKind::Symlink);
    assert_eq!(facts.stat.kind, FileKind::Socket);
}

#[test]
fn a_missing_entry_a_missing_directory_and_a_file_in_the_way_are_recorded() {
    let empty = short_tempdir("empty");
    let facts = observe(empty.path());
    assert_eq!(
        (facts.lstat.kind, facts.stat.kind),
        (FileKind::Missing, FileKind::Missing)
    );
    assert_eq!(facts.access.directory_traversable, Some(true));
    assert_eq!(
        facts.access.read_write, None,
        "neither allowed nor denied: not there"
    );
    assert!(
        facts
            .access
            .error
            .as_deref()
            .unwrap()
            .contains("No such file")
    );

    let facts = observe(&empty.path().join("missing"));
    assert_eq!(facts.lstat.kind, FileKind::Missing);
    assert_eq!(facts.access.directory_traversable, None);
    assert!(facts.access.error.as_deref().unwrap().contains("missing"));

    std::fs::write(empty.path().join("file"), b"").unwrap();
    let facts = observe(&empty.path().join("file"));
    assert_eq!(facts.lstat.kind, FileKind::Unknown);
    assert!(
        facts
            .lstat
            .error
            .as_deref()
            .unwrap()
            .contains("Not a directory"),
        "{facts:?}"
    );
}

#[test]
fn an_over_long_socket_path_is_recorded_with_its_length() {
    // `sun_path` holds 107 bytes plus the terminator, so no socket can be bound at such a path:
    // the daemon fails the same way (F13). A regular file stands in for the entry.
    let base = short_tempdir("long");
    let dir = base.path().join("d".repeat(60)).join("e".repeat(60));
    std::fs::create_dir_all(&dir).unwrap();
    let control = dir.join("control");
    assert!(
        UnixListener::bind(&control).is_err(),
        "the kernel refuses paths this long"
    );
    std::fs::write(&control, b"").unwrap();

    let facts = observe(&dir);

    assert_eq!(facts.path_len, control.as_os_str().len());
    assert!(facts.path_len > 107, "{}", facts.path_len);
    assert_eq!(facts.lstat.kind, FileKind::Regular);
}

#[test]
fn a_directory_name_that_is_not_utf8_is_kept_byte_for_byte() {
    let base = short_tempdir("raw");
    let name = std::ffi::OsStr::from_bytes(b"pipe-\xff");
    let dir = base.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    let _listener = UnixListener::bind(dir.join("control")).unwrap();

    let facts = observe(&dir);

    assert!(matches!(facts.directory, OsText::Bytes { .. }));
    assert!(facts.path.as_bytes().ends_with(b"pipe-\xff/control"));
    assert_eq!(facts.lstat.kind, FileKind::Socket);
}

#[test]
fn a_trailing_slash_is_not_doubled() {
    let dir = short_tempdir("slash");
    let mut with_slash = dir.path().as_os_str().as_bytes().to_vec();
    with_slash.push(b'/');
    let env = EnvFacts {
        cuda_mps_pipe_directory: Some(OsText::from_bytes(with_slash)),
        ..EnvFacts::default()
    };
    let facts = observe_control_pipe(&env);
    assert_eq!(facts.path, os_text(&dir.path().join("control")));
}

// ---- the pid file ----

fn pid_file_with(contents: &[u8]) -> (tempfile::TempDir, PidFileFacts) {
    let dir = short_tempdir("pid");
    std::fs::write(dir.path().join("nvidia-cuda-mps-control.pid"), contents).unwrap();
    let facts = observe_pid_file(&env_for(dir.path()));
    (dir, facts)
}

#[test]
fn a_pid_file_naming_a_live_process_records_its_name() {
    let me = std::process::id();
    let (dir, facts) = pid_file_with(me.to_string().as_bytes());

    assert_eq!(
        facts.path,
        os_text(&dir.path().join("nvidia-cuda-mps-control.pid"))
    );
    assert_eq!(facts.contents.as_ref().unwrap().text, me.to_string());
    assert_eq!(facts.error, None);
    assert_eq!(facts.pid_alive, Some(true));
    let comm = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap();
    assert_eq!(facts.process_name.as_deref(), Some(comm.trim_end()));
}

#[test]
fn a_pid_file_naming_a_dead_or_zombie_process_says_not_alive() {
    let mut child = command("true").spawn().unwrap();
    let zombie = child.id();
    // Not yet reaped: a zombie, which `kill(pid, 0)` alone would call alive.
    assert!(crate::common::eventually(
        std::time::Duration::from_secs(10),
        || { crate::common::process_state(i32::try_from(zombie).unwrap()) == Some('Z') }
    ));
    let (_dir, facts) = pid_file_with(zombie.to_string().as_bytes());
    assert_eq!(facts.pid_alive, Some(false));

    child.wait().unwrap();
    let (_dir, facts) = pid_file_with(zombie.to_string().as_bytes());
    assert_eq!(facts.pid_alive, Some(false), "reaped: no such process");
    assert_eq!(facts.process_name, None);
}

#[test]
fn a_pid_file_that_is_not_a_pid_is_recorded_raw() {
    let (_dir, facts) = pid_file_with(b"abc\n");
    assert_eq!(facts.contents.as_ref().unwrap().text, "abc\n");
    assert_eq!(facts.pid_alive, None);
    assert_eq!(facts.process_name, None);

    let (_dir, facts) = pid_file_with(b"\xff\xfe");
    assert!(facts.contents.as_ref().unwrap().non_utf8);
    assert_eq!(facts.pid_alive, None);
}

#[test]
fn a_large_pid_file_is_read_only_up_to_the_cap() {
    let (_dir, facts) = pid_file_with(&vec![b'7'; 100_000]);
    let contents = facts.contents.unwrap();
    assert_eq!(contents.text.len(), PID_FILE_CAP);
    assert!(contents.truncated);
    assert_eq!(facts.pid_alive, None);
}

#[test]
fn a_pid_file_that_is_missing_a_fifo_a_directory_or_a_symlink_is_not_read() {
    let dir = short_tempdir("pidk");
    let pid_path = dir.path().join("nvidia-cuda-mps-control.pid");
    let facts = observe_pid_file(&env_for(dir.path()));
    assert!(
        facts.error.as_deref().unwrap().contains("No such file"),
        "{facts:?}"
    );
    assert_eq!(facts.contents, None);

    // A FIFO would block a plain open() until a writer came: it must not.
    assert!(command("mkfifo").arg(&pid_path).status().unwrap().success());
    let facts = observe_pid_file(&env_for(dir.path()));
    assert_eq!(facts.contents, None);
    assert!(
        facts.error.as_deref().unwrap().contains("fifo"),
        "{facts:?}"
    );
    std::fs::remove_file(&pid_path).unwrap();

    std::fs::create_dir(&pid_path).unwrap();
    let facts = observe_pid_file(&env_for(dir.path()));
    assert!(
        facts.error.as_deref().unwrap().contains("directory"),
        "{facts:?}"
    );
    std::fs::remove_dir(&pid_path).unwrap();

    std::fs::write(dir.path().join("elsewhere"), std::process::id().to_string()).unwrap();
    std::os::unix::fs::symlink("elsewhere", &pid_path).unwrap();
    let facts = observe_pid_file(&env_for(dir.path()));
    assert_eq!(facts.contents, None);
    assert!(
        facts.error.as_deref().unwrap().contains("symbolic link"),
        "{facts:?}"
    );
}

// ---- as an unprivileged user ----

const INNER_ENV: &str = "MPS_HOST_TEST_INNER_PIPE_DIR";
const MARKER: &str = "MPS_HOST_FACTS ";

/// Not a test of its own: the body `observed_as_nobody` runs (as UID 65534) in a child copy of
/// this binary. Without the variable it does nothing.
#[test]
fn inner_observe_as_current_user() {
    let Some(dir) = std::env::var_os(INNER_ENV) else {
        return;
    };
    let env = env_for(Path::new(&dir));
    let facts = serde_json::json!({
        "pipe": observe_control_pipe(&env),
        "pid_file": observe_pid_file(&env),
    });
    println!("\n{MARKER}{facts}");
}

/// Runs `inner_observe_as_current_user` as `nobody` against `dir`, or `None` (after saying why)
/// when that is not possible here.
fn observed_as_nobody(dir: &Path) -> Option<(PipeFacts, PidFileFacts)> {
    if euid() != 0 {
        eprintln!(
            "skipping: dropping privileges needs root (running as UID {})",
            euid()
        );
        return None;
    }
    if command("setpriv").arg("--version").output().is_err() {
        eprintln!("skipping: setpriv (util-linux) is not installed");
        return None;
    }
    // `nobody` must be able to reach the test binary: give it a copy (or a hard link) in a
    // world-readable directory.
    let bin = short_tempdir("bin");
    chmod(bin.path(), 0o755);
    let exe = std::env::current_exe().unwrap();
    let copy = bin.path().join("inner");
    if std::fs::hard_link(&exe, &copy).is_err() {
        std::fs::copy(&exe, &copy).unwrap();
    }
    chmod(&copy, 0o755);
    let output = crate::common::output_when_not_busy(|| {
        command("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy)
            .args([
                "--exact",
                "filesystem::inner_observe_as_current_user",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(INNER_ENV, dir)
            .output()
            .unwrap()
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "inner run failed: {stdout}\n{stderr}"
    );
    // libtest prints `test … ... ` on the same line first.
    let line = stdout
        .lines()
        .find_map(|line| line.split_once(MARKER).map(|(_, json)| json));
    let line = line.unwrap_or_else(|| panic!("no facts from the inner run: {stdout}\n{stderr}"));
    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
    let pipe = serde_json::from_value(value["pipe"].take()).unwrap();
    let pid_file = serde_json::from_value(value["pid_file"].take()).unwrap();
    Some((pipe, pid_file))
}

#[test]
fn a_0600_socket_of_another_user_is_not_usable_but_its_directory_is_traversable() {
    let dir = short_tempdir("priv");
    chmod(dir.path(), 0o755);
    let _listener = UnixListener::bind(dir.path().join("control")).unwrap();
    chmod(&dir.path().join("control"), 0o600);
    // PID 1 belongs to root: as nobody, kill(1, 0) fails with EPERM, which still means alive.
    std::fs::write(dir.path().join("nvidia-cuda-mps-control.pid"), b"1").unwrap();
    chmod(&dir.path().join("nvidia-cuda-mps-control.pid"), 0o644);

    let Some((pipe, pid_file)) = observed_as_nobody(dir.path()) else {
        return;
    };

    assert_eq!(pipe.access.uid, Some(65534));
    assert_eq!(pipe.lstat.kind, FileKind::Socket);
    assert_eq!(pipe.lstat.mode, Some(0o600));
    assert_eq!(pipe.lstat.uid, Some(0));
    assert_eq!(pipe.access.directory_traversable, Some(true));
    assert_eq!(pipe.access.read_write, Some(false));
    assert_eq!(
        pid_file.pid_alive,
        Some(true),
        "EPERM means the process exists"
    );
}

#[test]
fn a_socket_in_a_0700_directory_of_another_user_cannot_be_reached() {
    let dir = short_tempdir("priv");
    chmod(dir.path(), 0o700);
    let _listener = UnixListener::bind(dir.path().join("control")).unwrap();
    chmod(&dir.path().join("control"), 0o666);

    let Some((pipe, pid_file)) = observed_as_nobody(dir.path()) else {
        return;
    };

    assert_eq!(pipe.access.directory_traversable, Some(false));
    assert_eq!(pipe.access.read_write, Some(false));
    assert!(
        pipe.access
            .error
            .as_deref()
            .unwrap()
            .contains("Permission denied")
    );
    // The entry cannot even be stat'ed: its kind is unknown, with the error recorded.
    assert_eq!(pipe.lstat.kind, FileKind::Unknown);
    assert!(
        pipe.lstat
            .error
            .as_deref()
            .unwrap()
            .contains("Permission denied")
    );
    assert!(
        pid_file
            .error
            .as_deref()
            .unwrap()
            .contains("Permission denied")
    );
}
