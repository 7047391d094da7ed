//! The fail-closed rule, as properties over snapshots built by mutating healthy fixtures.

use proptest::prelude::*;
use proptest::sample::select;
use sharing_policy::{
    Code, FileKind, HostFacts, OsText, QueryOutcome, Request, SCHEMA, SCHEMA_V1, explain,
    listed_server_pids, observes_host, validate,
};

use crate::hosts::{self};
use crate::props_breakers::breakers;
use crate::props_gen::{any_facts, any_request, arbitrary_request};
use crate::support::mps;

pub(crate) fn config() -> ProptestConfig {
    // Failing seeds are saved under tests/proptest-regressions/; commit them.
    ProptestConfig::with_cases(256)
}

/// The healthy fixtures an explicit cuda:0/cuda:0 request validates on.
pub(crate) fn healthy_bases() -> Vec<HostFacts> {
    let bases: Vec<HostFacts> = hosts::all()
        .into_iter()
        .map(|(_, facts)| match &facts.caller {
            // What a v4 probe adds for its caller: the pipe directory reached.
            Some(caller) if caller.euid != 0 => {
                let uid = caller.euid;
                let mut facts = facts;
                facts.pipe_access = Some(crate::props_reach::reachable(
                    &facts.env.effective_pipe_directory(),
                    uid,
                ));
                facts
            }
            _ => facts,
        })
        .filter(|facts| validate(&mps("cuda:0", Some("cuda:0")), facts).is_ok())
        .collect();
    assert!(
        bases.len() >= 6,
        "expected several healthy fixtures, got {}",
        bases.len()
    );
    bases
}

/// Rebuilds every record that depends on the pipe directory, so the snapshot stays consistent.
pub(crate) fn set_pipe_directory(facts: &mut HostFacts, directory: Option<OsText>) {
    facts.env.cuda_mps_pipe_directory = directory;
    let env = facts.env.clone();
    if let Some(pipe) = &mut facts.control_pipe {
        let path = env.control_pipe_path();
        pipe.directory = env.effective_pipe_directory();
        pipe.path_len = path.as_bytes().len();
        pipe.path = path;
    }
    if let Some(query) = &mut facts.daemon_query {
        query.env.insert(
            "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
            env.effective_pipe_directory(),
        );
    }
    if let Some(pid) = &mut facts.pid_file {
        pid.path = env.pid_file_path();
    }
    if let Some(access) = &mut facts.pipe_access {
        let uid = access.user.as_ref().map_or(1000, |user| user.uid);
        *access = crate::props_reach::reachable(&env.effective_pipe_directory(), uid);
    }
}

pub(crate) fn daemon_outcome(facts: &mut HostFacts, outcome: QueryOutcome) {
    facts.daemon_query.as_mut().unwrap().outcome = outcome;
}

/// The "served" invariants of validated evidence: nothing known forbids sharing, and
/// `unverified: []` means every new fact was proven from the raw facts.
fn assert_served(request: &Request, facts: &HostFacts, evidence: &sharing_policy::Evidence) {
    assert!(
        !matches!(
            evidence.compute_mode.as_deref(),
            Some("Prohibited" | "Exclusive_Thread")
        ),
        "{:?}",
        evidence.compute_mode
    );
    // Judged for `as_user` when given, else for the caller; a server of any other user passes
    // only a multi-user daemon.
    let judged = request
        .as_user
        .or_else(|| facts.caller.map(|caller| caller.euid));
    assert_eq!(evidence.judged_for_uid, judged);
    if evidence
        .server_uids
        .iter()
        .any(|uid| Some(*uid) != evidence.judged_for_uid)
    {
        assert_eq!(evidence.daemon_multiuser, Some(true));
    }
    if request.require_verified {
        assert!(evidence.unverified.is_empty(), "{:?}", evidence.unverified);
    }
    if !evidence.unverified.is_empty() {
        return;
    }
    assert_ne!(facts.schema, SCHEMA_V1);
    if evidence.server_pid.is_some() {
        // Nothing unverified with a listed server: its state was read (a v3+ settings session).
        assert!(facts.schema == SCHEMA || facts.schema == sharing_policy::SCHEMA_V3);
        assert!(matches!(
            evidence.server_status.as_deref(),
            Some("ACTIVE" | "INITIALIZING")
        ));
    }
    assert!(matches!(
        evidence.compute_mode.as_deref(),
        Some("Default" | "Exclusive_Process")
    ));
    let search = facts
        .daemon_process
        .as_ref()
        .expect("the daemon was looked for");
    let daemon = search
        .processes
        .iter()
        .find(|p| Some(p.pid) == evidence.daemon_pid)
        .expect("the daemon was identified");
    let environ = daemon.environ.as_ref().expect("its scope was read");
    assert_eq!(
        environ
            .get("CUDA_VISIBLE_DEVICES")
            .map(OsText::to_string_lossy),
        evidence.daemon_visible_devices
    );
    let caller = facts.caller.expect("the caller was recorded");
    assert_eq!(evidence.caller_uid, Some(caller.euid));
    let pipe = facts.env.effective_pipe_directory();
    let listed = listed_server_pids(facts.daemon_query.as_ref().unwrap(), &pipe);
    if evidence.daemon_multiuser != Some(true) {
        assert_eq!(evidence.server_uids.len(), listed.len());
        let judged = request.as_user.unwrap_or(caller.euid);
        assert!(evidence.server_uids.iter().all(|uid| *uid == judged));
    }
}

