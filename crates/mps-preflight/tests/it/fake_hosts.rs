//! Fake hosts: `probe` prints exactly what `check` prints on a fresh `capture` of the same
//! host, for every request; and what it prints is right.

use std::fmt::Write as _;

use crate::support::{FakeHost, GPU0, GPU1, MPS_REQUEST, NO_SUCH_PID_LINE, args, not_utf8};

/// The requests every fake host is probed with.
fn requests() -> Vec<Vec<&'static str>> {
    let mps = |extra: &[&'static str]| [&MPS_REQUEST[..], extra].concat();
    vec![
        mps(&[]),
        vec![
            "--request",
            "MPS",
            "--learner-device",
            "cuda",
            "--collector-device",
            "cuda:0",
            "--backend",
            "MJWarp",
        ],
        vec![
            "--request",
            "mps",
            "--learner-device",
            "cuda:0",
            "--collector-device",
            "cuda:1",
            "--backend",
            "mjwarp",
        ],
        mps(&["--rank", "1", "--world-size", "2"]),
        mps(&["--rank", "2", "--world-size", "2"]),
        vec![
            "--request",
            "mps",
            "--learner-device",
            "cuda:0",
            "--collector-device",
            "cuda:0",
            "--backend",
            "isaac",
        ],
        vec![
            "--request",
            "shared",
            "--learner-device",
            "cuda:0",
            "--collector-device",
            "cuda:0",
            "--backend",
            "mjwarp",
        ],
        mps(&["--learner-uuid", GPU0]),
        mps(&["--learner-uuid", GPU1]),
        vec![
            "--request",
            "null",
            "--learner-device",
            "cuda:0",
            "--collector-device",
            "cuda:0",
            "--backend",
            "mjwarp",
        ],
        vec![
            "--learner-device",
            "cuda:0",
            "--backend",
            "mjwarp",
            "--learner-uuid",
            GPU0,
        ],
        vec!["--learner-device", "cpu", "--backend", "mjwarp"],
    ]
}

/// The fake hosts, by name. Each keeps its processes and sockets alive until dropped.
fn hosts() -> Vec<(&'static str, FakeHost, Option<u32>)> {
    let mut out = Vec::new();

    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers(NO_SUCH_PID_LINE).socket();
    let pid = host.live_daemon_pid();
    out.push(("healthy-socket-with-server", host, Some(pid)));

    let host = FakeHost::healthy();
    out.push(("healthy-idle-daemon", host, None));

    let mut host = FakeHost::new();
    host.one_gpu().daemon_gone().socket();
    std::fs::write(host.pipe().join("nvidia-cuda-mps-control.pid"), "999999999").unwrap();
    out.push(("stale-socket", host, None));

    let mut host = FakeHost::new();
    host.one_gpu().daemon_gone();
    out.push(("no-control-pipe", host, None));

    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").fifo();
    out.push(("control-fifo", host, None));

    let mut host = FakeHost::new();
    host.one_gpu().daemon_gone().regular_control();
    out.push(("control-regular-file", host, None));

    let mut host = FakeHost::new();
    host.daemon_answers("").socket();
    out.push(("no-nvidia-smi", host, None));

    let mut host = FakeHost::new();
    host.tool(
        "nvidia-smi",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        "",
        9,
    )
    .daemon_answers("")
    .socket();
    out.push(("nvidia-smi-driver-failure", host, None));

    let mut host = FakeHost::new();
    host.two_gpus()
        .daemon_answers("")
        .socket()
        .env("CUDA_VISIBLE_DEVICES", "1");
    out.push(("numeric-mask", host, None));

    let mut host = FakeHost::new();
    host.two_gpus()
        .daemon_answers("")
        .socket()
        .env("CUDA_VISIBLE_DEVICES", "");
    out.push(("empty-mask", host, None));

    let mut host = FakeHost::new();
    host.mixed_gpus().daemon_answers("").socket();
    out.push(("mixed-models", host, None));

    let mut host = FakeHost::new();
    host.mixed_gpus()
        .daemon_answers("")
        .socket()
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    out.push(("mixed-models-pci-bus-id", host, None));

    let mut host = FakeHost::new();
    host.one_gpu()
        .daemon_answers("")
        .socket()
        .env("CUDA_VISIBLE_DEVICES", not_utf8("0"));
    out.push(("non-utf8-mask", host, None));

    let mut host = FakeHost::with_pipe_name(&not_utf8("pipe"));
    host.one_gpu().daemon_answers("").socket();
    out.push(("non-utf8-pipe-directory", host, None));

    out
}

/// The request's `--learner-uuid`, when it has one.
fn learner_uuid<'a>(request: &[&'a str]) -> Option<&'a str> {
    request
        .iter()
        .position(|arg| *arg == "--learner-uuid")
        .map(|i| request[i + 1])
}

