//! The `/proc` observation against fake `/proc` trees (real files in a temp directory): the
//! daemon found by a scan, the pid file's daemon, hidden processes, and the scan's bounds.

use std::ffi::OsString;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::daemon::os_text;
use crate::common::{capture_on, fake_lock, fake_program, short_tempdir};
use mps_host::{ProbeOptions, find_daemon, observe_daemon_lock, observe_process};
use sharing_policy::{
    CapturedText, Code, DaemonLockFacts, DaemonSearchMethod, EnvFacts, OsText, PidFileFacts,
    Request, validate,
};

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

/// The lock of a pipe directory that does not exist: it proves no daemon, so the search falls
/// back to its witnesses.
fn no_lock() -> DaemonLockFacts {
    observe_daemon_lock(Path::new("/proc"), &OsText::from("/nonexistent/pipe"))
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

    let search = find_daemon(root.path(), &no_pid_file(), no_lock(), 1000, later());

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
    let search = find_daemon(root.path(), &pid_file, no_lock(), 1000, later());
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
    let bounded = find_daemon(root.path(), &no_pid_file(), no_lock(), 1000, later());
    assert_eq!(bounded.scanned, 1000);
    assert_eq!(bounded.stopped.as_deref(), Some("limit"));
    let full = find_daemon(root.path(), &no_pid_file(), no_lock(), 65_536, later());
    assert_eq!(full.scanned, 10_000);
    assert_eq!(full.stopped, None);
    let late = find_daemon(
        root.path(),
        &no_pid_file(),
        no_lock(),
        65_536,
        Instant::now(),
    );
    assert_eq!(late.scanned, 0);
    assert_eq!(late.stopped.as_deref(), Some("deadline"));
    let missing = find_daemon(
        &root.path().join("nope"),
        &no_pid_file(),
        no_lock(),
        10,
        later(),
    );
    assert!(missing.error.is_some());
}

const GPU_A: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";

/// One fake host end to end: fake tools on a temp PATH, a real control socket, and a fake
/// `/proc` holding the daemon (PID 2718, started `daemon_args`, with `daemon_mask`) and the
/// server 4428 of `server_uid`, `ACTIVE`; `mode` is the GPUs' compute mode.
fn served_capture(
    daemon_args: &[&str],
    daemon_mask: &str,
    server_uid: u32,
    mode: &str,
) -> sharing_policy::HostFacts {
    served_capture_in_state(daemon_args, daemon_mask, server_uid, mode, "ACTIVE")
}

/// [`served_capture`] with the server in `state`; the fake front-end answers each command of
/// its stdin as a 550 daemon would (one line per answer; a default pinned limit of `10G`).
fn served_capture_in_state(
    daemon_args: &[&str],
    daemon_mask: &str,
    server_uid: u32,
    mode: &str,
    state: &str,
) -> sharing_policy::HostFacts {
    let dir = short_tempdir("mpsf");
    let (bin, pipe, proc) = (
        dir.path().join("bin"),
        dir.path().join("pipe"),
        dir.path().join("proc"),
    );
    for sub in [&bin, &pipe, &proc] {
        std::fs::create_dir(sub).unwrap();
    }
    let _socket = UnixListener::bind(pipe.join("control")).unwrap();
    fake_lock(&proc, &pipe, 2718);
    fake_program(
        &bin,
        "nvidia-smi",
        &format!(
            "printf '{mode}, 535.261.03, Enabled, None, No, No, No, 0, {GPU_A}, NVIDIA H100 80GB HBM3, 00000000:18:00.0\\n'"
        ),
    );
    fake_program(
        &bin,
        "nvidia-cuda-mps-control",
        &format!(
            "while read -r cmd arg; do case \"$cmd\" in \
             get_default_active_thread_percentage) echo 100.0;; \
             get_server_list) echo 4428;; \
             get_server_status) echo {state};; \
             get_client_list) ;; \
             get_active_thread_percentage) echo 100.0;; \
             get_default_device_pinned_mem_limit|get_device_pinned_mem_limit) echo 10G;; \
             *) echo \"Unknown command \\\"$cmd\\\"\";; esac; done"
        ),
    );
    let pipe_env = format!("CUDA_MPS_PIPE_DIRECTORY={}", pipe.display());
    let mask_env = format!("CUDA_VISIBLE_DEVICES={daemon_mask}");
    // The daemon's log directory, holding the real 535 daemon's own control.log.
    let log = dir.path().join("log");
    std::fs::create_dir(&log).unwrap();
    std::fs::write(
        log.join("control.log"),
        include_str!("../../../../fixtures/daemon-logs/real-535.control.log"),
    )
    .unwrap();
    let log_env = format!("CUDA_MPS_LOG_DIRECTORY={}", log.display());
    let cmdline: Vec<&str> = std::iter::once("nvidia-cuda-mps-control")
        .chain(daemon_args.iter().copied())
        .collect();
    fake_process(
        &proc,
        2718,
        0,
        "nvidia-cuda-mps",
        Some(&cmdline),
        Some(&[pipe_env.as_str(), mask_env.as_str(), log_env.as_str()]),
    );
    // The daemon shares this test's root: its /dev/shm is this process's.
    std::os::unix::fs::symlink("/", proc.join("2718").join("root")).unwrap();
    fake_process(
        &proc,
        4428,
        server_uid,
        "nvidia-cuda-mps",
        Some(&["nvidia-cuda-mps-server"]),
        None,
    );
    let options = ProbeOptions {
        timeout: Duration::from_secs(20),
        search_path: Some(OsString::from(&bin)),
        proc_root: proc,
        ..ProbeOptions::default()
    };
    let env = EnvFacts {
        cuda_mps_pipe_directory: Some(os_text(&pipe)),
        ..EnvFacts::default()
    };
    capture_on(env, &options)
}

