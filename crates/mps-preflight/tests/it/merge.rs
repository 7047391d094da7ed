//! `merge FILE...` over per-rank manifests and evidence files.

use serde_json::Value;

use crate::support::{FakeHost, MPS_REQUEST, NO_SUCH_PID_LINE, args};

/// Probes rank `rank` of `world` on `host` into `<name>`, as a manifest.
fn rank_manifest(host: &FakeHost, name: &str, rank: &str, world: &str) -> Value {
    std::fs::write(host.root().join(name), "{\"run_id\": \"r1\"}").unwrap();
    let run = host.run(&args(
        "probe",
        &MPS_REQUEST,
        &["--rank", rank, "--world-size", world, "--manifest", name],
    ));
    run.json(name)
}

#[test]
fn a_consistent_run_merges() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers(NO_SUCH_PID_LINE).socket();
    rank_manifest(&host, "rank0.json", "0", "2");
    let evidence = rank_manifest(&host, "rank1.json", "1", "2");
    std::fs::write(host.root().join("bare1.json"), evidence.to_string()).unwrap();
    let run = host.run(&["merge", "rank0.json", "rank1.json"]);
    let merged = run.json("merge");
    assert_eq!(merged["consistent"], true);
    assert_eq!(merged["world_size"], 2);
    assert_eq!(merged["validated"], true);
    assert_eq!(merged["ranks"][1]["source"], "rank1.json");
    // A bare evidence file merges like a manifest.
    assert_eq!(host.run(&["merge", "bare1.json", "rank0.json"]).code, 0);
}

#[test]
fn inconsistencies_exit_1_with_one_line_each() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers(NO_SUCH_PID_LINE).socket();
    rank_manifest(&host, "a.json", "0", "3");
    rank_manifest(&host, "b.json", "0", "3");
    std::fs::write(host.root().join("other.json"), "{\"run_id\": \"r1\"}").unwrap();
    let run = host.run(&["merge", "a.json", "b.json", "other.json"]);
    run.assert_rejected("merge");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines.iter().all(|line| line.starts_with("error: ")),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!(run.stderr);
}

#[test]
fn unreadable_inputs_exit_2() {
    let host = FakeHost::new();
    std::fs::write(host.root().join("bad.json"), "{nope").unwrap();
    for args in [
        &["merge", "missing.json"][..],
        &["merge", "bad.json"],
        &["merge", "."],
    ] {
        let run = host.run(args);
        run.assert_discipline(&format!("{args:?}"));
        assert_eq!(run.code, 2, "{args:?}\n{}", run.render());
        assert!(run.stdout.is_empty());
    }
}

/// Every unreadable input is its own `error:` line, with its name quoted and escaped however
/// hostile it is; the exit is still 2 and nothing is merged.
#[test]
fn every_unreadable_input_is_reported_with_its_name_escaped() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;

    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("4242\n").socket();
    rank_manifest(&host, "good.json", "0", "1");
    std::fs::write(host.root().join("bad.json"), "{nope").unwrap();
    let forged = "x\nerror: all ranks agree.json";
    std::fs::write(host.root().join(forged), "[").unwrap();
    let names: [&OsStr; 5] = [
        OsStr::new("missing.json"),
        OsStr::new("good.json"),
        OsStr::new("bad.json"),
        OsStr::new(forged),
        OsStr::from_bytes(b"gone\xff.json"),
    ];
    let mut argv = vec![OsStr::new("merge")];
    argv.extend(names);
    let run = host.run_os(&argv);
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(run.stdout.is_empty());
    insta::assert_snapshot!(run.stderr, @r"
    error: 'missing.json': cannot read: No such file or directory (os error 2)
    error: 'bad.json': not valid JSON: key must be a string at line 1 column 2
    error: 'x\nerror: all ranks agree.json': not valid JSON: EOF while parsing a list at line 1 column 1
    error: 'gone\xff.json': cannot read: No such file or directory (os error 2)
    ");
}

/// A shell pattern that matched nothing is named as such, not as a file that
/// cannot be read.
#[test]
fn a_pattern_that_matched_nothing_says_so() {
    let host = crate::support::FakeHost::new();
    let pattern = host.root().join("ranks/*/manifest.json");
    let run = host.run(&["merge", pattern.to_str().unwrap()]);
    run.assert_discipline("unmatched glob");
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(
        run.stderr.starts_with("error: no rank file matched '")
            && !run.stderr.contains("cannot read"),
        "{}",
        run.render()
    );
}
