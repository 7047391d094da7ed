//! `probe --manifest`: other keys and their order kept, corrupt manifests untouched.

use serde_json::Value;

use crate::support::{FakeHost, MPS_REQUEST, args};

const NULL_CPU: [&str; 5] = ["probe", "--learner-device", "cpu", "--backend", "mjwarp"];

fn probe_into(host: &FakeHost, manifest: &str) -> crate::support::Run {
    let mut args = NULL_CPU.to_vec();
    args.extend(["--manifest", manifest]);
    host.run(&args)
}

#[test]
fn keeps_every_key_and_the_order() {
    let host = FakeHost::new();
    let original = r#"{"schema_version": 1, "run": {"id": "abc", "steps": [1, 2]}, "cuda_process_sharing": {"stale": true}, "z": null}"#;
    std::fs::write(host.root().join("m.json"), original).unwrap();
    let run = probe_into(&host, "m.json");
    let evidence = run.json("probe --manifest");
    let written: Value =
        serde_json::from_slice(&std::fs::read(host.root().join("m.json")).unwrap()).unwrap();
    let keys: Vec<&str> = written
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "run",
            "cuda_process_sharing",
            "cuda_process_sharing_schema",
            "cuda_process_sharing_writer",
            "z"
        ]
    );
    assert_eq!(
        written["run"],
        serde_json::json!({"id": "abc", "steps": [1, 2]})
    );
    assert_eq!(written["cuda_process_sharing"], evidence);
    let names: Vec<&str> = std::fs::read_dir(host.root())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .map(|_| "tmp")
        .collect();
    assert!(names.is_empty(), "a temporary file was left behind");
}

#[test]
fn creates_a_missing_manifest() {
    let host = FakeHost::new();
    let evidence = probe_into(&host, "new.json").json("probe --manifest new");
    let written: Value =
        serde_json::from_slice(&std::fs::read(host.root().join("new.json")).unwrap()).unwrap();
    assert_eq!(
        written,
        serde_json::json!({
            "cuda_process_sharing": evidence,
            "cuda_process_sharing_schema": sharing_manifest::EVIDENCE_SCHEMA,
            // The CLI's own version: `--version` starts with the same words.
            "cuda_process_sharing_writer": format!("mps-preflight {}", env!("CARGO_PKG_VERSION"))
        })
    );
}

#[test]
fn refused_manifests_are_untouched_and_exit_2() {
    let host = FakeHost::new();
    std::fs::create_dir(host.root().join("dir.json")).unwrap();
    std::os::unix::fs::symlink("target.json", host.root().join("link.json")).unwrap();
    std::fs::write(host.root().join("target.json"), "{}").unwrap();
    let cases: [(&str, &[u8]); 5] = [
        ("corrupt.json", b"{\"run\": 1,,}"),
        ("array.json", b"[1, 2]"),
        ("binary.json", b"\x00\xff\xfe garbage"),
        ("empty.json", b""),
        ("number.json", b"42\n"),
    ];
    let mut messages = Vec::new();
    for (name, content) in cases {
        std::fs::write(host.root().join(name), content).unwrap();
        let run = probe_into(&host, name);
        run.assert_discipline(name);
        assert_eq!(run.code, 2, "{name}\n{}", run.render());
        assert!(run.stdout.is_empty(), "{name}");
        assert_eq!(
            std::fs::read(host.root().join(name)).unwrap(),
            content,
            "{name} was modified"
        );
        messages.push(run.stderr);
    }
    for name in ["dir.json", "link.json"] {
        let run = probe_into(&host, name);
        assert_eq!(run.code, 2, "{name}\n{}", run.render());
        assert!(run.stdout.is_empty());
        messages.push(run.stderr);
    }
    assert_eq!(
        std::fs::read(host.root().join("target.json")).unwrap(),
        b"{}"
    );
    assert!(
        std::fs::symlink_metadata(host.root().join("link.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    insta::assert_snapshot!(messages.concat());
}

#[test]
fn a_rejected_request_records_nothing() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_gone(); // no control pipe
    std::fs::write(host.root().join("m.json"), "{\"a\": 1}").unwrap();
    let run = host.run(&args("probe", &MPS_REQUEST, &["--manifest", "m.json"]));
    run.assert_rejected("rejected with manifest");
    assert_eq!(
        std::fs::read(host.root().join("m.json")).unwrap(),
        b"{\"a\": 1}"
    );
}

/// The process's umask, from `/proc/self/status` (the binary inherits it).
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("Umask:"))
        .unwrap();
    u32::from_str_radix(line.trim_start_matches("Umask:").trim(), 8).unwrap()
}

fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// One rule for every file written: a new one gets 0666 less the umask, one
/// replaced keeps its mode; manifests and `capture --output` alike.
#[test]
fn new_files_get_the_umask_default_and_replaced_files_keep_their_mode() {
    let host = FakeHost::new();
    let (manifest, snapshot) = (host.root().join("m.json"), host.root().join("h.json"));
    assert_eq!(probe_into(&host, "m.json").code, 0);
    assert_eq!(host.run(&["capture", "--output", "h.json"]).code, 0);
    for path in [&manifest, &snapshot] {
        assert_eq!(mode(path), 0o666 & !umask(), "{}", path.display());
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o640))
            .unwrap();
    }
    assert_eq!(probe_into(&host, "m.json").code, 0);
    assert_eq!(host.run(&["capture", "--output", "h.json"]).code, 0);
    for path in [&manifest, &snapshot] {
        assert_eq!(mode(path), 0o640, "{}", path.display());
    }
}

/// A failed write says what was asked, what failed and what state the file is
/// in; it names no temporary file and never claims a null request was validated.
#[test]
fn a_failed_write_says_what_was_asked_and_the_files_state() {
    let host = FakeHost::new();
    let run = probe_into(&host, "/nonexistent-dir/m.json");
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    insta::assert_snapshot!(run.stderr, @"error: the null request's evidence was collected, but recording it in --manifest '/nonexistent-dir/m.json' failed: '/nonexistent-dir': cannot create a temporary file there: No such file or directory (os error 2); no file was created, and the evidence is not printed, so the run has no record of it");
    std::fs::write(host.root().join("array.json"), "[1]").unwrap();
    let run = probe_into(&host, "array.json");
    assert!(
        run.stderr.contains("; it was left unchanged,"),
        "{}",
        run.stderr
    );
    // capture --output creates missing directories, so the directory is a regular file here.
    std::fs::write(host.root().join("plain"), "").unwrap();
    let run = host.run(&["capture", "--output", "plain/h.json"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    assert!(!run.stderr.contains(".tmp"), "{}", run.stderr);
    insta::assert_snapshot!(run.stderr.lines().last().unwrap(), @"error: cannot write the snapshot to --output: 'plain': cannot create the directory: File exists (os error 17); no file was created");
}

/// `capture --output` creates missing parent folders, as `test --junit` does.
#[test]
fn capture_output_creates_missing_parent_folders() {
    let host = crate::support::FakeHost::new();
    let output = host.root().join("hosts/rack-7/node-1.json");
    let run = host.run(&["capture", "--output", output.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.render());
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    assert_eq!(written["schema"], sharing_policy::SCHEMA);
}
