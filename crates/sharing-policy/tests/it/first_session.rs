//! The probe's first session: the server list and the first ordinals' default pinned-memory
//! limits in one run of the front-end, so an idle daemon needs no second session. The answers
//! it gives are the answers the older two-session record gave: the same evidence, the same
//! rejections.

use sharing_policy::{
    Code, Evidence, HostFacts, QueryOutcome, ReadOnlyCommand, Request, first_session, probe_stdin,
    settings_commands, validate,
};

use crate::hosts;
use crate::support::mps;

/// `facts` as this probe records it: its daemon query rewritten as the first session (the
/// server list `servers`, each of the first ordinals' default limits `limit`), then the settings
/// session of what the first one did not ask, answered as `hosts::settings` answers it.
fn in_one_session(mut facts: HostFacts, servers: &str, limit: &str, state: &str) -> HostFacts {
    let mut stdout = format!("100.0\n{servers}");
    for _ in 0..mps_ordinals() {
        stdout.push_str("100.0\n");
        stdout.push_str(limit);
    }
    stdout.push_str("100.0\n");
    let mut record = hosts::daemon_query(&facts.env, QueryOutcome::exited(0, &stdout, ""));
    record.stdin = probe_stdin(&first_session());
    facts.daemon_query = Some(record);
    facts.settings_query = hosts::settings(&facts, |command| match command {
        ReadOnlyCommand::GetServerStatus(_) => state.to_owned(),
        _ => limit.to_owned(),
    });
    facts
}

fn mps_ordinals() -> u32 {
    sharing_policy::FIRST_SESSION_ORDINALS
}

/// The v3 fixture `name` (two sessions) and the same host recorded in one first session.
fn both(name: &str, servers: &str, limit: &str, state: &str) -> (HostFacts, HostFacts) {
    let old = crate::settings::fixtures()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, facts)| crate::props_reach::with_reach(facts))
        .unwrap();
    let new = in_one_session(old.clone(), servers, limit, state);
    (old, new)
}

fn judged(request: &Request, facts: &HostFacts) -> Result<Evidence, (Code, String)> {
    validate(request, facts).map_err(|rejection| (rejection.code(), rejection.to_string()))
}

#[test]
fn an_idle_daemon_is_asked_once_and_judged_as_before() {
    let (old, new) = both("v3-pinned-limit-512m", "", "512M\n", "");
    assert_eq!(settings_commands(&new), None, "nothing left to ask");
    let request = mps("cuda:0", Some("cuda:0"));
    let evidence = judged(&request, &new).unwrap();
    assert_eq!(evidence.default_pinned_mem_limit.as_deref(), Some("512M"));
    assert_eq!(judged(&request, &old), Ok(evidence));
    // Below a stated minimum: the same rejection, in the same words.
    let strict = Request {
        min_pinned_mem: sharing_policy::MemSize::parse_arg("1G"),
        ..request
    };
    let rejection = judged(&strict, &new).unwrap_err();
    assert_eq!(rejection.0, Code::PinnedMemBelowRequirement);
    assert_eq!(judged(&strict, &old), Err(rejection));
}

#[test]
fn a_served_daemon_is_asked_again_only_what_needs_the_server() {
    let (old, new) = both("v3-served-validated", "4428\n", "10G\n", "ACTIVE\n");
    let asked = settings_commands(&new).unwrap();
    assert!(
        !asked
            .iter()
            .any(|command| matches!(command, ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(_))),
        "{asked:?}"
    );
    assert!(asked.contains(&ReadOnlyCommand::GetServerStatus(
        sharing_policy::Pid::new(4428).unwrap()
    )));
    let request = mps("cuda:0", Some("cuda:0"));
    assert_eq!(judged(&request, &new), judged(&request, &old));
    assert!(judged(&request, &new).is_ok());
    let (old, new) = both("v3-server-fault", "4428\n", "10G\n", "FAULT\n");
    let rejection = judged(&request, &new).unwrap_err();
    assert_eq!(rejection.0, Code::ServerFault);
    assert_eq!(judged(&request, &old), Err(rejection));
}

#[test]
fn a_first_session_cut_short_or_out_of_shape_is_never_a_live_daemon() {
    let (_, good) = both("v3-pinned-limit-512m", "", "", "");
    let request = mps("cuda:0", Some("cuda:0"));
    assert!(judged(&request, &good).is_ok());
    let mut answers = vec![
        // The last liveness line lost.
        "100.0\n".repeat(mps_ordinals() as usize + 1),
        // A line after the last liveness line.
        "100.0\n".repeat(mps_ordinals() as usize + 2) + "4428\n",
        // A server list line that is not a PID.
        "100.0\nServer not found\n".to_owned() + &"100.0\n".repeat(mps_ordinals() as usize + 1),
        // The two-command probe's answer to a first session.
        "100.0\n".to_owned(),
    ];
    answers.push(String::new());
    for stdout in answers {
        let mut facts = good.clone();
        let record = facts.daemon_query.as_mut().unwrap();
        record.outcome = QueryOutcome::exited(0, &stdout, "");
        let rejection = judged(&request, &facts).unwrap_err();
        assert!(
            rejection
                .1
                .contains("expected a liveness line before each answer"),
            "{stdout:?}: {rejection:?}"
        );
    }
}

#[test]
fn defaults_are_never_read_from_a_first_session_that_is_not_judged_live() {
    let (_, good) = both("v3-pinned-limit-512m", "", "512M\n", "");
    let strict = Request {
        min_pinned_mem: sharing_policy::MemSize::parse_arg("1G"),
        ..mps("cuda:0", Some("cuda:0"))
    };
    let codes = |facts: &HostFacts| -> Vec<Code> {
        sharing_policy::explain(&strict, facts)
            .iter()
            .map(|finding| finding.code)
            .collect()
    };
    assert!(codes(&good).contains(&Code::PinnedMemBelowRequirement));
    let mut warned = good.clone();
    let record = warned.daemon_query.as_mut().unwrap();
    let QueryOutcome::Exited { stdout, .. } = &record.outcome else {
        unreachable!()
    };
    record.outcome = QueryOutcome::exited(0, &stdout.text.clone(), "warning\n");
    let found = codes(&warned);
    assert!(
        !found.contains(&Code::PinnedMemBelowRequirement),
        "{found:?}"
    );
    assert!(!found.is_empty());
}
