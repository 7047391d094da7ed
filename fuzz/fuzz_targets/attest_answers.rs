//! `attest`'s reading of the daemon's answers and of each process's identity: a
//! fixed snapshot (server 4428 of UID 1000, learner 4267 and collector 4281 of UID 1000)
//! with the server query's stdout, the client query's stdout and the processes' start times
//! replaced from the input, then `attest`.
//!
//! Byte 0 chooses: bits 0-1 the text replaced (0: the client answer, 1: the server answer, 2/3:
//! both, split at the first NUL byte), bit 2 the `truncated` flag, bit 3 whether the
//! learner's start time was pinned, bit 4 whether the current start time equals it, bit 5 one
//! PID in both roles. Invariants: attested implies two PIDs, a `%.1f` first line on both
//! answers, both PIDs among the client answer's tokens, the pinned start time unchanged, and
//! no error line.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use sharing_policy::{
    ATTEST_SCHEMA, AttestFacts, CapturedText, ClientFacts, DAEMON_PROBE, OsText, Pid,
    PipeDirectorySource, ProcessFacts, QueryOutcome, QueryRecord, ServerFacts, attest,
    client_query, probe_stdin,
};

const DIR: &str = "/tmp/nvidia-mps";

fn record(stdin: String, stdout: &[u8], truncated: bool) -> QueryRecord {
    QueryRecord {
        program: "nvidia-cuda-mps-control".to_owned(),
        args: vec![],
        stdin,
        env: BTreeMap::from([("CUDA_MPS_PIPE_DIRECTORY".to_owned(), OsText::from(DIR))]),
        env_removed: vec![],
        timeout_ms: 5000,
        elapsed_ms: 1,
        outcome: QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: CapturedText::from_bytes(stdout, truncated),
            stderr: CapturedText::default(),
        },
        earlier_attempts: vec![],
    }
}

fn client(pid: i64) -> ClientFacts {
    ClientFacts {
        exists: Some(true),
        state: Some("S (sleeping)".to_owned()),
        status_uid: Some("1000\t1000\t1000\t1000".to_owned()),
        environ: Some(BTreeMap::new()),
        ..ClientFacts::new(pid)
    }
}

fn is_percentage(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.len() >= 3
        && bytes[bytes.len() - 2] == b'.'
        && bytes[bytes.len() - 1].is_ascii_digit()
        && bytes[..bytes.len() - 2].iter().all(u8::is_ascii_digit)
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let truncated = control & 0b100 != 0;
    let default_clients = b"100.0\n4267\n4281\n".as_slice();
    let default_servers = b"100.0\n4428\n".as_slice();
    let (clients, servers) = match control & 0b11 {
        0 => (rest, default_servers),
        1 => (default_clients, rest),
        _ => match rest.iter().position(|&b| b == 0) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, default_servers),
        },
    };
    let server_pid = Pid::new(4428).expect("a PID");
    let mut learner = client(4267);
    learner.start_time = Some(1000);
    if control & 0b1000 != 0 {
        learner.first_start_time = Some(if control & 0b1_0000 != 0 { 1000 } else { 999 });
    }
    let collector = if control & 0b10_0000 != 0 {
        learner.clone()
    } else {
        client(4281)
    };
    let facts = AttestFacts {
        schema: ATTEST_SCHEMA.to_owned(),
        os: "linux".to_owned(),
        pipe_directory: OsText::from(DIR),
        pipe_directory_source: PipeDirectorySource::Environment,
        caller: None,
        learner,
        collector,
        server_query: Some(record(probe_stdin(&DAEMON_PROBE), servers, false)),
        servers: vec![ServerFacts {
            pid: 4428,
            client_query: record(probe_stdin(&client_query(server_pid)), clients, truncated),
            process: ProcessFacts {
                status_uid: Some("1000\t1000\t1000\t1000".to_owned()),
                ..ProcessFacts::new(4428)
            },
        }],
        wait_ms: 0,
        rounds: 1,
        elapsed_ms: 1,
        host_name: None,
        pid_file: None,
        daemon_process: None,
        observer_pid_namespace: None,
    };
    let attestation = attest(&facts);
    if !attestation.attested {
        assert!(!attestation.error_lines().is_empty(), "a refusal says why");
        return;
    }
    assert!(attestation.error_lines().is_empty());
    assert_ne!(
        facts.learner.pid, facts.collector.pid,
        "one process attested as two"
    );
    let (Ok(clients), Ok(servers)) = (std::str::from_utf8(clients), std::str::from_utf8(servers))
    else {
        panic!("attested from a non-UTF-8 answer");
    };
    assert!(!truncated, "attested from a cut answer");
    for answer in [clients, servers] {
        assert!(
            answer.lines().next().is_some_and(is_percentage),
            "{answer:?}"
        );
    }
    let tokens: Vec<&str> = clients.split_ascii_whitespace().skip(1).collect();
    assert!(
        tokens.contains(&"4267") && tokens.contains(&"4281"),
        "{clients:?}"
    );
    if let Some(pinned) = facts.learner.first_start_time {
        assert_eq!(
            Some(pinned),
            facts.learner.start_time,
            "a reused PID attested"
        );
    }
});
