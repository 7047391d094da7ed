//! Daemon output and pid-file parsing, as `validate` does them: a healthy recorded snapshot
//! (`fixtures/hosts/healthy-socket-with-server.json`: live socket, a server, a live pid file)
//! with the daemon query's stdout and/or the pid file's contents replaced by the input, then
//! `validate` and `explain` for an explicit and a null request.
//!
//! The first input byte chooses what is replaced and how: bits 0-1 the field (0: daemon
//! stdout, 1: pid-file contents, 2/3: both, split at the first NUL byte), bit 2 the
//! `truncated` flag, bits 3-4 `pid_alive` (None / Some(false) / Some(true)), bit 5 the daemon's
//! exit code (0 or 1), bit 6 whether the pid file's process name is the daemon's.
//! Invariant: `explain` is empty exactly when `validate` is `Ok`; `parse_pid` finds only
//! positive PIDs.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mps_preflight_fuzz::validate_and_explain_agree;
use sharing_policy::{CapturedText, HostFacts, QueryOutcome, Request, parse_pid};

const FIXTURE: &str = include_str!("../../fixtures/hosts/healthy-socket-with-server.json");

fn base() -> &'static HostFacts {
    static BASE: OnceLock<HostFacts> = OnceLock::new();
    BASE.get_or_init(|| serde_json::from_str(FIXTURE).expect("the healthy fixture parses"))
}

fn requests() -> &'static [Request; 2] {
    static REQUESTS: OnceLock<[Request; 2]> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        [
            Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp"),
            Request::new(None, "cuda:0", Some("cuda:0"), "mjwarp"),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let truncated = control & 0b100 != 0;
    let (stdout, pid) = match control & 0b11 {
        0 => (Some(rest), None),
        1 => (None, Some(rest)),
        _ => match rest.iter().position(|&b| b == 0) {
            Some(at) => (rest.get(..at), rest.get(at + 1..)),
            None => (Some(rest), Some(&[][..])),
        },
    };

    let mut facts = base().clone();
    if let Some(stdout) = stdout {
        let query = facts
            .daemon_query
            .as_mut()
            .expect("fixture has a daemon query");
        query.outcome = QueryOutcome::Exited {
            code: Some(i32::from(control & 0b10_0000 != 0)),
            signal: None,
            stdout: CapturedText::from_bytes(stdout, truncated),
            stderr: CapturedText::default(),
        };
    }
    if let Some(pid) = pid {
        let file = facts.pid_file.as_mut().expect("fixture has a pid file");
        let contents = CapturedText::from_bytes(pid, truncated);
        if let Some(parsed) = parse_pid(&contents.text) {
            assert!(parsed > 0);
        }
        file.contents = Some(contents);
        file.error = None;
        file.pid_alive = match (control >> 3) & 0b11 {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        };
        file.process_name = if control & 0b100_0000 != 0 {
            Some("nvidia-cuda-mps".to_owned())
        } else {
            Some("bash".to_owned())
        };
    }

    for request in requests() {
        if let Some(evidence) = validate_and_explain_agree(request, &facts) {
            assert!(evidence.server_pid.is_none_or(|pid| pid > 0));
            assert!(evidence.daemon_pid.is_none_or(|pid| pid > 0));
        }
    }
});
