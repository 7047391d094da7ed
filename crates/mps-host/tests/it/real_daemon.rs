//! mps-host against Debian's real `nvidia-cuda-mps-control` (no GPU needed: the control daemon
//! starts, creates its socket and answers read-only queries without one). Fetch it with
//! `scripts/fetch-mps-control.sh`; without it these tests print why and skip.

use std::time::{Duration, Instant};

use crate::common::daemon::{Daemon, binary_or_skip};
use crate::common::{is_dead, live_processes_with_env};
use mps_host::ProbeOptions;
use rustix::process::Signal;
use sharing_policy::{
    Code, DaemonSearchMethod, FileKind, QueryOutcome, ReadOnlyCommand, Request, explain, validate,
};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

fn exited(outcome: &QueryOutcome) -> (Option<i32>, &str, &str) {
    match outcome {
        QueryOutcome::Exited {
            code,
            signal: None,
            stdout,
            stderr,
        } => {
            assert!(!stdout.truncated && !stderr.truncated && !stdout.non_utf8);
            (*code, stdout.text.as_str(), stderr.text.as_str())
        }
        other => panic!("expected a normal exit, got {other:?}"),
    }
}

#[test]
fn a_live_idle_daemon_answers_the_probe() {
    let Some(binary) = binary_or_skip("a_live_idle_daemon_answers_the_probe") else {
        return;
    };
    let daemon = Daemon::start(&binary);

    let facts = daemon.capture(Duration::from_secs(10));

    let query = facts.daemon_query.as_ref().unwrap();
    assert!(query.args.is_empty());
    // X3 + X2 of the MPS notes: the thread percentage, then an empty server list; then no
    // default pinned-memory limit for any of the first ordinals (nothing printed), each after
    // its liveness line, and the last liveness line.
    let idle = "100.0\n".repeat(sharing_policy::FIRST_SESSION_ORDINALS as usize + 2);
    assert_eq!(exited(&query.outcome), (Some(0), idle.as_str(), ""));
    // Nothing left to ask an idle daemon: no second session.
    assert_eq!(facts.settings_query, None);
    let pipe = facts.control_pipe.as_ref().unwrap();
    assert_eq!(pipe.lstat.kind, FileKind::Socket);
    assert_eq!(pipe.stat.kind, FileKind::Socket);
    assert_eq!(
        pipe.lstat.mode,
        Some(0o666),
        "F8: the control socket is 0666"
    );
    assert_eq!(pipe.lstat.uid, Some(rustix::process::geteuid().as_raw()));
    assert_eq!(
        pipe.path_len,
        daemon.pipe_dir.join("control").as_os_str().len()
    );
    assert_eq!(pipe.access.read_write, Some(true));
    assert_eq!(pipe.access.directory_traversable, Some(true));
    let pid_file = facts.pid_file.as_ref().unwrap();
    if let Some(contents) = &pid_file.contents {
        // 550+: the daemon's PID, alive, named (comm is truncated to 15 bytes) after the daemon.
        assert_eq!(contents.text, daemon.pid.to_string());
        assert_eq!(pid_file.pid_alive, Some(true));
        assert_eq!(pid_file.process_name.as_deref(), Some("nvidia-cuda-mps"));
    } else {
        // 470/535 write no pid file.
        assert!(
            pid_file.error.as_deref().unwrap().contains("No such file"),
            "{pid_file:?}"
        );
    }
    // No GPU stack here: nvidia-smi is not on the search path.
    assert!(matches!(
        facts.gpu_query.as_ref().unwrap().outcome,
        QueryOutcome::SpawnFailed { .. }
    ));
}

#[test]
fn after_quit_the_socket_stays_but_nothing_answers() {
    let Some(binary) = binary_or_skip("after_quit_the_socket_stays_but_nothing_answers") else {
        return;
    };
    let daemon = Daemon::start(&binary);
    let quit = daemon.quit();
    assert_eq!(exited(&quit.outcome), (Some(0), "", ""), "X17: owner quit");
    assert!(is_dead(daemon.pid));

    let facts = daemon.capture(Duration::from_secs(10));

    // F14: a stale socket is left behind; X1: the front-end cannot find a daemon.
    let pipe = facts.control_pipe.as_ref().unwrap();
    assert_eq!(pipe.lstat.kind, FileKind::Socket);
    let query = facts.daemon_query.as_ref().unwrap();
    assert_eq!(
        exited(&query.outcome),
        (Some(1), "", "Cannot find MPS control daemon process\n")
    );
    let pid_file = facts.pid_file.as_ref().unwrap();
    assert!(
        pid_file.contents.is_none(),
        "a clean quit removes the pid file: {pid_file:?}"
    );
}

