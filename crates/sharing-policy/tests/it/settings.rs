//! Schema v3's settings session: the state of the server the clients would
//! join, and the daemon's defaults against the request's stated minimums.

use sharing_policy::{
    Code, HostFacts, MemSize, Percentage, ReadOnlyCommand, Request, SCHEMA_V3, validate,
};

use crate::hosts::{self, served};
use crate::support::mps;

/// A v3 host (two H100s, the daemon pinned to the first, so its ordinal 0): the daemon answers
/// `answer`, its server (if any) is in `state`, and the default pinned-memory limit of every
/// ordinal is `limit` (`""`: none set).
fn v3(answer: &str, state: &str, limit: &str) -> HostFacts {
    let mut facts = served(answer, 1000, "Exclusive_Process");
    SCHEMA_V3.clone_into(&mut facts.schema);
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
        .map(|(_, facts)| crate::props_reach::with_reach(facts))
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

/// A real daemon's recorded answer to every settings command (no GPU, so no server):
/// `fixtures/daemon-answers/`, recorded by mps-host's `real_daemon_settings` test.
fn recorded(version: &str) -> sharing_policy::QueryRecord {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/daemon-answers")
        .join(format!("real-daemon-{version}-settings.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_real_daemons_settings_answers_are_read_as_recorded() {
    for (version, status, why) in [
        (
            "535.261.03",
            "Unknown command \"get_server_status\"",
            "drivers before 550",
        ),
        (
            "550.163.01",
            "Server 12345 not found",
            "server 12345 was gone",
        ),
    ] {
        let record = recorded(version);
        let pipe = sharing_policy::OsText::from(sharing_policy::DEFAULT_PIPE_DIRECTORY);
        let answers = sharing_policy::settings_answers(&record, &pipe).unwrap();
        let lines: Vec<&[String]> = answers.iter().map(|(_, l)| l.as_slice()).collect();
        let not_found = vec!["Server 12345 not found".to_owned()];
        assert_eq!(lines[0], [status.to_owned()], "{version}");
        assert_eq!(lines[1], not_found.as_slice(), "{version}: get_client_list");
        assert_eq!(lines[2], not_found.as_slice(), "{version}");
        assert!(lines[3].is_empty(), "{version}: no default limit set");
        assert_eq!(lines[4], not_found.as_slice(), "{version}");

        // As the validator reads them, for a host whose daemon listed server 12345.
        let mut host = served("100.0\n12345\n", 1000, "Exclusive_Process");
        // v3: what v4 adds besides (the log, /dev/shm, the health columns) is not at issue.
        SCHEMA_V3.clone_into(&mut host.schema);
        host.settings_query = Some(record);
        let wanting = Request {
            min_pinned_mem: MemSize::parse_arg("80G"),
            ..request()
        };
        let evidence = validate(&wanting, &host).unwrap();
        assert_eq!(evidence.server_status, None, "{version}");
        assert_eq!(evidence.default_pinned_mem_limit, None, "{version}");
        // The server was gone when it was asked: its state, clients and own limit are
        // unverified, never a pass.
        assert_eq!(
            evidence.unverified,
            [
                Code::ServerStatusUnverified,
                Code::ServerClientsUnverified,
                Code::ServerLimitsUnverified
            ],
            "{version}"
        );
        assert_eq!(evidence.server_clients, None, "{version}");
        assert_eq!(evidence.server_pinned_mem_limit, None, "{version}");
        let strict = Request {
            require_verified: true,
            ..wanting
        };
        let text = validate(&strict, &host).unwrap_err().to_string();
        assert!(text.contains(why), "{version}: {text}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    /// A settings answer cut anywhere (the front-end exits 0 on a reset connection with what
    /// it printed so far) is never a readable session: an empty answer (no limit) cannot be
    /// produced by losing the lines after it.
    #[test]
    fn a_settings_answer_cut_anywhere_is_refused(
        answers in proptest::collection::vec(
            proptest::sample::select(vec!["", "ACTIVE\n", "FAULT\n", "10G\n", "512M\n", "Server 7 not found\n"]),
            1..5,
        ),
        cut in 0usize..200,
    ) {
        let asked: Vec<ReadOnlyCommand> = (0..answers.len())
            .map(|i| ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(u32::try_from(i).unwrap()))
            .collect();
        let mut stdout = String::from("100.0\n");
        for answer in &answers {
            stdout.push_str(answer);
            stdout.push_str("100.0\n");
        }
        let cut = cut % stdout.len();
        let facts = served("100.0\n", 1000, "Default");
        let mut record = facts.daemon_query.clone().unwrap();
        record.stdin = sharing_policy::probe_stdin(&sharing_policy::separated(&asked));
        let pipe = facts.env.effective_pipe_directory();
        let whole = |text: &str| sharing_policy::QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: sharing_policy::CapturedText::from_bytes(text.as_bytes(), false),
            stderr: sharing_policy::CapturedText::default(),
        };
        record.outcome = whole(&stdout);
        let read = sharing_policy::settings_answers(&record, &pipe).unwrap();
        proptest::prop_assert_eq!(read.len(), answers.len());
        record.outcome = whole(&stdout[..cut]);
        proptest::prop_assert!(sharing_policy::settings_answers(&record, &pipe).is_err());
    }
}
