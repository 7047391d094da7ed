//! Schema v3's settings session (issue 20 part 4): the state of the server the clients would
//! join, and the daemon's defaults against the request's stated minimums.

use sharing_policy::{
    Code, HostFacts, MemSize, Percentage, ReadOnlyCommand, Request, SCHEMA, validate,
};

use crate::hosts::{self, served};
use crate::support::mps;

/// A v3 host (two H100s, the daemon pinned to the first, so its ordinal 0): the daemon answers
/// `answer`, its server (if any) is in `state`, and the default pinned-memory limit of every
/// ordinal is `limit` (`""`: none set).
fn v3(answer: &str, state: &str, limit: &str) -> HostFacts {
    let mut facts = served(answer, 1000, "Exclusive_Process");
    SCHEMA.clone_into(&mut facts.schema);
    facts.settings_query = hosts::settings(&facts, |command| match command {
        ReadOnlyCommand::GetServerStatus(_) => state.to_owned(),
        _ => limit.to_owned(),
    });
    facts
}

/// The v3 fixtures, one per rule: committed under fixtures/hosts/ by `hosts::all`.
pub(crate) fn fixtures() -> Vec<(&'static str, HostFacts)> {
    vec![
        (
            "v3-served-validated",
            v3("100.0\n4428\n", "ACTIVE\n", "10G\n"),
        ),
        ("v3-server-fault", v3("100.0\n4428\n", "FAULT\n", "10G\n")),
        (
            "v3-server-initializing",
            v3("100.0\n4428\n", "INITIALIZING\n", "10G\n"),
        ),
        ("v3-no-pinned-limit", v3("33.0\n", "", "")),
        ("v3-pinned-limit-512m", v3("100.0\n", "", "512M\n")),
        (
            "v3-535-no-server-status",
            v3(
                "100.0\n4428\n",
                "Unknown command \"get_server_status\"\n",
                "10G\n",
            ),
        ),
    ]
}

fn fixture(name: &str) -> HostFacts {
    fixtures()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, facts)| facts)
        .unwrap()
}

fn request() -> Request {
    mps("cuda:0", Some("cuda:0"))
}

#[test]
fn a_healthy_v3_host_records_the_server_state_and_both_defaults() {
    let evidence = validate(&request(), &fixture("v3-served-validated")).unwrap();
    assert_eq!(evidence.server_status.as_deref(), Some("ACTIVE"));
    assert_eq!(evidence.default_pinned_mem_limit.as_deref(), Some("10G"));
    assert_eq!(
        evidence.default_active_thread_percentage,
        Percentage::from_tenths(1000)
    );
    assert!(evidence.unverified.is_empty(), "{:?}", evidence.unverified);
}

#[test]
fn a_faulted_server_is_a_rejection_and_an_initializing_one_is_recorded() {
    let rejection = validate(&request(), &fixture("v3-server-fault")).unwrap_err();
    assert_eq!(rejection.code(), Code::ServerFault);
    assert!(
        rejection
            .to_string()
            .contains("MPS server 4428 is in FAULT")
    );
    let evidence = validate(&request(), &fixture("v3-server-initializing")).unwrap();
    assert_eq!(evidence.server_status.as_deref(), Some("INITIALIZING"));
}

#[test]
fn a_daemon_without_get_server_status_leaves_the_state_unverified() {
    let evidence = validate(&request(), &fixture("v3-535-no-server-status")).unwrap();
    assert_eq!(evidence.server_status, None);
    assert_eq!(evidence.unverified, [Code::ServerStatusUnverified]);
    let strict = Request {
        require_verified: true,
        ..request()
    };
    let rejection = validate(&strict, &fixture("v3-535-no-server-status")).unwrap_err();
    assert_eq!(rejection.code(), Code::ServerStatusUnverified);
    assert!(rejection.to_string().contains("drivers before 550"));
}

#[test]
fn the_active_thread_percentage_minimum_names_the_value_found_and_the_fix() {
    let host = fixture("v3-no-pinned-limit");
    let at = |text: &str| Request {
        min_active_thread_percentage: Percentage::parse_arg(text),
        ..request()
    };
    assert!(validate(&at("33"), &host).is_ok());
    let rejection = validate(&at("33.1"), &host).unwrap_err();
    assert_eq!(
        rejection.code(),
        Code::ActiveThreadPercentageBelowRequirement
    );
    let text = rejection.to_string();
    assert!(text.contains("is 33.0, below the required 33.1"), "{text}");
    assert!(
        text.contains("set_default_active_thread_percentage 33.1"),
        "{text}"
    );
}

#[test]
fn no_pinned_limit_is_null_and_meets_any_minimum() {
    let host = fixture("v3-no-pinned-limit");
    let evidence = validate(&request(), &host).unwrap();
    assert_eq!(evidence.default_pinned_mem_limit, None);
    let huge = Request {
        min_pinned_mem: MemSize::parse_arg("1000G"),
        ..request()
    };
    let evidence = validate(&huge, &host).unwrap();
    assert!(evidence.unverified.is_empty());
}

#[test]
fn a_pinned_limit_below_the_minimum_is_a_rejection() {
    let host = fixture("v3-pinned-limit-512m");
    let at = |text: &str| Request {
        min_pinned_mem: MemSize::parse_arg(text),
        ..request()
    };
    let evidence = validate(&at("512M"), &host).unwrap();
    assert_eq!(evidence.default_pinned_mem_limit.as_deref(), Some("512M"));
    let rejection = validate(&at("1G"), &host).unwrap_err();
    assert_eq!(rejection.code(), Code::PinnedMemBelowRequirement);
    let text = rejection.to_string();
    assert!(text.contains("is 512M, below the required 1G"), "{text}");
}

#[test]
fn an_unreadable_limit_is_unverified_only_when_a_minimum_is_stated() {
    // A v2 snapshot never asked: nothing to compare against.
    let mut v2 = fixture("v3-pinned-limit-512m");
    v2.settings_query = None;
    sharing_policy::SCHEMA_V2.clone_into(&mut v2.schema);
    assert!(validate(&request(), &v2).unwrap().unverified.is_empty());
    let wanting = Request {
        min_pinned_mem: MemSize::parse_arg("1G"),
        ..request()
    };
    let evidence = validate(&wanting, &v2).unwrap();
    assert_eq!(evidence.unverified, [Code::PinnedMemLimitUnverified]);
    // A v2 snapshot that holds the v3 field is refused.
    let mut mixed = fixture("v3-pinned-limit-512m");
    sharing_policy::SCHEMA_V2.clone_into(&mut mixed.schema);
    assert_eq!(
        validate(&request(), &mixed).unwrap_err().code(),
        Code::InconsistentSnapshot
    );
}

#[test]
fn a_settings_answer_cut_short_is_never_read_as_no_limit() {
    let mut host = fixture("v3-pinned-limit-512m");
    let record = host.settings_query.as_mut().unwrap();
    if let sharing_policy::QueryOutcome::Exited { stdout, .. } = &mut record.outcome {
        // The front-end exits 0 on a reset connection with what it printed so far.
        let cut = stdout.text.len() - "512M\n100.0\n".len();
        stdout.text.truncate(cut);
    }
    let wanting = Request {
        min_pinned_mem: MemSize::parse_arg("1G"),
        ..request()
    };
    let evidence = validate(&wanting, &host).unwrap();
    assert_eq!(evidence.unverified, [Code::PinnedMemLimitUnverified]);
    assert_eq!(evidence.default_pinned_mem_limit, None);
}
