//! Rows of the fault matrix, run through the built binary: each host query broken in
//! each way, odd control pipes, the daemon dying while the probe looks, pid files naming the
//! wrong process, an unprivileged user, and snapshot files that are links to devices or cut
//! short. Each outcome is a rejection or an
//! input error, never a pass on a fact that no longer holds, and never a hang.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{FakeHost, GPU0, MPS_REQUEST, args, mkfifo, not_utf8, spawn, system_program};

/// A process killed and reaped on drop, whatever the test's outcome.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An unrelated live process (`sleep`, not the control daemon).
fn unrelated_process() -> Reaped {
    Reaped(spawn(
        Command::new(system_program("sleep"))
            .arg("600")
            .stdin(Stdio::null()),
    ))
}

/// Whether `pid` still runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Whether `pid` stops running within a few seconds. SIGKILL is delivered asynchronously: on a
/// loaded machine a process killed a moment ago can still be scheduled when the probe returns.
fn stops_running(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The daemon dies while the probe looks: the control front-end the probe runs kills the
/// daemon stand-in named in the pid file and removes the socket, at once (racing the probe's
/// look at the socket and pid file) or after a pause (the probe has already seen a socket and a
/// live daemon PID), then finds no daemon, as the real front-end does.
#[test]
fn a_daemon_killed_between_observation_steps_is_rejected() {
    for pause in ["0", "0.5"] {
        let mut host = FakeHost::new();
        host.one_gpu().socket();
        let daemon = host.live_daemon_pid();
        let body = format!(
            "while read -r line; do :; done\n\
             {sleep} {pause}\n\
             read -r pid < \"$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid\"\n\
             kill -9 \"$pid\"\n\
             {rm} -f \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n\
             echo 'Cannot find MPS control daemon process' >&2\n\
             exit 1",
            sleep = system_program("sleep").display(),
            rm = system_program("rm").display(),
        );
        host.script("nvidia-cuda-mps-control", &body);

        let run = host.run(&args("probe", &MPS_REQUEST, &[]));

        run.assert_rejected(&format!("pause {pause}"));
        assert!(
            run.stderr.contains("could not reach the control daemon")
                || run.stderr.contains("found no control pipe"),
            "pause {pause}\n{}",
            run.render()
        );
        assert!(
            stops_running(daemon),
            "pause {pause}: the stand-in survived"
        );
        assert!(!host.pipe().join("control").exists());
    }
}

/// A pid file is never evidence of a daemon: naming an unrelated live process or a dead one,
/// it gives no `daemon_pid` beside a daemon that answers, and cannot rescue one that does not.
#[test]
fn a_pid_file_naming_an_unrelated_or_dead_process_proves_nothing() {
    let unrelated = unrelated_process();
    let dead = {
        let mut child = spawn(&mut Command::new(system_program("true")));
        child.wait().unwrap();
        child.id()
    };
    for (what, pid) in [("unrelated", unrelated.0.id()), ("dead", dead)] {
        let answering = FakeHost::healthy();
        std::fs::write(
            answering.pipe().join("nvidia-cuda-mps-control.pid"),
            pid.to_string(),
        )
        .unwrap();
        let evidence = answering.run(&args("probe", &MPS_REQUEST, &[])).json(what);
        assert_eq!(evidence["validated"], true, "{what}");
        assert_eq!(evidence["daemon_pid"], serde_json::Value::Null, "{what}");

        let mut gone = FakeHost::new();
        gone.one_gpu().daemon_gone().socket();
        std::fs::write(
            gone.pipe().join("nvidia-cuda-mps-control.pid"),
            pid.to_string(),
        )
        .unwrap();
        let run = gone.run(&args("probe", &MPS_REQUEST, &[]));
        run.assert_rejected(what);
        assert!(
            run.stderr.contains("could not reach the control daemon"),
            "{what}\n{}",
            run.render()
        );
    }
    assert!(running(unrelated.0.id()), "the probe touched the process");
}

/// As an unprivileged user: a root-owned 0600 control socket is a rejection, and a manifest
/// that user cannot write is left alone even in a directory where a rename would replace it.
#[test]
fn an_unprivileged_user_is_refused_and_replaces_no_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let host = FakeHost::healthy();
    let chmod = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(host.pipe(), 0o755);
    chmod(&host.pipe().join("control"), 0o600);
    let Some(run) = host.run_as_nobody(&args("probe", &MPS_REQUEST, &[])) else {
        return;
    };
    run.assert_rejected("0600 socket as nobody");
    assert!(
        run.stderr.contains("cannot access control pipe"),
        "{}",
        run.render()
    );

    let shared = host.root().join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o777); // anyone may rename into it (no sticky bit)
    let manifest = shared.join("m.json");
    std::fs::write(&manifest, "{\"owner\": \"root\"}").unwrap();
    chmod(&manifest, 0o644);
    let path = manifest.to_str().unwrap();
    let run = host
        .run_as_nobody(&[
            "probe",
            "--learner-device",
            "cpu",
            "--backend",
            "mjwarp",
            "--manifest",
            path,
        ])
        .unwrap();
    run.assert_discipline("manifest as nobody");
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(run.stdout.is_empty(), "{}", run.render());
    assert_eq!(std::fs::read(&manifest).unwrap(), b"{\"owner\": \"root\"}");
    let left: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left, ["m.json"], "a temporary file was left behind");
}

