//! A hostile local user on a shared node can write a 0666 pid file and start processes whose
//! argv and environment read like the control daemon's. None of that is proof: whatever
//! look-alikes and pid-file contents a snapshot holds, the daemon facts judged are those of
//! the process holding the daemon's lock, or they are unverified.

use proptest::prelude::*;
use sharing_policy::{
    Code, DaemonSearch, DaemonSearchMethod, OsText, ProcessFacts, Request, validate,
};

use crate::hosts::{self, H100_A, H100_B};
use crate::locks;

/// The real daemon's PID in [`hosts::daemon_process`]: root's, scoped to `H100_A`, not
/// multi-user.
const REAL: i64 = 2718;

/// A look-alike: another user's process whose argv reads `nvidia-cuda-mps-control -d [-M]`,
/// naming this pipe directory, with its own GPU mask.
fn lookalike(pid: i64, uid: u32, multiuser: bool, pipe: &OsText) -> ProcessFacts {
    let args: &[&str] = if multiuser { &["-d", "-M"] } else { &["-d"] };
    let mut process = hosts::daemon_process(args, &[("CUDA_VISIBLE_DEVICES", H100_B)]);
    process.pid = pid;
    process.status_uid = Some(format!("{uid}\t{uid}\t{uid}\t{uid}"));
    process
        .environ
        .as_mut()
        .unwrap()
        .insert("CUDA_MPS_PIPE_DIRECTORY".to_owned(), pipe.clone());
    process
}

fn real_daemon() -> ProcessFacts {
    hosts::daemon_process(&["-d"], &[("CUDA_VISIBLE_DEVICES", H100_A)])
}

/// A host of `answer`, each listed server owned by uid 1001 (another user than the caller),
/// with `lookalikes` as the witnesses a pid file or scan found and the lock held by the real
/// daemon when `holder_visible`.
fn host(
    answer: &str,
    lookalikes: &[(i64, u32, bool)],
    pid_file_names: i64,
    holder_visible: bool,
    via_pid_file: bool,
) -> sharing_policy::HostFacts {
    let mut facts = hosts::served(answer, 1001, "Default");
    let pipe = facts.env.effective_pipe_directory();
    facts.pid_file = Some(hosts::pid_file(
        &facts.env,
        &pid_file_names.to_string(),
        true,
    ));
    let fakes: Vec<ProcessFacts> = lookalikes
        .iter()
        .map(|&(pid, uid, multiuser)| lookalike(pid, uid, multiuser, &pipe))
        .collect();
    let held: &[i64] = if holder_visible { &[REAL] } else { &[] };
    let lock = locks::lock_held_by(&pipe, held);
    facts.daemon_process = Some(if holder_visible {
        locks::by_lock(real_daemon(), lock)
    } else {
        DaemonSearch {
            proc_root: OsText::from("/proc"),
            method: if via_pid_file {
                DaemonSearchMethod::PidFile
            } else {
                DaemonSearchMethod::ProcScan
            },
            scanned: 10,
            limit: 65536,
            stopped: None,
            error: None,
            processes: fakes,
            lock: Some(lock),
        }
    });
    crate::props_reach::with_reach(facts)
}

