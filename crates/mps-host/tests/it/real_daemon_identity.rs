//! The control daemon's identity against the real daemon (535 and 550, `-d`, no GPU) and a
//! hostile local user (`nobody`, through `setpriv`) on the same node: a look-alike process
//! whose argv, `comm` and environment read like a multi-user daemon's, the pid file rewritten,
//! created, or replaced by a FIFO or a symbolic link in the world-writable pipe directory. The
//! daemon facts judged are always the real daemon's, which holds the lock; the look-alike is
//! never named.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::daemon::{Daemon, binary_or_skip};
use sharing_policy::{Code, DaemonSearchMethod, Request, validate};

const GPU_A: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
const GPU_B: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";
const NOBODY: &str = "65534";

/// A fake `nvidia-smi` beside the daemon's front-end listing two H100s (A, then B).
fn two_gpus(daemon: &Daemon) {
    crate::common::fake_program(
        &daemon.bin_dir,
        "nvidia-smi",
        &format!(
            "printf 'Default, 550.163.01, Enabled, None, No, No, No, 0, {GPU_A}, NVIDIA H100 80GB HBM3, 00000000:18:00.0\\n\
             Default, 550.163.01, Enabled, None, No, No, No, 1, {GPU_B}, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\\n'"
        ),
    );
}

/// A program named `nvidia-cuda-mps-control` (so its `comm` is the daemon's) that waits for
/// a signal, compiled into a directory `nobody` can read.
fn lookalike_program(dir: &Path) -> PathBuf {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    crate::common::compile_c(
        dir,
        "nvidia-cuda-mps-control",
        "#include <unistd.h>\nint main(void) { pause(); return 0; }\n",
    )
}