/// Snapshot and merge inputs that are links to devices, FIFOs or nothing, or a real capture cut
/// short: exit 2 with one `error: ` line, quickly (`/dev/zero` and `/dev/urandom` never end).
/// A link to a regular snapshot is read like the snapshot.
#[test]
fn snapshots_linked_to_devices_or_cut_short_are_input_errors() {
    let host = FakeHost::healthy();
    let root = host.root().to_owned();
    let link = |name: &str, target: &std::path::Path| {
        std::os::unix::fs::symlink(target, root.join(name)).unwrap();
    };
    for device in ["zero", "urandom", "null"] {
        link(
            &format!("{device}.json"),
            &std::path::Path::new("/dev").join(device),
        );
    }
    mkfifo(&root.join("fifo"));
    link("fifo.json", &root.join("fifo"));
    link("dangling.json", &root.join("nowhere"));
    link("dir.json", &root);

    let capture = host.run(&["capture"]);
    let snapshot = capture.json("capture");
    assert!(snapshot["gpu_query"].is_object());
    let text = capture.stdout.as_bytes();
    std::fs::write(root.join("half.json"), &text[..text.len() / 2]).unwrap();
    std::fs::write(root.join("cut.json"), &text[..text.len() - 3]).unwrap();
    std::fs::write(root.join("whole.json"), text).unwrap();
    link("link.json", &root.join("whole.json"));

    let started = Instant::now();
    for name in [
        "zero.json",
        "urandom.json",
        "null.json",
        "fifo.json",
        "dangling.json",
        "dir.json",
        "half.json",
        "cut.json",
    ] {
        for command in [
            args("check", &["--snapshot", name], &MPS_REQUEST),
            args("doctor", &["--snapshot", name], &MPS_REQUEST),
            vec!["merge", name],
        ] {
            let run = host.run(&command);
            run.assert_discipline(name);
            assert_eq!(run.code, 2, "{command:?}\n{}", run.render());
            assert!(run.stdout.is_empty(), "{command:?}");
            assert_eq!(
                run.stderr.lines().count(),
                1,
                "{command:?}\n{}",
                run.render()
            );
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let direct = host.run(&args("check", &["--snapshot", "whole.json"], &MPS_REQUEST));
    assert_eq!(direct.json("whole")["validated"], true);
    assert_eq!(
        host.run(&args("check", &["--snapshot", "link.json"], &MPS_REQUEST)),
        direct
    );
    // A name that is not UTF-8 and links to a device: the same refusal.
    let odd = not_utf8("dev");
    std::os::unix::fs::symlink("/dev/zero", root.join(&odd)).unwrap();
    let run = host.run_os(&[
        std::ffi::OsStr::new("check"),
        std::ffi::OsStr::new("--snapshot"),
        &odd,
        std::ffi::OsStr::new("--learner-device"),
        std::ffi::OsStr::new("cpu"),
        std::ffi::OsStr::new("--backend"),
        std::ffi::OsStr::new("mjwarp"),
    ]);
    run.assert_discipline("non-UTF-8 link to /dev/zero");
    assert_eq!(run.code, 2, "{}", run.render());
}

/// Each host query missing, failing, hanging (with a child), flooding or printing bytes that
/// are not UTF-8, the other one healthy; and control pipes that are a directory or a dangling
/// link: the built binary rejects, within about one deadline, and leaves no process behind.
#[test]
fn every_broken_host_query_and_odd_control_pipe_is_a_prompt_rejection() {
    let table = format!("0, {GPU0}, NVIDIA H100 80GB HBM3, 00000000:18:00.0");
    let sleep = system_program("sleep");
    let yes = system_program("yes");
    let behaviours = [
        ("missing", None),
        ("failing", Some("echo 'it broke' >&2\nexit 3".to_owned())),
        (
            "hanging",
            Some(format!(
                "{} 60 &\necho $! > \"$0.child\"\nwhile read -r line; do :; done\nwait",
                sleep.display()
            )),
        ),
        ("flooding", Some(format!("exec {} flood", yes.display()))),
        ("non-UTF-8", None),
    ];
    let mut cases = Vec::new();
    for tool in ["nvidia-smi", "nvidia-cuda-mps-control"] {
        for (what, body) in &behaviours {
            let mut host = FakeHost::new();
            host.gpus(&[&table]).daemon_answers("").socket();
            let program = host.root().join("bin").join(tool);
            match (*what, body) {
                ("missing", _) => std::fs::remove_file(&program).unwrap(),
                ("non-UTF-8", _) if tool == "nvidia-smi" => {
                    host.script(tool, &format!("printf '%s\\377\\n' '{table}'"));
                }
                ("non-UTF-8", _) => {
                    host.script(
                        tool,
                        "while read -r line; do :; done\nprintf '100.0\\n\\377\\n'",
                    );
                }
                (_, Some(body)) => {
                    host.script(tool, body);
                }
                (_, None) => unreachable!(),
            }
            cases.push((format!("{tool} {what}"), host, Some(program)));
        }
    }
    for kind in ["directory", "dangling link"] {
        let mut host = FakeHost::new();
        host.one_gpu().daemon_answers("");
        let control = host.pipe().join("control");
        if kind == "directory" {
            std::fs::create_dir(&control).unwrap();
        } else {
            std::os::unix::fs::symlink(host.root().join("gone"), &control).unwrap();
        }
        cases.push((format!("control {kind}"), host, None));
    }
    let mut children = 0;
    for (what, host, program) in &cases {
        let started = Instant::now();
        let run = host.run(&args("probe", &MPS_REQUEST, &["--timeout-ms", "500"]));
        let elapsed = started.elapsed();
        run.assert_rejected(what);
        assert!(elapsed < Duration::from_secs(5), "{what}: took {elapsed:?}");
        if let Some(child) = program
            .as_ref()
            .map(|program| program.with_extension("child"))
            .and_then(|path| std::fs::read_to_string(path).ok())
        {
            let pid: u32 = child.trim().parse().unwrap();
            assert!(
                stops_running(pid),
                "{what}: its child {pid} was left running"
            );
            children += 1;
        }
    }
    assert_eq!(children, 2, "each hanging tool recorded its child");
}