/// Every invariant a validated explicit request must satisfy, checked against the raw facts.
fn assert_invariants(request: &Request, facts: &HostFacts) {
    let Ok(evidence) = validate(request, facts) else {
        return;
    };
    if !evidence.validated {
        assert!(
            request.mode.is_none(),
            "only a null request yields unvalidated evidence"
        );
        assert_eq!(evidence.configured, None);
        return;
    }
    let mode = request.mode.as_deref().unwrap();
    assert!(
        mode.trim().eq_ignore_ascii_case("mps"),
        "explicit mode {mode:?}"
    );
    assert_eq!(evidence.configured.as_deref(), Some("mps"));
    assert_eq!(evidence.effective.as_deref(), Some("mps"));
    assert!(!evidence.ambient_server);
    assert!(sharing_policy::SCHEMAS_READ.contains(&facts.schema.as_str()));
    assert_ne!(
        evidence.server_status.as_deref(),
        Some("FAULT"),
        "a server in FAULT is never validated"
    );
    assert_served(request, facts, &evidence);
    let backend = request.backend.as_deref().map(|b| b.trim().to_lowercase());
    assert!(
        backend.as_ref().is_none_or(|backend| request
            .supported_backends
            .iter()
            .any(|b| b.trim().to_lowercase() == *backend)),
        "backend {backend:?}"
    );
    assert_eq!(facts.os, "linux");
    assert!(0 <= request.rank && request.rank < request.world_size);
    assert!(request.collector_device.is_some());
    let (learner, collector) = (
        evidence.learner_gpu_uuid.as_deref(),
        evidence.collector_gpu_uuid.as_deref(),
    );
    assert!(
        learner.is_some() && learner == collector,
        "{learner:?} vs {collector:?}"
    );
    let pipe = facts
        .control_pipe
        .as_ref()
        .expect("a validated host has an observed control pipe");
    assert!(
        matches!(pipe.stat.kind, FileKind::Socket | FileKind::Fifo),
        "{:?}",
        pipe.stat.kind
    );
    assert!(matches!(
        evidence.control_pipe_kind.as_deref(),
        Some("unix_socket" | "fifo")
    ));
    assert!(pipe.path.as_bytes().len() <= 107);
    assert_eq!(pipe.access.directory_traversable, Some(true));
    assert_eq!(pipe.access.read_write, Some(true));
    let daemon = facts
        .daemon_query
        .as_ref()
        .expect("a validated host has a daemon query");
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        stderr,
        ..
    } = &daemon.outcome
    else {
        panic!("validated without a daemon answer: {:?}", daemon.outcome);
    };
    assert!(
        stderr.text.is_empty()
            && !stdout.truncated
            && !stdout.non_utf8
            && stdout.text.ends_with('\n')
    );
    assert!(daemon.args.is_empty());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn validated_implies_every_invariant(request in any_request(), facts in any_facts()) {
        assert_invariants(&request, &facts);
    }

    #[test]
    fn deterministic_and_explain_agrees_with_validate(request in any_request(), facts in any_facts()) {
        let first = validate(&request, &facts);
        prop_assert_eq!(&first, &validate(&request, &facts));
        let findings = explain(&request, &facts);
        prop_assert_eq!(&findings, &explain(&request, &facts));
        prop_assert_eq!(findings.is_empty(), first.is_ok());
        if let Err(rejection) = &first {
            prop_assert_eq!(findings[0].code, rejection.code());
            prop_assert_eq!(&findings[0].message, rejection.message());
            prop_assert!(findings.iter().all(|f| !f.found.is_empty() && !f.fix.is_empty() && f.why == f.code.why()));
        }
    }

    /// "Decide once": the one-walk verdict every renderer prints is exactly what the
    /// separate calls return, so no rendering can disagree with the evidence.
    #[test]
    fn judge_agrees_with_validate_explain_and_warnings(request in any_request(), facts in any_facts()) {
        let verdict = sharing_policy::judge(&request, &facts);
        prop_assert_eq!(&verdict.result, &validate(&request, &facts));
        prop_assert_eq!(&verdict.findings, &explain(&request, &facts));
        prop_assert_eq!(&verdict.warnings, &sharing_policy::warnings(&request, &facts));
        let null = Request { mode: None, ..request.clone() };
        prop_assert_eq!(Ok(verdict.ambient.clone()), validate(&null, &facts));
        prop_assert_eq!(
            verdict.validated(),
            validate(&request, &facts).is_ok_and(|evidence| evidence.validated)
        );
    }

    #[test]
    fn a_null_request_never_rejects(request in any_request(), facts in any_facts()) {
        let request = Request { mode: None, ..request };
        let evidence = validate(&request, &facts).unwrap();
        prop_assert!(!evidence.validated);
        prop_assert!(explain(&request, &facts).is_empty());
        if evidence.ambient_server {
            let daemon = facts.daemon_query.as_ref().unwrap();
            let answered = matches!(&daemon.outcome, QueryOutcome::Exited { code: Some(0), stderr, .. } if stderr.text.is_empty());
            prop_assert!(answered, "ambient_server without an answer: {:?}", daemon.outcome);
        }
    }

    #[test]
    fn a_cpu_learner_without_collector_looks_at_nothing(facts in any_facts()) {
        let evidence = validate(&Request::new(None, "cpu", None, "mjwarp"), &facts).unwrap();
        prop_assert_eq!(evidence.pipe_directory, None);
        prop_assert_eq!(evidence.control_pipe, None);
        prop_assert_eq!(evidence.learner_gpu_uuid, None);
        prop_assert_eq!(evidence.server_pid, None);
        prop_assert_eq!(evidence.daemon_pid, None);
        prop_assert!(!evidence.ambient_server);
    }

    /// `observes_host` is the policy's own rule: when it is false, a snapshot that observed
    /// nothing but the environment (what `probe` captures then) gives the same answer.
    #[test]
    fn a_request_that_observes_nothing_depends_only_on_the_environment(
        request in arbitrary_request().prop_map(|request| Request { mode: None, ..request }),
        facts in any_facts(),
    ) {
        if !observes_host(&request) {
            let mut bare = HostFacts::unobserved(&facts.os, facts.env.clone());
            bare.schema.clone_from(&facts.schema);
            bare.learner_uuid.clone_from(&facts.learner_uuid);
            prop_assert_eq!(validate(&request, &facts), validate(&request, &bare));
            prop_assert_eq!(explain(&request, &facts), explain(&request, &bare));
        }
    }

    #[test]
    fn breaking_one_fact_yields_exactly_its_rejection(
        base in select(healthy_bases()),
        breaker in select(breakers()),
        salt in 0usize..1000,
    ) {
        let mut request = mps("cuda:0", Some("cuda:0"));
        let mut facts = base;
        (breaker.apply)(&mut request, &mut facts, salt);
        let got = validate(&request, &facts).err().map(|r| r.code());
        prop_assert_eq!(got, Some(breaker.code), "breaker {}", breaker.name);
    }
}