#[test]
fn a_frozen_daemon_costs_one_deadline_and_leaves_no_process_behind() {
    let Some(binary) =
        binary_or_skip("a_frozen_daemon_costs_one_deadline_and_leaves_no_process_behind")
    else {
        return;
    };
    let daemon = Daemon::start(&binary);
    daemon.signal(Signal::STOP);
    let timeout = Duration::from_secs(1);

    let started = Instant::now();
    let facts = daemon.capture(timeout);
    let elapsed = started.elapsed();

    // Deadline plus a generous margin for a loaded machine; a hang would take forever (X19).
    assert!(
        elapsed < timeout + Duration::from_secs(10),
        "took {elapsed:?}"
    );
    let query = facts.daemon_query.as_ref().unwrap();
    assert!(
        matches!(query.outcome, QueryOutcome::TimedOut { .. }),
        "{:?}",
        query.outcome
    );
    assert!(query.elapsed_ms >= 1000, "{}", query.elapsed_ms);
    // The only process left with this pipe directory in its environment is the daemon itself.
    let left = live_processes_with_env(
        "CUDA_MPS_PIPE_DIRECTORY",
        daemon.pipe_dir.as_os_str().as_bytes(),
    );
    assert_eq!(
        left,
        vec![daemon.pid],
        "the front-end must have been killed"
    );

    daemon.signal(Signal::CONT);
    // Drop quits it.
}

#[test]
fn the_control_log_shows_only_read_only_commands_from_the_probe() {
    let Some(binary) =
        binary_or_skip("the_control_log_shows_only_read_only_commands_from_the_probe")
    else {
        return;
    };
    let daemon = Daemon::start(&binary);
    for _ in 0..2 {
        let facts = daemon.capture(Duration::from_secs(10));
        assert_eq!(
            exited(&facts.daemon_query.as_ref().unwrap().outcome).0,
            Some(0)
        );
    }

    let (log, commands) = daemon.quit_and_read_commands();
    let session: Vec<String> = sharing_policy::first_session()
        .iter()
        .map(|command| command.line())
        .collect();
    assert_eq!(
        commands,
        [session.clone(), session].concat(),
        "control.log:\n{log}"
    );
    assert!(
        commands
            .iter()
            .all(|command| ReadOnlyCommand::parse_line(command).is_some())
    );
    assert!(log.contains("NEW UI"), "{log}");
}

/// The fault matrix's "daemon killed between observation steps", against the real daemon: the
/// `nvidia-cuda-mps-control` the probe runs first SIGKILLs the daemon (which leaves its socket
/// behind), then hands over to the real front-end. Killed at once, the kill races the probe's
/// look at the socket and pid file; killed after a pause, the probe has already seen a socket
/// with a daemon behind it. Either way the answer is a rejection, never a pass on what was true
/// a moment earlier.
#[test]
fn a_daemon_killed_between_observation_steps_is_never_a_pass() {
    let Some(binary) = binary_or_skip("a_daemon_killed_between_observation_steps_is_never_a_pass")
    else {
        return;
    };
    for pause in ["0", "0.5"] {
        let daemon = Daemon::start(&binary);
        let tools = crate::common::short_tempdir("mpsk");
        crate::common::fake_program(
            tools.path(),
            "nvidia-smi",
            "echo 'Default, 535.261.03, Enabled, None, No, No, No, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0'",
        );
        crate::common::fake_program(
            tools.path(),
            "nvidia-cuda-mps-control",
            &format!(
                "sleep {pause}\nkill -9 {pid}\nexec '{binary}' \"$@\"",
                pid = daemon.pid,
                binary = binary.display()
            ),
        );
        let options = ProbeOptions {
            timeout: Duration::from_secs(10),
            search_path: Some(tools.path().as_os_str().to_owned()),
            ..ProbeOptions::default()
        };
        let facts = crate::common::capture_on(daemon.env(), &options);

        // SIGKILL lands asynchronously; on a loaded machine allow the kernel a moment.
        assert!(
            crate::common::eventually(Duration::from_secs(5), || is_dead(daemon.pid)),
            "pause {pause}: the daemon survived"
        );
        let query = facts.daemon_query.as_ref().unwrap();
        assert_eq!(
            exited(&query.outcome).0,
            Some(1),
            "pause {pause}: {query:?}"
        );
        let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        let rejection = validate(&request, &facts).unwrap_err();
        assert_eq!(
            rejection.code(),
            Code::DaemonUnreachable,
            "pause {pause}: {rejection}"
        );
        let findings = explain(&request, &facts);
        assert_eq!(findings.len(), 1, "pause {pause}: {findings:?}");
        // The socket is still there (SIGKILL removes nothing); it proved nothing.
        assert_eq!(
            facts.control_pipe.as_ref().unwrap().lstat.kind,
            FileKind::Socket
        );
        // A null request records the same host as no ambient server.
        let ambient = validate(
            &Request::new(None, "cuda:0", Some("cuda:0"), "mjwarp"),
            &facts,
        )
        .unwrap();
        assert!(!ambient.ambient_server && ambient.daemon_pid.is_none());
    }
}