/// The request without `--learner-uuid`.
fn without_uuid<'a>(request: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut skip = false;
    for arg in request {
        if skip {
            skip = false;
        } else if *arg == "--learner-uuid" {
            skip = true;
        } else {
            out.push(*arg);
        }
    }
    out
}

#[test]
fn probe_equals_check_of_capture() {
    for (name, host, pid) in hosts() {
        let mut transcript = String::new();
        for (number, request) in requests().iter().enumerate() {
            let what = format!("{name} request {number}: {request:?}");
            let probe = host.run(&args("probe", request, &[]));
            probe.assert_discipline(&what);

            // check on a fresh capture that recorded the learner UUID, if any.
            let snapshot = host.root().join(format!("capture-{number}.json"));
            let snapshot = snapshot.to_str().unwrap();
            let mut capture_args = vec!["capture", "--output", snapshot];
            if let Some(uuid) = learner_uuid(request) {
                capture_args.extend(["--learner-uuid", uuid]);
            }
            let capture = host.run(&capture_args);
            assert_eq!(
                (
                    capture.code,
                    capture.stdout.as_str(),
                    capture.stderr.as_str()
                ),
                (0, "", ""),
                "{what}"
            );
            let check = host.run(&args("check", request, &["--snapshot", snapshot]));
            assert_eq!(probe, check, "{what}: probe and check of capture differ");

            // check with the UUID given to check instead of recorded: the same again.
            if learner_uuid(request).is_some() {
                let bare = host.root().join(format!("capture-{number}-bare.json"));
                let bare = bare.to_str().unwrap();
                assert_eq!(host.run(&["capture", "-o", bare]).code, 0);
                let check = host.run(&args("check", &["--snapshot", bare], request));
                assert_eq!(probe, check, "{what}: --learner-uuid on check");
                // and a recorded UUID is replaced by the one given to check.
                let other = args("check", &["--snapshot", snapshot], &without_uuid(request));
                let recorded = host.run(&other);
                recorded.assert_discipline(&what);
            }

            if probe.code == 0 {
                let evidence = probe.json(&what);
                assert_eq!(evidence.as_object().unwrap().len(), 40, "{what}");
                let host_name = mps_host::read_host_name().to_string_lossy();
                assert_eq!(evidence["host_name"], host_name.as_str(), "{what}");
            } else {
                probe.assert_rejected(&what);
            }
            let _ = write!(
                transcript,
                "=== {}\n{}\n",
                request.join(" "),
                host.redact(&probe.render(), pid)
            );
        }
        insta::assert_snapshot!(format!("probe on {name}"), transcript);
    }
}

/// A capture is the snapshot schema, pretty JSON on stdout, and lossless for non-UTF-8 values.
/// A host with no `nvidia-smi` and no daemon: a null probe and a capture succeed with what
/// they always print, plus one note on stderr saying what could not be observed.
#[test]
fn nothing_observed_is_one_note_on_stderr() {
    let bare = FakeHost::new();
    let null = ["--learner-device", "cuda:0", "--collector-device", "cuda:0"];
    let probe = bare.run(&args("probe", &null, &[]));
    assert_eq!(probe.code, 0, "{}", probe.render());
    let evidence: serde_json::Value = serde_json::from_str(&probe.stdout).unwrap();
    for key in [
        "learner_gpu_uuid",
        "collector_gpu_uuid",
        "control_pipe_kind",
        "server_pid",
    ] {
        assert!(evidence[key].is_null(), "{key}: {}", probe.render());
    }
    let note = |run: &crate::support::Run| {
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one note: {}", run.render());
        let line = lines[0];
        assert!(line.starts_with("note: nothing about MPS could be observed on this host: no GPU table (nvidia-smi could not be started: "), "{line}");
        assert!(
            line.contains("no control daemon answered through "),
            "{line}"
        );
        assert!(
            line.contains("nvidia-cuda-mps-control could not be started: "),
            "{line}"
        );
        line.to_owned()
    };
    assert!(note(&probe).ends_with("; every host field of the evidence is null"));
    // The note changes nothing else: stdout is what `check` prints on a capture of this host.
    let capture = bare.run(&["capture"]);
    assert_eq!(capture.code, 0, "{}", capture.render());
    assert!(note(&capture).ends_with("; the snapshot records what each query met"));
    std::fs::write(bare.root().join("host.json"), &capture.stdout).unwrap();
    let check = bare.run(&args("check", &["--snapshot", "host.json"], &null));
    assert_eq!(
        (check.code, check.stderr.as_str()),
        (0, ""),
        "{}",
        check.render()
    );
    assert_eq!(check.stdout, probe.stdout);

    // Nothing to note where something was observed, or where nothing was looked for.
    let mut gpu = FakeHost::new();
    gpu.one_gpu();
    let seen = gpu.run(&args("probe", &null, &[]));
    assert_eq!(
        (seen.code, seen.stderr.as_str()),
        (0, ""),
        "{}",
        seen.render()
    );
    let cpu = bare.run(&["probe", "--learner-device", "cpu"]);
    assert_eq!((cpu.code, cpu.stderr.as_str()), (0, ""), "{}", cpu.render());
}

