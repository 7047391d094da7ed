//! Bad input never panics: every refusal is an `error: ` line and exit 1 or 2.

use std::ffi::OsStr;
use std::fmt::Write as _;

use crate::support::{FakeHost, MPS_REQUEST, args, bare_snapshot, fixtures_dir, not_utf8};

#[test]
fn unreadable_snapshots_exit_2() {
    let host = FakeHost::new();
    let write =
        |name: &str, content: &[u8]| std::fs::write(host.root().join(name), content).unwrap();
    write("not-json.json", b"schema: v1\n");
    write("binary.json", b"\x00\x01\xff\xfe");
    write("empty.json", b"");
    write("array.json", b"[]");
    write("no-schema.json", b"{\"os\": \"linux\"}");
    let mut old = bare_snapshot();
    old["schema"] = "mps-preflight/host-facts/v0".into();
    write("v0.json", old.to_string().as_bytes());
    let mut future = bare_snapshot();
    future["schema"] = "mps-preflight/host-facts/v5".into();
    write("v4.json", future.to_string().as_bytes());
    // Each schema knows exactly its own fields.
    let mut mig = bare_snapshot();
    mig["gpu_is_mig_slice"] = true.into();
    write("v1-unknown-top-level.json", mig.to_string().as_bytes());
    let mut nested = bare_snapshot();
    nested["daemon_query"] = serde_json::json!({
        "program": "nvidia-cuda-mps-control", "args": [], "stdin": "", "env": {},
        "timeout_ms": 5000, "elapsed_ms": 3, "daemon_is_multiuser": true,
        "outcome": {"status": "spawn_failed", "error": "x"}
    });
    write(
        "v1-unknown-in-daemon-query.json",
        nested.to_string().as_bytes(),
    );
    let mut v2_field = bare_snapshot();
    v2_field["caller"] = serde_json::json!({"uid": 0, "euid": 0});
    write("v1-with-v2-field.json", v2_field.to_string().as_bytes());
    let mut v2_unknown = bare_snapshot();
    v2_unknown["schema"] = "mps-preflight/host-facts/v2".into();
    v2_unknown["caller"] = serde_json::json!({"uid": 0, "euid": 0, "groups": []});
    write(
        "v2-unknown-in-caller.json",
        v2_unknown.to_string().as_bytes(),
    );
    let mut wrong_type = bare_snapshot();
    wrong_type["schema"] = 1.into();
    write("schema-number.json", wrong_type.to_string().as_bytes());
    let mut broken = bare_snapshot();
    broken["os"] = 5.into();
    write("broken.json", broken.to_string().as_bytes());
    std::fs::create_dir(host.root().join("dir.json")).unwrap();
    let status = crate::support::spawn(
        std::process::Command::new("mkfifo").arg(host.root().join("fifo.json")),
    )
    .wait()
    .unwrap();
    assert!(status.success());
    let big = std::fs::File::create(host.root().join("big.json")).unwrap();
    big.set_len(16 * 1024 * 1024 + 1).unwrap();

    let old_fixture = fixtures_dir().join("old-snapshot-schema.json");
    let old_fixture = old_fixture.to_str().unwrap();
    let names = [
        "missing.json",
        "not-json.json",
        "binary.json",
        "empty.json",
        "array.json",
        "no-schema.json",
        "v0.json",
        "v4.json",
        "v1-unknown-top-level.json",
        "v1-unknown-in-daemon-query.json",
        "v1-with-v2-field.json",
        "v2-unknown-in-caller.json",
        "schema-number.json",
        "broken.json",
        "dir.json",
        "fifo.json",
        "big.json",
        old_fixture,
    ];
    let mut transcript = String::new();
    for name in names {
        for command in ["check", "doctor"] {
            let run = host.run(&args(command, &["--snapshot", name], &MPS_REQUEST));
            run.assert_discipline(name);
            assert_eq!(run.code, 2, "{command} {name}\n{}", run.render());
            assert!(run.stdout.is_empty(), "{name}");
            assert_eq!(run.stderr.lines().count(), 1, "{name}\n{}", run.render());
            if command == "check" {
                let shown = run
                    .stderr
                    .replace(&fixtures_dir().display().to_string(), "[FIXTURES]");
                let _ = write!(transcript, "{shown}");
            }
        }
    }
    // A path that is not UTF-8 is only a missing file.
    let mut args: Vec<&OsStr> = vec![OsStr::new("check"), OsStr::new("--snapshot")];
    let path = not_utf8("snap");
    args.push(&path);
    args.extend(MPS_REQUEST.iter().map(OsStr::new));
    let run = host.run_os(&args);
    run.assert_discipline("non-UTF-8 path");
    assert_eq!(run.code, 2);
    let _ = write!(transcript, "{}", run.stderr);
    insta::assert_snapshot!(transcript);
}

