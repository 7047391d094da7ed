//! The exit-code table: 0 success, 1 rejected (stdout empty, stderr `error: …`), 2 usage error
//! or unreadable input.

use std::fmt::Write as _;

use crate::support::{FakeHost, MPS_REQUEST, args, bare_snapshot};

/// `(arguments, expected exit code)`; `SNAP` is a snapshot of a Linux host where nothing was
/// observed (so any explicit request is rejected, and a null one succeeds).
const TABLE: &[(&str, i32)] = &[
    (
        "check --snapshot SNAP --learner-device cpu --backend mjwarp",
        0,
    ),
    (
        "check --snapshot SNAP --request null --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp",
        0,
    ),
    (
        "check --snapshot SNAP --request NULL --learner-device cpu --backend other",
        0,
    ),
    (
        "check --snapshot SNAP --request null --learner-device cpu --backend mjwarp --rank -1 --world-size 0",
        0,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request bogus --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request  --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp",
        2,
    ),
    (
        "check --snapshot SNAP --request= --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend isaac",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend isaac --supported-backend isaac --supported-backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cpu --collector-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:x --collector-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank -1",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank=-1",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank 2 --world-size 2",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --world-size 0",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --world-size -3",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank 99999999999999999999999999 --world-size 99999999999999999999999999",
        // Beyond 64 bits: a usage error that repeats the value given.
        2,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank 9223372036854775807",
        1,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --timeout-ms -5",
        2,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank abc",
        2,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --world-size 1.5",
        2,
    ),
    (
        "check --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp --rank 0x1",
        2,
    ),
    (
        "check --snapshot SNAP --learner-device cpu --backend mjwarp --timeout-ms 0",
        2,
    ),
    (
        "check --snapshot SNAP --learner-device cpu --backend mjwarp --timeout-ms -5",
        2,
    ),
    (
        "check --snapshot SNAP --learner-device cpu --backend mjwarp --timeout-ms soon",
        2,
    ),
    ("check --snapshot SNAP --backend mjwarp", 2),
    ("check --snapshot SNAP --learner-device cpu", 0),
    ("check --snapshot SNAP --backend mjwarp", 2),
    ("check --learner-device cpu --backend mjwarp", 2),
    (
        "check --snapshot missing.json --learner-device cpu --backend mjwarp",
        2,
    ),
    (
        "check --snapshot SNAP --learner-device cpu --backend mjwarp --no-such-flag",
        2,
    ),
    (
        "doctor --snapshot SNAP --learner-device cpu --backend mjwarp",
        0,
    ),
    (
        "doctor --snapshot SNAP --learner-device cpu --backend mjwarp --format json",
        0,
    ),
    (
        "doctor --snapshot SNAP --request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp",
        1,
    ),
    (
        "doctor --snapshot SNAP --learner-device cpu --backend mjwarp --format xml",
        2,
    ),
    ("merge", 2),
    ("merge missing.json", 2),
    (
        "visibility --devices GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
        0,
    ),
    ("visibility --devices 0", 1),
    ("frobnicate", 2),
    ("", 2),
];

#[test]
fn exit_code_table() {
    let host = FakeHost::new();
    std::fs::write(host.root().join("snap.json"), bare_snapshot().to_string()).unwrap();
    let mut summary = String::new();
    for (line, expected) in TABLE {
        let args: Vec<&str> = line
            .split(' ')
            .filter(|arg| !arg.is_empty())
            .map(|arg| if arg == "SNAP" { "snap.json" } else { arg })
            .collect();
        let run = host.run(&args);
        run.assert_discipline(line);
        assert_eq!(run.code, *expected, "{line}\n{}", run.render());
        if run.code == 1 && !line.starts_with("doctor") {
            run.assert_rejected(line);
        }
        if run.code == 2 {
            assert!(
                run.stdout.is_empty(),
                "{line}: exit 2 with stdout\n{}",
                run.render()
            );
        }
        if run.code == 0 {
            assert!(run.stderr.is_empty(), "{line}\n{}", run.render());
        }
        let first = run.stderr.lines().next().unwrap_or("");
        let _ = writeln!(summary, "{expected} | {line}\n    {first}");
    }
    insta::assert_snapshot!(summary);
}

/// A rejected explicit request on a fake host: exit 1, nothing on stdout.
#[test]
fn probe_exit_codes_on_a_fake_host() {
    let host = FakeHost::healthy();
    let mps = args("probe", &MPS_REQUEST, &[]);
    let evidence = host.run(&mps).json("healthy probe");
    assert_eq!(evidence["validated"], true);
    std::fs::remove_file(host.pipe().join("control")).unwrap();
    let run = host.run(&mps);
    run.assert_rejected("no control pipe");
    assert!(
        run.stderr.contains("found no control pipe"),
        "{}",
        run.render()
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.render());
}

/// `--backend` is optional: without it nothing about backends is checked; given, it is.
#[test]
fn without_backend_no_backend_is_checked() {
    let host = FakeHost::new();
    let snapshot = crate::support::fixtures_dir().join("healthy-socket-with-server.json");
    let snapshot = snapshot.to_str().unwrap();
    let request = [
        "check",
        "--snapshot",
        snapshot,
        "--request",
        "mps",
        "--learner-device",
        "cuda:0",
        "--collector-device",
        "cuda:0",
    ];
    let plain = host.run(&request);
    assert_eq!(plain.code, 0, "{}", plain.render());
    let named = host.run(&[&request[..], &["--backend", "mujoco"]].concat());
    assert_eq!(named.code, 1, "{}", named.render());
    assert!(
        named
            .stderr
            .contains("only the mjwarp backend in this release; got --backend mujoco"),
        "{}",
        named.render()
    );
    let supported = host.run(
        &[
            &request[..],
            &["--backend", "mujoco", "--supported-backend", "mujoco"],
        ]
        .concat(),
    );
    assert_eq!(supported.code, 0, "{}", supported.render());
}