#[test]
fn capture_prints_a_snapshot() {
    let mut host = FakeHost::new();
    host.one_gpu()
        .daemon_answers("")
        .socket()
        .env("CUDA_VISIBLE_DEVICES", not_utf8("0,"));
    let run = host.run(&["capture"]);
    let snapshot = run.json("capture");
    assert_eq!(snapshot["schema"], "mps-preflight/host-facts/v4");
    assert!(run.stdout.starts_with("{\n  \"schema\""), "{}", run.stdout);
    assert_eq!(
        snapshot["env"]["cuda_visible_devices"]["non_utf8_bytes"],
        serde_json::json!([48, 44, 255, 254])
    );
    assert_eq!(snapshot["control_pipe"]["lstat"]["kind"], "socket");
    assert_eq!(snapshot["daemon_query"]["outcome"]["status"], "exited");
    // A cpu-only null probe observes nothing, but a capture always observes everything.
    assert!(snapshot["gpu_query"].is_object());
}

#[test]
fn doctor_lists_every_finding() {
    let mut host = FakeHost::new();
    host.daemon_gone(); // no nvidia-smi, no control pipe, no daemon
    let request = [
        "--request",
        "mps",
        "--learner-device",
        "cuda:0",
        "--collector-device",
        "cuda:1",
        "--backend",
        "mjwarp",
    ];
    let human = host.run(&args("doctor", &request, &[]));
    assert_eq!(human.code, 1, "{}", human.render());
    assert!(human.stderr.starts_with("error: "), "{}", human.render());
    let json = host.run(&args("doctor", &request, &["--format", "json"]));
    assert_eq!(json.code, 1);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["ok"], false);
    let findings = report["findings"].as_array().unwrap();
    assert!(findings.len() >= 2, "{}", json.stdout);
    for finding in findings {
        for key in ["code", "message", "found", "why", "fix"] {
            assert!(finding[key].is_string(), "{key} in {finding}");
        }
        // The human report shows each piece once: the message, then only the lines it lacks.
        let message = finding["message"].as_str().unwrap();
        let block = human
            .stdout
            .split("\n\n")
            .find(|block| block.contains(message))
            .unwrap_or_else(|| panic!("no block for {message}"));
        for (label, key) in [("found:", "found"), ("fix:  ", "fix")] {
            let value = finding[key].as_str().unwrap();
            let line = format!("   {label} {value}");
            let said = message.contains(value)
                || message.contains(&(value[..1].to_uppercase() + &value[1..]));
            assert_eq!(block.contains(&line), !said, "{key} of {message}:\n{block}");
        }
    }
    // The first finding is what probe rejects with.
    let probe = host.run(&args("probe", &request, &[]));
    assert_eq!(
        probe.stderr,
        format!("error: {}\n", findings[0]["message"].as_str().unwrap())
    );
    insta::assert_snapshot!(host.redact(&human.render(), None));

    // A healthy host: exit 0, "ok".
    let healthy = FakeHost::healthy();
    let request = MPS_REQUEST;
    let ok = healthy.run(&args("doctor", &request, &[]));
    assert_eq!(ok.code, 0, "{}", ok.render());
    assert!(ok.stdout.starts_with("ok: "), "{}", ok.render());
    let ok_json = healthy.run(&args("doctor", &request, &["--format", "json"]));
    let report = ok_json.json("doctor json");
    assert_eq!(report["ok"], true);
    assert_eq!(report["evidence"]["validated"], true);
    // The scope warning's fix depends on the caller's user: a root caller is
    // never told to run as root. The snapshot holds either as one marker.
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|uids| uids.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap();
    assert_eq!(
        !root,
        ok.render().contains("run the probe as root"),
        "{}",
        ok.render()
    );
    let fixes = [
        "run the probe as root or as the daemon's user, so that the daemon's /proc/<pid>/environ is readable",
        "check that the control daemon runs in this PID namespace (`ps -C nvidia-cuda-mps-control`; a 550+ daemon's pid file names its PID), then probe again. The probe runs as root; if the daemon does run here, the likely cause is that the probe lacks CAP_SYS_PTRACE (a container's default capabilities do not include it) and /proc is mounted with hidepid: give it CAP_SYS_PTRACE (Kubernetes: securityContext.capabilities.add: [\"SYS_PTRACE\"]; docker run --cap-add SYS_PTRACE)",
    ];
    let rendered = fixes
        .iter()
        .fold(healthy.redact(&ok.render(), None), |text, fix| {
            text.replace(fix, "[the fix for this caller's user]")
        });
    insta::assert_snapshot!("doctor on a healthy host", rendered);
}