/// The other half of `observes_host`: every request it says looks at the host does, so `probe`
/// skipping observation for it would change the answer.
#[test]
fn a_request_that_observes_the_host_sees_more_than_the_environment() {
    let facts = healthy_bases().remove(0);
    let mut bare = HostFacts::unobserved(&facts.os, facts.env.clone());
    bare.learner_uuid.clone_from(&facts.learner_uuid);
    for request in [
        Request::new(None, "cuda:0", None, "mjwarp"),
        Request::new(None, "cpu", Some("cuda"), "mjwarp"),
        Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp"),
    ] {
        assert!(observes_host(&request), "{request:?}");
        assert_ne!(
            validate(&request, &facts),
            validate(&request, &bare),
            "{request:?}"
        );
    }
}

#[test]
fn every_code_has_a_breaker() {
    let covered: Vec<Code> = breakers().iter().map(|b| b.code).collect();
    // An advisory never rejects; `props_shm::advisories_are_warnings_never_rejections`
    // breaks one fact for each instead.
    for code in Code::ALL
        .into_iter()
        .filter(|c| !Code::ADVISORY.contains(c))
    {
        assert!(
            covered.contains(&code),
            "no single-fact breaker produces {code}"
        );
    }
}

#[test]
fn every_breaker_on_every_base_at_every_salt() {
    // The exhaustive version of `breaking_one_fact_yields_exactly_its_rejection` for small salts.
    for base in healthy_bases() {
        for breaker in breakers() {
            for salt in 0..8 {
                let mut request = mps("cuda:0", Some("cuda:0"));
                let mut facts = base.clone();
                (breaker.apply)(&mut request, &mut facts, salt);
                let got = validate(&request, &facts).err().map(|r| r.code());
                assert_eq!(
                    got,
                    Some(breaker.code),
                    "breaker {:?} salt {salt} on {:?}",
                    breaker,
                    base.env
                );
            }
        }
    }
}

#[test]
fn the_generators_reach_validated_hosts_often() {
    // The invariant property means something only if many generated cases validate.
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (any_request(), any_facts());
    let validated = (0..400)
        .filter(|_| {
            let (request, facts) = strategy.new_tree(&mut runner).unwrap().current();
            validate(&request, &facts).is_ok_and(|e| e.validated)
        })
        .count();
    assert!(
        validated >= 40,
        "only {validated} of 400 generated cases validate"
    );
}