#[test]
fn non_utf8_arguments_are_usage_errors() {
    let host = FakeHost::new();
    let bad = not_utf8("cuda:");
    let args: Vec<&OsStr> = ["probe", "--backend", "mjwarp", "--learner-device"]
        .iter()
        .map(OsStr::new)
        .chain([bad.as_os_str()])
        .collect();
    let run = host.run_os(&args);
    run.assert_discipline("non-UTF-8 argument");
    assert_eq!(run.code, 2, "{}", run.render());
}

/// Every CUDA variable set to bytes that are not UTF-8: no command panics.
#[test]
fn non_utf8_environment_never_panics() {
    let mut host = FakeHost::with_pipe_name(&not_utf8("pipe"));
    host.one_gpu().daemon_answers("").socket();
    host.env("CUDA_VISIBLE_DEVICES", not_utf8("0"))
        .env("CUDA_DEVICE_ORDER", not_utf8("PCI"))
        .env("CUDA_MPS_LOG_DIRECTORY", not_utf8("/log"));
    let runs = [
        ("probe", host.run(&args("probe", &MPS_REQUEST, &[]))),
        (
            "probe null",
            host.run(&args("probe", &MPS_REQUEST[2..], &[])),
        ),
        ("doctor", host.run(&args("doctor", &MPS_REQUEST, &[]))),
        ("visibility", host.run(&["visibility"])),
        ("capture", host.run(&["capture"])),
    ];
    for (what, run) in &runs {
        run.assert_discipline(what);
    }
    assert_eq!(runs[0].1.code, 1, "{}", runs[0].1.render());
    // The null request records what it can, and never rejects.
    let ambient = runs[1].1.json("probe null");
    assert_eq!(ambient["validated"], false);
    assert_eq!(runs[2].1.code, 1);
    assert_eq!(runs[3].1.code, 1);
    // The capture keeps the bytes, and a check of it agrees with probe.
    let snapshot = runs[4].1.json("capture");
    assert!(snapshot["env"]["cuda_mps_pipe_directory"]["non_utf8_bytes"].is_array());
    std::fs::write(host.root().join("snap.json"), &runs[4].1.stdout).unwrap();
    assert_eq!(
        host.run(&args("check", &["--snapshot", "snap.json"], &MPS_REQUEST)),
        runs[0].1
    );
}

/// A wrong-typed 13 MB string in a snapshot gives an error line of a few
/// hundred bytes that says how much of the value was cut, not a 13 MB one.
#[test]
fn a_huge_wrong_typed_value_gives_a_short_error() {
    let host = FakeHost::new();
    let huge = || serde_json::Value::String("x".repeat(13_000_000));
    let check = |field: &str, code: i32| {
        let mut snapshot = bare_snapshot();
        snapshot[field] = huge();
        std::fs::write(host.root().join("huge.json"), snapshot.to_string()).unwrap();
        let run = host.run(&args("check", &MPS_REQUEST, &["--snapshot", "huge.json"]));
        let head = &run.stderr[..run.stderr.len().min(2000)];
        assert_eq!(run.code, code, "{field}: {head}");
        assert!(
            run.stderr.len() < 1000,
            "{field}: {} bytes on stderr",
            run.stderr.len()
        );
        assert!(
            run.stderr.contains(" more characters cut)"),
            "{field}: {head}"
        );
    };
    // serde quotes the wrong-typed value (exit 2)...
    check("gpu_query", 2);
    // ...and the policy quotes a value it rejects (exit 1).
    check("os", 1);
}