fn lookalikes() -> impl Strategy<Value = Vec<(i64, u32, bool)>> {
    proptest::collection::vec(
        (
            3000_i64..3004,
            proptest::sample::select(vec![0_u32, 1001, 54321, 65534]),
            any::<bool>(),
        ),
        0..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Beside another user's server, only a proven multi-user root daemon lets a request pass:
    /// a look-alike `-M` never does, whatever the pid file says.
    #[test]
    fn a_lookalike_never_lifts_the_other_user_check(
        fakes in lookalikes(),
        named in 2716_i64..3004,
        holder_visible in any::<bool>(),
        via_pid_file in any::<bool>(),
    ) {
        let facts = host("100.0\n4428\n", &fakes, named, holder_visible, via_pid_file);
        let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        let rejection = validate(&request, &facts).unwrap_err();
        prop_assert_eq!(rejection.code(), Code::ServerOfAnotherUser);
    }

    /// On an idle daemon, the evidence's daemon facts are the lock holder's or absent, and an
    /// unproven identity is listed as unverified (a rejection when verification is required).
    #[test]
    fn the_judged_daemon_facts_are_the_lock_holders_or_unverified(
        fakes in lookalikes(),
        named in 2716_i64..3004,
        holder_visible in any::<bool>(),
        via_pid_file in any::<bool>(),
    ) {
        let facts = host("100.0\n", &fakes, named, holder_visible, via_pid_file);
        let mut request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        let evidence = validate(&request, &facts).unwrap();
        if holder_visible {
            prop_assert_eq!(evidence.daemon_pid, Some(REAL));
            prop_assert_eq!(evidence.daemon_multiuser, Some(false));
            prop_assert_eq!(evidence.daemon_visible_devices.as_deref(), Some(H100_A));
            prop_assert!(!evidence.unverified.contains(&Code::DaemonIdentityUnverified));
            prop_assert_eq!(
                evidence.unverified.contains(&Code::DaemonPidFileDisagrees),
                named != REAL
            );
        } else {
            prop_assert_eq!(evidence.daemon_pid, None);
            prop_assert_eq!(evidence.daemon_multiuser, None);
            prop_assert_eq!(evidence.daemon_visible_devices, None);
            prop_assert!(evidence.unverified.contains(&Code::DaemonIdentityUnverified));
        }
        request.require_verified = true;
        let strict = validate(&request, &facts);
        prop_assert_eq!(strict.is_ok(), holder_visible && named == REAL);
    }
}

/// A pid file naming an MPS server (same `comm` as the control daemon) is not the daemon.
#[test]
fn a_pid_file_naming_a_server_is_not_the_daemon() {
    let mut facts = host("100.0\n4428\n", &[], 4428, false, true);
    let search = facts.daemon_process.as_mut().unwrap();
    let mut server = hosts::process(4428, 1000, "nvidia-cuda-mps");
    server.cmdline = Some(vec![OsText::from("nvidia-cuda-mps-server")]);
    search.processes = vec![server];
    let mut request = Request::new(None, "cuda:0", Some("cuda:0"), "mjwarp");
    assert_eq!(validate(&request, &facts).unwrap().daemon_pid, None);
    request.mode = Some("mps".to_owned());
    request.require_verified = true;
    let rejection = validate(&request, &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::DaemonIdentityUnverified);
}

/// An idle host whose proven daemon runs as `daemon_uid` and owns its pipe directory (a
/// daemon an ordinary user started in the default `/tmp/nvidia-mps`), probed by uid 1000.
fn user_daemon_host(daemon_uid: u32) -> sharing_policy::HostFacts {
    let mut facts = host("100.0\n", &[], REAL, true, false);
    let search = facts.daemon_process.as_mut().unwrap();
    search.processes[0].status_uid = Some(format!(
        "{daemon_uid}\t{daemon_uid}\t{daemon_uid}\t{daemon_uid}"
    ));
    search.lock.as_mut().unwrap().directory_uid = Some(daemon_uid);
    facts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A daemon not run by root serves only its own user: whoever owns the pipe directory, the
    /// request passes only when the daemon is root's or the judged user's.
    #[test]
    fn a_daemon_of_an_ordinary_user_serves_only_that_user(
        daemon_uid in proptest::sample::select(vec![0_u32, 1000, 1001, 65534]),
        as_user in proptest::option::of(proptest::sample::select(vec![0_u32, 1000, 1001, 65534])),
    ) {
        let facts = user_daemon_host(daemon_uid);
        let mut request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        request.as_user = as_user;
        let judged = as_user.unwrap_or(1000);
        let verdict = validate(&request, &facts);
        if daemon_uid == 0 || daemon_uid == judged {
            prop_assert!(verdict.is_ok(), "{verdict:?}");
        } else {
            let rejection = verdict.unwrap_err();
            prop_assert_eq!(rejection.code(), Code::DaemonOfAnotherUser);
            let message = rejection.to_string();
            prop_assert!(message.contains(&format!("runs as uid {daemon_uid}, not root")), "{message}");
        }
    }
}