const GPU_A: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
const GPU_B: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";

/// A fake `nvidia-smi` next to the daemon's front-end listing two H100s (A, then B), in the v2
/// query's column order.
fn two_gpus(daemon: &Daemon) {
    crate::common::fake_program(
        &daemon.bin_dir,
        "nvidia-smi",
        &format!(
            "printf 'Default, 535.261.03, Enabled, None, No, No, No, 0, {GPU_A}, NVIDIA H100 80GB HBM3, 00000000:18:00.0\\n\
             Default, 535.261.03, Enabled, None, No, No, No, 1, {GPU_B}, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\\n'"
        ),
    );
}

fn capture_with_mask(daemon: &Daemon, mask: Option<&str>) -> sharing_policy::HostFacts {
    let mut env = daemon.env();
    env.cuda_visible_devices = mask.map(sharing_policy::OsText::from);
    crate::common::capture_on(env, &daemon.options(Duration::from_secs(10)))
}

fn strict(request: &Request) -> Request {
    Request {
        require_verified: true,
        ..request.clone()
    }
}

#[test]
fn a_scoped_daemon_is_found_and_its_scope_enforced() {
    let Some(binary) = binary_or_skip("a_scoped_daemon_is_found_and_its_scope_enforced") else {
        return;
    };
    let daemon = Daemon::start_scoped(&binary, Some(GPU_A));
    two_gpus(&daemon);
    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");

    let facts = capture_with_mask(&daemon, None);

    // The real daemon (535 and 550, `-d`) holds the POSIX write lock on the whole of
    // control_lock, and F_GETLK names its PID: the daemon is proven without the pid file, a
    // scan, or the kernel's lock table (not read).
    let search = facts.daemon_process.as_ref().unwrap();
    assert_eq!(search.method, DaemonSearchMethod::Lock, "{search:?}");
    let lock = search.lock.as_ref().unwrap();
    let tested = lock.test.as_ref().unwrap();
    assert_eq!(
        (
            tested.lock.as_str(),
            tested.start,
            tested.length,
            tested.pid
        ),
        ("write", 0, 0, i64::from(daemon.pid)),
        "{lock:?}"
    );
    assert_eq!(lock.locks, None, "{lock:?}");
    let evidence = validate(&strict(&request), &facts).unwrap();
    assert_eq!(evidence.unverified, [], "{evidence:?}");
    // The daemon's own log, read from the proven daemon's CUDA_MPS_LOG_DIRECTORY: its start
    // line is there, and a healthy daemon's log is neither rejected nor unverified.
    let log = facts.daemon_log.as_ref().unwrap();
    let control = daemon.log_dir.join("control.log");
    assert_eq!(
        log.directory
            .as_ref()
            .map(sharing_policy::OsText::to_string_lossy),
        Some(daemon.log_dir.to_string_lossy().into_owned()),
        "{log:?}"
    );
    let text = log.files[0].text.as_deref().unwrap();
    assert!(
        text.contains("] Starting control daemon using socket "),
        "{log:?}"
    );
    assert!(!log.files[0].cut_at_start, "{log:?}");
    assert_eq!(
        evidence.daemon_log.as_deref(),
        Some(control.to_string_lossy().as_ref())
    );
    assert_eq!(evidence.last_server_ready, None, "no GPU, so no server");
    // The first session asked each GPU ordinal's default pinned-memory limit; none is set
    // (the daemon prints nothing), and no server runs without a GPU, so no second session.
    let query = facts.daemon_query.as_ref().unwrap();
    assert!(
        query
            .stdin
            .contains("get_default_device_pinned_mem_limit 1\n"),
        "{query:?}"
    );
    assert_eq!(facts.settings_query, None);
    assert_eq!(evidence.default_pinned_mem_limit, None);
    assert_eq!(evidence.server_status, None);
    assert_eq!(
        evidence.default_active_thread_percentage,
        sharing_policy::Percentage::from_tenths(1000)
    );
    assert_eq!(evidence.daemon_pid, Some(i64::from(daemon.pid)));
    assert_eq!(evidence.daemon_visible_devices.as_deref(), Some(GPU_A));
    assert_eq!(evidence.daemon_multiuser, Some(false));
    assert_eq!(evidence.compute_mode.as_deref(), Some("Default"));
    assert_eq!(evidence.driver_version.as_deref(), Some("535.261.03"));
    assert_eq!(
        evidence.caller_uid,
        Some(rustix::process::geteuid().as_raw())
    );

    // The same daemon, asked for the other GPU: outside its scope.
    let other = capture_with_mask(&daemon, Some(GPU_B));
    let rejection = validate(&request, &other).unwrap_err();
    assert_eq!(rejection.code(), Code::GpuOutsideDaemonScope, "{rejection}");
    assert!(rejection.to_string().contains(GPU_A), "{rejection}");
}