/// Runs `program -d -M` as `nobody`, in the daemon's pipe directory's name, scoped to GPU B.
fn start_lookalike(program: &Path, pipe: &Path) -> Child {
    #[allow(clippy::disallowed_methods, reason = "test harness: the hostile user")]
    Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(program)
        .args(["-d", "-M"])
        .env("CUDA_MPS_PIPE_DIRECTORY", pipe)
        .env("CUDA_VISIBLE_DEVICES", GPU_B)
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs `script` with `sh -c` as `nobody` and waits for it.
fn as_nobody(script: &str) {
    #[allow(clippy::disallowed_methods, reason = "test harness: the hostile user")]
    let status = Command::new("setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

#[test]
fn a_lookalike_and_a_forged_pid_file_never_become_the_daemon() {
    let Some(binary) = binary_or_skip("a_lookalike_and_a_forged_pid_file_never_become_the_daemon")
    else {
        return;
    };
    let daemon = Daemon::start_scoped(&binary, Some(GPU_A));
    two_gpus(&daemon);
    // As a 470/535 daemon leaves a pipe directory it created itself: world-writable.
    std::fs::set_permissions(&daemon.pipe_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let tools = tempfile::tempdir_in("/tmp").unwrap();
    let program = lookalike_program(tools.path());
    let mut lookalike = start_lookalike(&program, &daemon.pipe_dir);
    let fake = i64::from(lookalike.id());
    let real = i64::from(daemon.pid);
    // Wait until the look-alike has exec'd (its comm is the daemon's).
    assert!(crate::common::eventually(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{fake}/comm"))
            .is_ok_and(|comm| comm == "nvidia-cuda-mps\n")
    }));
    let pid_file = daemon.pipe_dir.join("nvidia-cuda-mps-control.pid");
    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    let outside = Request::new(Some("mps"), "cuda:1", Some("cuda:1"), "mjwarp");
    let forged = format!("rm -f {0}; printf {fake} > {0}", pid_file.display());
    let fifo = format!("rm -f {0}; mkfifo -m 0666 {0}", pid_file.display());
    let link = format!("rm -f {0}; ln -s /proc/{fake}/stat {0}", pid_file.display());
    for (attack, script) in [
        ("look-alike only", None),
        ("pid file names the look-alike", Some(forged.as_str())),
        ("pid file is a FIFO", Some(fifo.as_str())),
        ("pid file is a symbolic link", Some(link.as_str())),
    ] {
        if let Some(script) = script {
            as_nobody(script);
        }
        let facts =
            crate::common::capture_on(daemon.env(), &daemon.options(Duration::from_secs(10)));
        let search = facts.daemon_process.as_ref().unwrap();
        assert_eq!(
            search.method,
            DaemonSearchMethod::Lock,
            "{attack}: {search:?}"
        );
        assert_eq!(search.processes.len(), 1, "{attack}");
        assert_eq!(search.processes[0].pid, real, "{attack}");

        let evidence = validate(&request, &facts).unwrap();
        assert_eq!(evidence.daemon_pid, Some(real), "{attack}");
        assert_eq!(evidence.daemon_multiuser, Some(false), "{attack}");
        assert_eq!(
            evidence.daemon_visible_devices.as_deref(),
            Some(GPU_A),
            "{attack}"
        );
        let disagrees = evidence.unverified.contains(&Code::DaemonPidFileDisagrees);
        assert_eq!(
            disagrees,
            script == Some(forged.as_str()),
            "{attack}: {evidence:?}"
        );
        let json = serde_json::to_string(&evidence).unwrap();
        assert!(!json.contains(&format!(":{fake},")), "{attack}: {json}");

        // The look-alike's scope (GPU B) never replaces the daemon's.
        let rejection = validate(&outside, &facts).unwrap_err();
        assert_eq!(rejection.code(), Code::GpuOutsideDaemonScope, "{attack}");
    }
    lookalike.kill().unwrap();
    lookalike.wait().unwrap();
}

/// With the daemon's lock out of sight (the reader's `/proc` shows no holder, as in another
/// PID namespace), nothing of the daemon's process is taken, and verification fails.
#[test]
fn without_the_lock_in_sight_the_daemon_facts_are_unverified() {
    let Some(binary) = binary_or_skip("without_the_lock_in_sight_the_daemon_facts_are_unverified")
    else {
        return;
    };
    let daemon = Daemon::start_scoped(&binary, Some(GPU_A));
    two_gpus(&daemon);
    // A /proc whose lock table is empty: the real daemon's process entries are not there
    // either, as in a PID namespace of its own.
    let proc_root = tempfile::tempdir().unwrap();
    std::fs::write(proc_root.path().join("locks"), "").unwrap();
    let mut options = daemon.options(Duration::from_secs(10));
    options.proc_root = proc_root.path().to_owned();
    let facts = crate::common::capture_on(daemon.env(), &options);
    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    let evidence = validate(&request, &facts).unwrap();
    assert_eq!(evidence.daemon_pid, None);
    assert_eq!(evidence.daemon_visible_devices, None);
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
}

/// In the foreground (`-f`) the daemon is the process started, and it holds the lock itself:
/// the lock proves that PID, as it proves the forked daemon of `-d` above.
#[test]
fn a_foreground_daemon_holds_its_own_lock() {
    let Some(binary) = binary_or_skip("a_foreground_daemon_holds_its_own_lock") else {
        return;
    };
    let dirs = tempfile::Builder::new()
        .prefix("mpsf")
        .tempdir_in("/tmp")
        .unwrap();
    let (pipe, log, bin) = (
        dirs.path().join("p"),
        dirs.path().join("l"),
        dirs.path().join("b"),
    );
    for dir in [&pipe, &log, &bin] {
        std::fs::create_dir(dir).unwrap();
    }
    std::os::unix::fs::symlink(&binary, bin.join("nvidia-cuda-mps-control")).unwrap();
    #[allow(
        clippy::disallowed_methods,
        reason = "test harness: the real daemon, -f"
    )]
    let mut daemon = Command::new(&binary)
        .arg("-f")
        .env("CUDA_MPS_PIPE_DIRECTORY", &pipe)
        .env("CUDA_MPS_LOG_DIRECTORY", &log)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::common::eventually(Duration::from_secs(10), || {
        pipe.join("control").exists()
    }));
    let env = sharing_policy::EnvFacts {
        cuda_mps_pipe_directory: Some(crate::common::daemon::os_text(&pipe)),
        cuda_mps_log_directory: Some(crate::common::daemon::os_text(&log)),
        ..sharing_policy::EnvFacts::default()
    };
    let options = mps_host::ProbeOptions {
        timeout: Duration::from_secs(10),
        search_path: Some(bin.clone().into_os_string()),
        ..mps_host::ProbeOptions::default()
    };
    let facts = crate::common::capture_on(env, &options);
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    let search = facts.daemon_process.as_ref().unwrap();
    assert_eq!(search.method, DaemonSearchMethod::Lock, "{search:?}");
    assert_eq!(
        search.processes[0].pid,
        i64::from(daemon.id()),
        "{search:?}"
    );
}

/// A real daemon an ordinary user (`nobody`) started in directories of their own is proven
/// (it holds its lock and owns its pipe directory), and serves only that user: judged for
/// root (the probing user here) it is `daemon-of-another-user`, judged `--as-user nobody` it
/// is not.
#[test]
fn an_ordinary_users_daemon_serves_only_that_user() {
    let Some(binary) = binary_or_skip("an_ordinary_users_daemon_serves_only_that_user") else {
        return;
    };
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED an_ordinary_users_daemon_serves_only_that_user: needs root");
        return;
    }
    let daemon = Daemon::start_as_nobody(&binary);
    two_gpus(&daemon);
    let facts = crate::common::capture_on(daemon.env(), &daemon.options(Duration::from_secs(10)));
    let search = facts.daemon_process.as_ref().unwrap();
    assert_eq!(search.method, DaemonSearchMethod::Lock, "{search:?}");
    assert_eq!(search.processes[0].pid, i64::from(daemon.pid));

    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    let rejection = validate(&request, &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::DaemonOfAnotherUser, "{rejection}");
    assert!(
        rejection.to_string().contains(&format!(
            "control daemon PID {} runs as uid {NOBODY}, not root",
            daemon.pid
        )),
        "{rejection}"
    );

    let as_nobody = Request {
        as_user: Some(65534),
        ..request
    };
    let evidence = validate(&as_nobody, &facts).unwrap();
    assert_eq!(evidence.daemon_pid, Some(i64::from(daemon.pid)));
}