#[test]
fn fake_proc_and_fake_tools_decide_each_served_rule() {
    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    let strict = Request {
        require_verified: true,
        ..request.clone()
    };
    let ours = rustix::process::geteuid().as_raw();
    let other = ours + 1;

    let served = served_capture(&["-d"], GPU_A, ours, "Exclusive_Process");
    assert_eq!(
        served.daemon_process.as_ref().unwrap().method,
        DaemonSearchMethod::Lock
    );
    let evidence = validate(&strict, &served).unwrap();
    assert_eq!(evidence.unverified, []);
    assert_eq!(evidence.server_status.as_deref(), Some("ACTIVE"));
    assert_eq!(evidence.default_pinned_mem_limit.as_deref(), Some("10G"));
    assert_eq!(evidence.server_uids, [ours]);
    assert_eq!(evidence.daemon_pid, Some(2718));
    assert_eq!(evidence.daemon_visible_devices.as_deref(), Some(GPU_A));
    assert_eq!(evidence.compute_mode.as_deref(), Some("Exclusive_Process"));
    assert_eq!(evidence.driver_version.as_deref(), Some("535.261.03"));

    let another = served_capture(&["-d"], GPU_A, other, "Default");
    let rejection = validate(&request, &another).unwrap_err();
    assert_eq!(rejection.code(), Code::ServerOfAnotherUser, "{rejection}");
    assert!(rejection.to_string().contains(&format!("uid {other}")));

    let multiuser = served_capture(&["-d", "-m"], GPU_A, other, "Default");
    let evidence = validate(&strict, &multiuser).unwrap();
    assert_eq!(evidence.daemon_multiuser, Some(true));

    let scoped_elsewhere = served_capture(&["-d"], "GPU-5a88edbe", ours, "Default");
    let code = validate(&request, &scoped_elsewhere).unwrap_err().code();
    assert_eq!(code, Code::GpuOutsideDaemonScope);

    let by_index = served_capture(&["-d"], "0", ours, "Default");
    assert!(
        validate(&strict, &by_index).is_ok(),
        "one GPU: index 0 is it"
    );

    for (mode, code) in [
        ("Prohibited", Some(Code::ComputeModeForbidsSharing)),
        ("Exclusive_Thread", Some(Code::ComputeModeForbidsSharing)),
        ("Default", None),
        ("[N/A]", Some(Code::ComputeModeUnverified)),
    ] {
        let facts = served_capture(&["-d"], GPU_A, ours, mode);
        assert_eq!(
            validate(&strict, &facts).err().map(|r| r.code()),
            code,
            "{mode}"
        );
    }
    // The server its clients would join is in FAULT, or still starting; and the
    // daemon's default pinned limit (10G) against a stated minimum.
    let faulted = served_capture_in_state(&["-d"], GPU_A, ours, "Default", "FAULT");
    let rejection = validate(&request, &faulted).unwrap_err();
    assert_eq!(rejection.code(), Code::ServerFault, "{rejection}");
    let starting = served_capture_in_state(&["-d"], GPU_A, ours, "Default", "INITIALIZING");
    let evidence = validate(&strict, &starting).unwrap();
    assert_eq!(evidence.server_status.as_deref(), Some("INITIALIZING"));
    let wanting = Request {
        min_pinned_mem: sharing_policy::MemSize::parse_arg("11G"),
        ..request.clone()
    };
    let code = validate(&wanting, &served).unwrap_err().code();
    assert_eq!(code, Code::PinnedMemBelowRequirement);
}
