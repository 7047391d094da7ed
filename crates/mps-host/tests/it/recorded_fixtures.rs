//! The snapshots recorded from the real daemon (`examples/record_fixture.rs`) still load as
//! `HostFacts` and still say what the real daemon said.

use std::path::{Path, PathBuf};

use sharing_policy::{DaemonSearchMethod, FileKind, HostFacts, OsText, QueryOutcome, SCHEMA_V3};

fn recorded(kind: &str) -> Vec<(PathBuf, HostFacts)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("real-daemon-") && name.ends_with(&format!("-{kind}.json")) {
            let facts = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            found.push((path, facts));
        }
    }
    assert!(!found.is_empty(), "no recorded {kind} fixture");
    found
}

fn answer(facts: &HostFacts) -> (Option<i32>, &str, &str) {
    match &facts.daemon_query.as_ref().unwrap().outcome {
        QueryOutcome::Exited {
            code,
            stdout,
            stderr,
            ..
        } => (*code, stdout.text.as_str(), stderr.text.as_str()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_idle_capture_shows_a_live_idle_daemon() {
    for (path, facts) in recorded("idle") {
        // Recorded as v3, with the daemon's lock.
        assert_eq!(facts.schema, SCHEMA_V3, "{path:?}");
        assert_eq!(answer(&facts), (Some(0), "100.0\n", ""), "{path:?}");
        assert_eq!(
            facts.control_pipe.as_ref().unwrap().lstat.kind,
            FileKind::Socket
        );
        assert!(matches!(
            facts.gpu_query.as_ref().unwrap().outcome,
            QueryOutcome::SpawnFailed { .. }
        ));
        // The daemon's own process, proven by the lock it holds (535 and 550 alike): the one
        // /proc/locks line on control_lock names it.
        let search = facts.daemon_process.as_ref().unwrap();
        assert_eq!(search.method, DaemonSearchMethod::Lock, "{path:?}");
        let lock = search.lock.as_ref().unwrap();
        let [line] = lock.locks.as_deref().unwrap() else {
            panic!("{path:?}: {lock:?}");
        };
        let daemon = &search.processes[0];
        assert!(
            line.contains(&format!("POSIX  ADVISORY  WRITE {} ", daemon.pid)),
            "{path:?}: {line}"
        );
        let pipe = facts.env.effective_pipe_directory();
        assert_eq!(
            daemon
                .environ
                .as_ref()
                .and_then(|e| e.get("CUDA_MPS_PIPE_DIRECTORY")),
            Some(&pipe)
        );
        assert_eq!(
            daemon.cmdline.as_deref().and_then(<[OsText]>::last),
            Some(&OsText::from("-d"))
        );
        assert_eq!(facts.caller.unwrap().euid, 0, "recorded as root");
    }
}

#[test]
fn the_stale_capture_shows_a_socket_without_a_daemon() {
    for (path, facts) in recorded("stale") {
        assert_eq!(facts.schema, SCHEMA_V3, "{path:?}");
        // After `quit` the lock file stays, and no process holds it.
        let lock = facts
            .daemon_process
            .as_ref()
            .unwrap()
            .lock
            .as_ref()
            .unwrap();
        assert_eq!(lock.locks.as_deref(), Some(&[][..]), "{path:?}");
        assert_eq!(
            answer(&facts),
            (Some(1), "", "Cannot find MPS control daemon process\n"),
            "{path:?}"
        );
        assert_eq!(
            facts.control_pipe.as_ref().unwrap().lstat.kind,
            FileKind::Socket
        );
    }
}
