//! The real 535 and 550 control daemons answer the settings session without
//! a GPU: no server, so `Server N not found` (550) or `Unknown command "get_server_status"`
//! (535), and an empty default pinned-memory limit. The answers are committed as
//! `fixtures/daemon-answers/real-daemon-<version>-settings.json` (a `QueryRecord`), which
//! sharing-policy's parser tests read; this test checks each still says what the binary says
//! (`UPDATE_FIXTURES=1` rewrites them).
#![allow(
    clippy::disallowed_methods,
    reason = "test: reads and writes fixture files"
)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::daemon::{Daemon, binary_or_skip, locate};
use mps_host::{ProcessRunner, Runner, daemon_query};
use sharing_policy::{OsText, Pid, QueryOutcome, QueryRecord, ReadOnlyCommand, separated};

/// The versions whose answers are committed, as their binaries spell them.
const VERSIONS: [&str; 2] = ["535.261.03", "550.163.01"];

/// A server PID that does not exist on the daemon (it has none without a GPU).
const NO_SERVER: i64 = 12345;

/// Every settings command the probe and `attest` send, about a server that does not exist and
/// device ordinal 0.
fn asked() -> Vec<ReadOnlyCommand> {
    let server = Pid::new(NO_SERVER).unwrap();
    vec![
        ReadOnlyCommand::GetServerStatus(server),
        ReadOnlyCommand::GetClientList(server),
        ReadOnlyCommand::GetActiveThreadPercentage(server),
        ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(0),
        ReadOnlyCommand::GetDevicePinnedMemLimit(server, 0),
    ]
}

/// The binaries to ask: the configured one, and the 550 cache the notes fetched, when present.
fn binaries() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = binary_or_skip("real_daemon_settings").into_iter().collect();
    if let Some(home) = std::env::var_os("HOME") {
        let extra = PathBuf::from(home)
            .join(".cache/mps-preflight-550")
            .join(crate::common::daemon::CACHED_BINARY);
        if extra.is_file() && locate().as_deref() != Some(extra.as_path()) {
            found.push(extra);
        }
    }
    found
}

/// The driver version the binary carries in its text, one of [`VERSIONS`].
fn version(binary: &Path) -> &'static str {
    let bytes = std::fs::read(binary).unwrap();
    VERSIONS
        .into_iter()
        .find(|v| bytes.windows(v.len()).any(|w| w == v.as_bytes()))
        .unwrap_or_else(|| panic!("{}: not one of {VERSIONS:?}", binary.display()))
}

fn fixture(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/daemon-answers")
        .join(format!("real-daemon-{version}-settings.json"))
}

/// The record as committed: the pipe directory is the default one, timings zeroed, so a
/// re-recording differs only where the daemon's answer does.
fn normalised(mut record: QueryRecord) -> QueryRecord {
    record.env.insert(
        "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
        OsText::from(sharing_policy::DEFAULT_PIPE_DIRECTORY),
    );
    record.elapsed_ms = 0;
    record
}

#[test]
fn the_real_daemons_answer_the_settings_session_as_recorded() {
    let update = std::env::var_os("UPDATE_FIXTURES").is_some();
    for binary in binaries() {
        let version = version(&binary);
        let daemon = Daemon::start(&binary);
        let runner = ProcessRunner {
            search_path: Some(OsString::from(&daemon.bin_dir)),
            ..ProcessRunner::default()
        };
        let directory = daemon.env().effective_pipe_directory();
        let query = daemon_query(&directory, &separated(&asked()), Duration::from_secs(10));
        let record = runner.run(&query);
        let QueryOutcome::Exited {
            code: Some(0),
            stderr,
            ..
        } = &record.outcome
        else {
            panic!("{version}: {record:?}");
        };
        assert_eq!(stderr.text, "", "{version}");
        // The session splits into one answer per question, as sharing-policy reads it.
        let answers = sharing_policy::settings_answers(&record, &directory).unwrap();
        let not_found = format!("Server {NO_SERVER} not found");
        let status = if version.starts_with("535") {
            "Unknown command \"get_server_status\"".to_owned()
        } else {
            not_found.clone()
        };
        let lines: Vec<Vec<String>> = answers.into_iter().map(|(_, lines)| lines).collect();
        assert_eq!(
            lines,
            [
                vec![status],
                vec![not_found.clone()],
                vec![not_found.clone()],
                vec![],
                vec![not_found]
            ],
            "{version}"
        );
        let path = fixture(version);
        let json = serde_json::to_string_pretty(&normalised(record)).unwrap() + "\n";
        if update {
            std::fs::write(&path, &json).unwrap();
        } else {
            assert_eq!(
                std::fs::read_to_string(&path).ok().as_deref(),
                Some(json.as_str()),
                "{} differs from what {version} answers now (UPDATE_FIXTURES=1 rewrites it)",
                path.display()
            );
        }
        // The daemon logs each command it ran: only read-only ones, then the harness's `quit`.
        daemon.quit();
        let log = daemon.control_log();
        let mut commands: Vec<&str> = log
            .lines()
            .filter_map(|line| line.split_once("] Cmd:").map(|(_, command)| command))
            .collect();
        assert_eq!(
            commands.pop(),
            Some("quit"),
            "{version}: control.log:\n{log}"
        );
        assert_eq!(commands.len(), 11, "{version}: control.log:\n{log}");
        for command in commands {
            let name = command.split(' ').next().unwrap_or_default();
            assert!(
                ReadOnlyCommand::NAMES.contains(&name),
                "{version}: {command:?} is not read-only"
            );
        }
    }
}