#[test]
fn as_nobody_the_scope_is_unverified() {
    let Some(binary) = binary_or_skip("as_nobody_the_scope_is_unverified") else {
        return;
    };
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping as_nobody_the_scope_is_unverified: dropping privileges needs root");
        return;
    }
    let Some(setpriv) = ["/bin/setpriv", "/usr/bin/setpriv"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
    else {
        eprintln!("skipping as_nobody_the_scope_is_unverified: setpriv is not installed");
        return;
    };
    let daemon = Daemon::start_scoped(&binary, Some(GPU_A));
    two_gpus(&daemon);
    for dir in [&daemon.pipe_dir, &daemon.log_dir, &daemon.bin_dir] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // `nobody` cannot reach the cached binary under root's home: give it a copy of the
    // front-end, and of this test binary, which runs the capture below as `nobody`.
    let front_end = daemon.bin_dir.join("nvidia-cuda-mps-control");
    std::fs::remove_file(&front_end).unwrap();
    std::fs::copy(&binary, &front_end).unwrap();
    std::fs::set_permissions(&front_end, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = daemon.bin_dir.join("real-daemon-test");
    std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    #[allow(clippy::disallowed_methods, reason = "test: runs itself as nobody")]
    let run = || {
        std::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy)
            .args([
                "--exact",
                "real_daemon::capture_as_the_calling_user",
                "--ignored",
                "--nocapture",
            ])
            .env(HELPER_PIPE, &daemon.pipe_dir)
            .env(HELPER_LOG, &daemon.log_dir)
            .env(HELPER_BIN, &daemon.bin_dir)
            .current_dir(&daemon.bin_dir)
            .output()
            .unwrap()
    };
    let output = crate::common::output_when_not_busy(run);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json = stdout
        .lines()
        .find_map(|line| line.strip_prefix("FACTS "))
        .unwrap_or_else(|| {
            panic!(
                "no capture from the nobody run: {stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let facts: sharing_policy::HostFacts = serde_json::from_str(json).unwrap();
    assert_eq!(facts.caller.unwrap().euid, 65534);
    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");

    let evidence = validate(&request, &facts).unwrap();
    // Root's daemon's environment is unreadable to nobody: neither its scope nor its log
    // directory (so its log) can be verified; nor can nobody read the root daemon's
    // /proc/<pid>/root, so its /dev/shm is unverified too; and with the log directory unknown,
    // whether nobody's server reaches it is unverified.
    assert_eq!(
        evidence.unverified,
        [
            Code::DaemonScopeUnverified,
            Code::DaemonLogUnverified,
            Code::ShmUnverified,
            Code::PipeAccessUnverified
        ],
        "{evidence:?}"
    );
    assert_nobody_reach(&facts);
    let log = facts.daemon_log.as_ref().unwrap();
    assert!(log.directory.is_none(), "{log:?}");
    let shm = facts.shm.as_ref().unwrap();
    assert!(
        shm.daemon.as_ref().unwrap().errors.contains_key("stat"),
        "{shm:?}"
    );
    assert!(shm.caller.free_bytes.is_some(), "{shm:?}");
    assert_eq!(evidence.daemon_visible_devices, None);
    let rejection = validate(&strict(&request), &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::DaemonScopeUnverified, "{rejection}");
    assert!(
        rejection.to_string().contains("run the probe as root"),
        "{rejection}"
    );
}

/// The real daemon's files as nobody's probe recorded them (F8): `control` a 0666 socket, `log`
/// a 0777 FIFO, and no directory down to the pipe directory denying nobody search (the reach is
/// unverified only for the log directory nobody cannot learn).
fn assert_nobody_reach(facts: &sharing_policy::HostFacts) {
    let access = facts.pipe_access.as_ref().unwrap();
    assert_eq!(
        access.user.as_ref().map(|user| user.uid),
        Some(65534),
        "{access:?}"
    );
    assert_eq!(
        (access.control.kind, access.control.mode),
        (Some(sharing_policy::EntryKind::Socket), Some(0o666)),
        "{access:?}"
    );
    assert_eq!(
        (access.log_fifo.kind, access.log_fifo.mode),
        (Some(sharing_policy::EntryKind::Fifo), Some(0o777)),
        "{access:?}"
    );
    assert!(
        access.log_path.is_none() && access.log_unknown.is_some(),
        "{access:?}"
    );
    assert!(
        matches!(sharing_policy::pipe_reach(access, 65534), sharing_policy::Reach::Unverified(ref why) if why.to_string().contains("log directory")),
        "{access:?}"
    );
}

const HELPER_PIPE: &str = "MPS_PREFLIGHT_TEST_PIPE";
const HELPER_LOG: &str = "MPS_PREFLIGHT_TEST_LOG";
const HELPER_BIN: &str = "MPS_PREFLIGHT_TEST_BIN";

/// Run by `as_nobody_the_scope_is_unverified` through `setpriv`: captures the daemon named in
/// the environment as whoever runs it and prints the snapshot.
#[test]
#[ignore = "run by as_nobody_the_scope_is_unverified as nobody"]
fn capture_as_the_calling_user() {
    let (Some(pipe), Some(log), Some(bin)) = (
        std::env::var_os(HELPER_PIPE),
        std::env::var_os(HELPER_LOG),
        std::env::var_os(HELPER_BIN),
    ) else {
        return;
    };
    let text =
        |value: &std::ffi::OsStr| sharing_policy::OsText::from_bytes(value.as_bytes().to_vec());
    let env = sharing_policy::EnvFacts {
        cuda_mps_pipe_directory: Some(text(&pipe)),
        cuda_mps_log_directory: Some(text(&log)),
        ..sharing_policy::EnvFacts::default()
    };
    let options = ProbeOptions {
        timeout: Duration::from_secs(10),
        search_path: Some(bin.clone()),
        ..ProbeOptions::default()
    };
    let facts = crate::common::capture_on(env, &options);
    println!("FACTS {}", serde_json::to_string(&facts).unwrap());
}

/// The 535 and 550 front-ends are MPS v2 binaries: they refuse `-m` (multi-user mode, which
/// newer MPS v3 daemons accept), printing their usage and starting no daemon.
#[test]
fn the_real_binaries_refuse_multiuser_mode() {
    let Some(binary) = binary_or_skip("the_real_binaries_refuse_multiuser_mode") else {
        return;
    };
    let pipe = crate::common::short_tempdir("mpsm");
    for args in [&["-d", "-m"][..], &["-d", "--multiuser"]] {
        #[allow(clippy::disallowed_methods, reason = "test: the real binary's argv")]
        let output = std::process::Command::new(&binary)
            .args(args)
            .env("CUDA_MPS_PIPE_DIRECTORY", pipe.path())
            .env("CUDA_MPS_LOG_DIRECTORY", pipe.path())
            .env_remove("CUDA_MPS_PROTOCOL_VERSION")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !pipe.path().join("control").exists(),
            "{args:?} started a daemon"
        );
    }
}
