//! The snapshots recorded from the real daemon (`examples/record_fixture.rs`) still load as
//! `HostFacts` and still say what the real daemon said.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

use sharing_policy::{DaemonSearchMethod, FileKind, HostFacts, OsText, QueryOutcome, SCHEMA_V2};

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
        // Recorded as v2 (issue 10); v3 adds only the settings session, which needs a GPU
        // table or a server (neither exists on the recording host).
        assert_eq!(facts.schema, SCHEMA_V2, "{path:?}");
        assert_eq!(answer(&facts), (Some(0), "100.0\n", ""), "{path:?}");
        assert_eq!(
            facts.control_pipe.as_ref().unwrap().lstat.kind,
            FileKind::Socket
        );
        assert!(matches!(
            facts.gpu_query.as_ref().unwrap().outcome,
            QueryOutcome::SpawnFailed { .. }
        ));
        // v2: the daemon's own process, through the pid file (550) or a /proc scan (535).
        let search = facts.daemon_process.as_ref().unwrap();
        let expected = if facts.pid_file.as_ref().unwrap().contents.is_some() {
            DaemonSearchMethod::PidFile
        } else {
            DaemonSearchMethod::ProcScan
        };
        assert_eq!(search.method, expected, "{path:?}");
        let pipe = facts.env.effective_pipe_directory();
        let daemons: Vec<_> = search
            .processes
            .iter()
            .filter(|p| {
                p.cmdline
                    .as_deref()
                    .is_some_and(|c| c.last() == Some(&OsText::from("-d")))
                    && p.environ
                        .as_ref()
                        .and_then(|e| e.get("CUDA_MPS_PIPE_DIRECTORY"))
                        == Some(&pipe)
            })
            .collect();
        assert_eq!(daemons.len(), 1, "{path:?}: {search:?}");
        assert_eq!(facts.caller.unwrap().euid, 0, "recorded as root");
    }
}

#[test]
fn the_stale_capture_shows_a_socket_without_a_daemon() {
    for (path, facts) in recorded("stale") {
        assert_eq!(facts.schema, SCHEMA_V2, "{path:?}");
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
