//! The manifest lock protocol with writers that are not this crate: Python
//! launchers following docs/cli.md's example, alongside `record_in_manifest` in threads.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::fs::File;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use sharing_manifest::{ManifestError, lock_path, record_in_manifest, record_in_manifest_within};
use sharing_policy::Evidence;

/// docs/cli.md's launcher example, in a loop: one new key per locked read-modify-write.
const PYTHON_WRITER: &str = r#"
import fcntl, json, os
import sys
manifest, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(count):
    with open(os.open(manifest + ".lock", os.O_RDWR | os.O_CREAT, 0o644)) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held until the file is closed
        with open(manifest) as f: data = json.load(f)
        data[f"{writer}-{i}"] = i
        with open(manifest + ".tmp", "w") as f: json.dump(data, f)
        os.replace(manifest + ".tmp", manifest)
"#;

fn evidence(rank: i64) -> Evidence {
    Evidence {
        learner_device: Some("cpu".to_owned()),
        ..Evidence::unobserved(rank, 8)
    }
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn concurrent_writers_of_both_kinds_lose_no_key() {
    const PYTHON_WRITERS: usize = 4;
    const KEYS_EACH: usize = 25;
    const OUR_WRITERS: i64 = 4;
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("run.json");
    std::fs::write(&manifest, r#"{"a": 1}"#).unwrap();

    #[allow(
        clippy::disallowed_methods,
        reason = "test: a launcher that is not this tool"
    )]
    let pythons: Vec<_> = (0..PYTHON_WRITERS)
        .map(|writer| {
            Command::new("python3")
                .args(["-c", PYTHON_WRITER])
                .arg(&manifest)
                .arg(format!("py{writer}"))
                .arg(KEYS_EACH.to_string())
                .spawn()
                .expect("python3 is needed for this test (.ci/run installs it)")
        })
        .collect();
    // This tool keeps writing for as long as any launcher does, so their writes interleave.
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for rank in 0..OUR_WRITERS {
            let (manifest, done) = (&manifest, &done);
            scope.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    record_in_manifest(manifest, &evidence(rank)).unwrap();
                }
            });
        }
        for mut python in pythons {
            assert!(python.wait().unwrap().success());
        }
        done.store(true, Ordering::Relaxed);
    });

    let written = read(&manifest);
    let object = written.as_object().unwrap();
    assert_eq!(written["a"], 1);
    assert!(written["cuda_process_sharing"]["rank"].as_u64().unwrap() < 4);
    let lost: Vec<String> = (0..PYTHON_WRITERS)
        .flat_map(|writer| (0..KEYS_EACH).map(move |i| format!("py{writer}-{i}")))
        .filter(|key| !object.contains_key(key))
        .collect();
    assert!(lost.is_empty(), "lost keys: {lost:?}");
    // "a", the evidence, its version and its writer, then the launchers'
    // keys.
    assert_eq!(
        written["cuda_process_sharing_schema"],
        sharing_manifest::EVIDENCE_SCHEMA
    );
    assert_eq!(
        written["cuda_process_sharing_writer"],
        sharing_manifest::MANIFEST_WRITER
    );
    assert_eq!(object.len(), 4 + PYTHON_WRITERS * KEYS_EACH);
    let lock = std::fs::metadata(lock_path(&manifest)).unwrap();
    assert!(lock.is_file(), "the lock file is never removed");
}

#[test]
fn a_held_lock_is_waited_for_within_the_bound_and_then_the_manifest_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("run.json");
    std::fs::write(&manifest, "{\"a\": 1}").unwrap();
    let holder = File::create(lock_path(&manifest)).unwrap();
    rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();

    let started = Instant::now();
    let err =
        record_in_manifest_within(&manifest, &evidence(0), Duration::from_millis(300)).unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(matches!(err, ManifestError::LockTimeout { .. }), "{err:?}");
    assert!(err.to_string().contains("run.json.lock"), "{err}");
    assert_eq!(std::fs::read(&manifest).unwrap(), b"{\"a\": 1}");

    // Released: the next writer gets it at once.
    drop(holder);
    record_in_manifest_within(&manifest, &evidence(0), Duration::from_millis(300)).unwrap();
    assert_eq!(read(&manifest)["a"], 1);
}

#[test]
fn a_missing_lock_file_is_created_0644_and_a_symlinked_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("run.json");
    record_in_manifest(&manifest, &evidence(0)).unwrap();
    let lock = std::fs::metadata(lock_path(&manifest)).unwrap();
    assert_eq!(lock.permissions().mode() & 0o7777, 0o644);

    let other = dir.path().join("other.json");
    std::fs::write(&other, "{}").unwrap();
    let target = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, lock_path(&other)).unwrap();
    let err = record_in_manifest(&other, &evidence(0)).unwrap_err();
    assert!(matches!(err, ManifestError::Lock { .. }), "{err:?}");
    assert!(!target.exists(), "nothing is created through the link");
    assert_eq!(std::fs::read(&other).unwrap(), b"{}");
}

/// The writer above is docs/cli.md's launcher example, line for line (inside its loop).
#[test]
fn the_documented_example_is_the_one_tested() {
    let docs = include_str!("../../../docs/cli.md");
    let (_, example) = docs
        .split_once("```python\n")
        .and_then(|(before, rest)| rest.split_once("```").map(|(code, _)| (before, code)))
        .expect("docs/cli.md has a Python example");
    for line in example
        .lines()
        .filter(|line| !line.contains("data[\"launcher\"]"))
    {
        assert!(
            PYTHON_WRITER
                .lines()
                .any(|tested| tested.trim() == line.trim()),
            "the documented line {line:?} is not the tested one"
        );
    }
}
