//! `attest` on real deployments: a root multi-user server serves clients of every
//! UID when the daemon's command line proves multi-user mode, and only then.

use sharing_policy::{
    AttestCode, DaemonSearch, DaemonSearchMethod, OsText, PidFileFacts, ProcessFacts, attest,
};

use crate::attest::{COLLECTOR, DIR, LEARNER, healthy, server, with_servers};

/// The daemon (PID 2718, root) started with `args`, named by the pipe directory's pid file.
pub(crate) fn daemon(args: &[&str]) -> (PidFileFacts, DaemonSearch) {
    let pid_file = PidFileFacts {
        path: OsText::from(format!("{DIR}/nvidia-cuda-mps-control.pid").as_str()),
        contents: Some(sharing_policy::CapturedText::from_bytes(b"2718", false)),
        error: None,
        pid_alive: Some(true),
        process_name: Some("nvidia-cuda-mps".to_owned()),
    };
    let mut process = ProcessFacts::new(2718);
    process.status_uid = Some("0\t0\t0\t0".to_owned());
    process.comm = Some("nvidia-cuda-mps".to_owned());
    process.cmdline = Some(
        std::iter::once("nvidia-cuda-mps-control")
            .chain(args.iter().copied())
            .map(OsText::from)
            .collect(),
    );
    let search = DaemonSearch {
        proc_root: OsText::from("/proc"),
        method: DaemonSearchMethod::PidFile,
        scanned: 0,
        limit: 0,
        stopped: None,
        error: None,
        processes: vec![process],
        lock: None,
    };
    (pid_file, search)
}

#[test]
fn a_root_server_serves_every_user_only_in_proven_multi_user_mode() {
    let root_server = || with_servers(vec![server(4428, 0, "4267\n4281\n")]);
    for args in [&["-d", "-M"][..], &["-dM"], &["-d", "-multiuser-server"]] {
        let mut facts = root_server();
        let (pid_file, search) = daemon(args);
        facts.pid_file = Some(pid_file);
        facts.daemon_process = Some(search);
        let attestation = attest(&facts);
        assert!(
            attestation.attested,
            "{args:?}: {:?}",
            attestation.error_lines()
        );
        assert_eq!(attestation.server_uid, Some(0));
        assert_eq!(attestation.daemon_multiuser, Some(true));
    }
    for (args, multiuser) in [
        (Some(&["-d"][..]), Some(false)),
        (Some(&["-d", "-x"]), None),
        (None, None),
    ] {
        let mut facts = root_server();
        if let Some(args) = args {
            let (pid_file, search) = daemon(args);
            facts.pid_file = Some(pid_file);
            facts.daemon_process = Some(search);
        }
        let attestation = attest(&facts);
        assert!(!attestation.attested, "{args:?}");
        assert_eq!(attestation.learner.code, AttestCode::ServerOfAnotherUser);
        assert_eq!(attestation.daemon_multiuser, multiuser);
    }
    // Multi-user mode never makes a non-root server serve another user.
    let mut facts = with_servers(vec![server(4428, 1001, "4267\n4281\n")]);
    let (pid_file, search) = daemon(&["-d", "-M"]);
    facts.pid_file = Some(pid_file);
    facts.daemon_process = Some(search);
    assert_eq!(attest(&facts).learner.code, AttestCode::ServerOfAnotherUser);
    // Nor does it change a healthy same-user attestation.
    let mut facts = healthy();
    let (pid_file, search) = daemon(&["-d", "-M"]);
    facts.pid_file = Some(pid_file);
    facts.daemon_process = Some(search);
    assert!(attest(&facts).attested);
    let _ = (LEARNER, COLLECTOR);
}

/// A PID whose start time changed since the first round names another
/// process (the learner exited, an unrelated client got its number): never attested.
#[test]
fn a_reused_pid_is_not_running() {
    let mut facts = healthy();
    facts.learner.first_start_time = Some(1000);
    facts.learner.start_time = Some(1000);
    facts.collector.start_time = Some(1200);
    let attestation = attest(&facts);
    assert!(attestation.attested);
    assert_eq!(attestation.learner.start_time, Some(1000));
    assert_eq!(attestation.collector.start_time, Some(1200));

    facts.learner.start_time = Some(1450);
    let attestation = attest(&facts);
    assert!(!attestation.attested);
    assert_eq!(attestation.learner.code, AttestCode::NotRunning);
    assert_eq!(attestation.learner.start_time, Some(1000), "the pinned one");
    let message = attestation.learner.message.unwrap();
    assert!(
        message.contains("now names another process: start time 1450, not the 1000"),
        "{message}"
    );
    assert!(
        !attest(&facts).worth_waiting(),
        "a reused PID ends the wait"
    );

    // Pinned, then unreadable: the identity is unproven.
    facts.learner.start_time = None;
    assert_eq!(attest(&facts).learner.code, AttestCode::ProcessUnobservable);
    // Gone: not running, whatever was pinned.
    facts.learner.exists = Some(false);
    assert_eq!(attest(&facts).learner.code, AttestCode::NotRunning);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Attested implies each process's start time is the one pinned at the first round.
    #[test]
    fn attested_implies_the_pinned_identity(
        first in proptest::option::of(0_u64..3),
        now in proptest::option::of(0_u64..3),
        exists in proptest::option::of(proptest::bool::ANY),
    ) {
        let mut facts = healthy();
        facts.collector.first_start_time = first;
        facts.collector.start_time = now;
        if let Some(exists) = exists {
            facts.collector.exists = Some(exists);
        }
        let attestation = attest(&facts);
        if attestation.attested {
            proptest::prop_assert!(first.is_none() || first == now);
            proptest::prop_assert_ne!(facts.collector.exists, Some(false));
        }
    }
}
