//! Judging for another user (`Request::as_user`, the command line's `--as-user`): the owner
//! checks compare the servers' owners with that UID, and the evidence says whom it judged for;
//! and the class of each code, which the fleet's Prolog drains or refuses by.

use std::collections::BTreeSet;

use sharing_policy::{Code, CodeClass, validate};

use crate::hosts::served;
use crate::support::{ambient, code, message, mps};

/// The `served` host's probing process is uid 1000; its one server (PID 4428) runs as uid 1001.
const OTHER: u32 = 1001;

#[test]
fn a_server_of_the_judged_user_is_not_another_users() {
    let facts = served("100.0\n4428\n", OTHER, "Exclusive_Process");
    let plain = mps("cuda:0", Some("cuda:0"));
    assert_eq!(code(&plain, &facts), Some(Code::ServerOfAnotherUser));

    let request = sharing_policy::Request {
        as_user: Some(OTHER),
        ..plain
    };
    let evidence = validate(&request, &facts).expect("the server is the judged user's own");
    assert_eq!(evidence.caller_uid, Some(1000));
    assert_eq!(evidence.judged_for_uid, Some(OTHER));
    assert_eq!(evidence.server_uids, vec![OTHER]);
}

#[test]
fn the_probing_users_own_server_is_another_users_for_the_judged_user() {
    let facts = served("100.0\n4428\n", 1000, "Exclusive_Process");
    let request = sharing_policy::Request {
        as_user: Some(OTHER),
        ..mps("cuda:0", Some("cuda:0"))
    };
    assert_eq!(code(&request, &facts), Some(Code::ServerOfAnotherUser));
    let text = message(&request, &facts);
    assert!(
        text.contains("PID 4428 (uid 1000); the job is judged for uid 1001"),
        "{text}"
    );
}

#[test]
fn without_as_user_the_evidence_is_judged_for_the_caller() {
    let facts = served("100.0\n4428\n", 1000, "Exclusive_Process");
    let evidence = validate(&mps("cuda:0", Some("cuda:0")), &facts).expect("validated");
    assert_eq!(evidence.judged_for_uid, Some(1000));
    let null = validate(&ambient("cuda:0", Some("cuda:0")), &facts).expect("null");
    assert_eq!(null.judged_for_uid, Some(1000));
    let for_other = sharing_policy::Request {
        as_user: Some(7),
        ..ambient("cuda:0", Some("cuda:0"))
    };
    let null = validate(&for_other, &facts).expect("null");
    assert_eq!(
        (null.caller_uid, null.judged_for_uid),
        (Some(1000), Some(7))
    );
}

#[test]
fn the_judged_user_is_recorded_even_without_a_recorded_caller() {
    let mut facts = served("100.0\n4428\n", OTHER, "Exclusive_Process");
    facts.caller = None;
    let request = sharing_policy::Request {
        as_user: Some(OTHER),
        ..mps("cuda:0", Some("cuda:0"))
    };
    let evidence = validate(&request, &facts).expect("the owner is known and is the judged user");
    assert_eq!(
        (evidence.caller_uid, evidence.judged_for_uid),
        (None, Some(OTHER))
    );
    assert!(!evidence.unverified.contains(&Code::ServerOwnerUnverified));
}

/// The codes about the request's settings: what the Prolog refused on before the classes
/// existed (its own list), which must stay settings.
#[test]
fn the_setting_codes_are_the_requests() {
    let settings: BTreeSet<&str> = Code::ALL
        .into_iter()
        .filter(|code| code.class() == CodeClass::Setting)
        .map(Code::as_str)
        .collect();
    let expected = BTreeSet::from([
        "unsupported-mode",
        "unsupported-snapshot-schema",
        "unsupported-backend",
        "invalid-rank",
        "missing-collector",
        "not-cuda-device",
        "invalid-cuda-device",
        "non-utf8-pipe-directory",
        "control-path-too-long",
        // The job's own environment and container.
        "shm-not-shared",
        "device-max-connections-high",
        // The modes of the pipe directory's path, which the operator sets.
        "pipe-directory-unreachable",
    ]);
    assert_eq!(settings, expected);
}

#[test]
fn only_the_work_on_the_node_is_a_workload_conflict() {
    let workload: Vec<Code> = Code::ALL
        .into_iter()
        .filter(|code| code.class() == CodeClass::WorkloadConflict)
        .collect();
    assert_eq!(
        workload,
        [
            Code::ServerOfAnotherUser,
            Code::GpuHeldByComputeProcess,
            Code::ServerFault,
            Code::ServerClientLimitReached,
            Code::ServerClientLimitUnverified,
            Code::ServerHasClients,
            Code::ServerFatalErrorLogged,
            Code::DaemonLogPendingClient
        ]
    );
    for node in [
        Code::DaemonUnreachable,
        Code::ControlPipeMissing,
        Code::CudaUnavailable,
        Code::GpuOutsideDaemonScope,
        Code::DaemonScopeUnverified,
        Code::ComputeModeForbidsSharing,
        Code::ServerOwnerUnverified,
    ] {
        assert_eq!(node.class(), CodeClass::NodeFault, "{node}");
    }
}

#[test]
fn the_class_names_are_stable_kebab_case() {
    let names: Vec<&str> = CodeClass::ALL.into_iter().map(CodeClass::as_str).collect();
    assert_eq!(names, ["setting", "node-fault", "workload-conflict"]);
    for class in CodeClass::ALL {
        let json = serde_json::to_string(&class).expect("a unit variant serialises");
        assert_eq!(json, format!("\"{class}\""));
    }
}
