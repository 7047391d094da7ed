//! Details beyond pass/fail: the GPU a suggested start command is pinned to, the
//! control-pipe kind and daemon PID the evidence records, which access failed, what a failed
//! daemon query printed, and why each code matters.

use std::collections::BTreeSet;

use sharing_policy::{
    CapturedText, Code, HostFacts, OsText, PidFileFacts, QueryOutcome, explain, validate,
};

use crate::hosts::{self, H100_A};
use crate::support::{ambient, code, message, mps};

fn fixture(name: &str) -> HostFacts {
    hosts::all()
        .into_iter()
        .find(|(fixture, _)| *fixture == name)
        .map(|(_, facts)| facts)
        .unwrap()
}

#[test]
fn a_start_command_is_pinned_only_to_a_gpu_both_sides_agree_on() {
    // No control pipe, on the two-H100 host of the healthy fixture.
    let mut facts = fixture("no-control-pipe");
    facts.gpu_query = fixture("healthy-socket-with-server").gpu_query;
    let starts = |learner: &str, collector: &str| -> Vec<String> {
        explain(&mps(learner, Some(collector)), &facts)
            .into_iter()
            .map(|finding| finding.fix)
            .filter(|fix| fix.contains("nvidia-cuda-mps-control -d"))
            .collect()
    };
    let same = starts("cuda:0", "cuda:0");
    assert!(!same.is_empty());
    for fix in &same {
        assert!(
            fix.contains(&format!("CUDA_VISIBLE_DEVICES={H100_A} ")),
            "{fix}"
        );
    }
    // Learner and collector on different GPUs: no GPU to pin the daemon to.
    let split = starts("cuda:0", "cuda:1");
    assert!(!split.is_empty());
    for fix in &split {
        assert!(!fix.contains("CUDA_VISIBLE_DEVICES"), "{fix}");
    }
}

#[test]
fn the_ambient_evidence_names_the_pipe_kind_only_for_the_pipe_it_looked_at() {
    let facts = fixture("healthy-socket-with-server");
    let kind = |facts: &HostFacts| {
        validate(&ambient("cuda:0", Some("cuda:0")), facts)
            .unwrap()
            .control_pipe_kind
    };
    assert_eq!(kind(&facts).as_deref(), Some("unix_socket"));
    // A snapshot whose pipe record is for another path, or another directory, than the
    // environment names says nothing about the pipe CUDA clients will use.
    let mut other_path = facts.clone();
    other_path.control_pipe.as_mut().unwrap().path = OsText::from("/tmp/nvidia-mps/other");
    assert_eq!(kind(&other_path), None);
    let mut other_directory = facts.clone();
    other_directory.control_pipe.as_mut().unwrap().directory = OsText::from("/elsewhere");
    assert_eq!(kind(&other_directory), None);
}

fn healthy() -> HostFacts {
    fixture("healthy-socket-with-server")
}

fn text(text: &str) -> CapturedText {
    CapturedText::from_bytes(text.as_bytes(), false)
}

#[test]
fn only_the_control_front_end_can_prove_a_daemon() {
    let request = mps("cuda:0", Some("cuda:0"));
    let mut facts = healthy();
    facts.daemon_query.as_mut().unwrap().program = "/usr/bin/nvidia-cuda-mps-control".to_owned();
    assert!(validate(&request, &facts).is_ok());
    facts.daemon_query.as_mut().unwrap().program = "/usr/bin/true".to_owned();
    let text = message(&request, &facts);
    assert!(
        text.contains("instead of nvidia-cuda-mps-control"),
        "{text}"
    );
}

#[test]
fn a_failed_daemon_query_reports_what_it_printed() {
    let request = mps("cuda:0", Some("cuda:0"));
    for (stdout, stderr, shown) in [
        ("printed-on-stdout\n", "", "printed-on-stdout"),
        ("", "printed-on-stderr\n", "printed-on-stderr"),
    ] {
        let mut facts = healthy();
        facts.daemon_query.as_mut().unwrap().outcome = QueryOutcome::Exited {
            code: Some(1),
            signal: None,
            stdout: text(stdout),
            stderr: text(stderr),
        };
        let text = message(&request, &facts);
        assert!(text.contains(shown), "{text}");
    }
}

#[test]
fn an_unrecognised_daemon_answer_quotes_what_it_printed() {
    let request = mps("cuda:0", Some("cuda:0"));
    let cut_short = CapturedText {
        text: "100.0\n44".to_owned(),
        truncated: true,
        non_utf8: false,
    };
    for (stdout, stderr, shown) in [
        (
            text("printed-on-stdout\n"),
            text(""),
            r"stdout 'printed-on-stdout\n', stderr ''",
        ),
        (
            text("100.0\n"),
            text("printed-on-stderr"),
            r"stdout '100.0\n', stderr 'printed-on-stderr'",
        ),
        (
            cut_short,
            text(""),
            r"stdout '100.0\n44' (cut short), stderr ''",
        ),
    ] {
        let mut facts = healthy();
        facts.daemon_query.as_mut().unwrap().outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout,
            stderr,
        };
        assert_eq!(code(&request, &facts), Some(Code::DaemonAnswerUnrecognized));
        let text = message(&request, &facts);
        assert!(text.contains(shown), "{text}");
    }
}

#[test]
fn a_daemon_answer_with_bytes_that_are_not_utf8_proves_nothing() {
    let request = mps("cuda:0", Some("cuda:0"));
    let not_utf8 = |text: &str| CapturedText {
        text: text.to_owned(),
        truncated: false,
        non_utf8: true,
    };
    for (stdout, stderr) in [
        (not_utf8("100.0\n4428\n"), text("")),
        (text("100.0\n4428\n"), not_utf8("")),
    ] {
        let mut facts = healthy();
        facts.daemon_query.as_mut().unwrap().outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout,
            stderr,
        };
        let text = message(&request, &facts);
        assert!(text.contains("not UTF-8"), "{text}");
    }
}

#[test]
fn the_daemon_pid_needs_a_whole_pid_file_naming_the_live_control_daemon() {
    let request = mps("cuda:0", Some("cuda:0"));
    let pid = |edit: fn(&mut PidFileFacts)| {
        let mut facts = healthy();
        edit(facts.pid_file.as_mut().unwrap());
        validate(&request, &facts).unwrap().daemon_pid
    };
    assert_eq!(pid(|_| {}), Some(2718));
    assert_eq!(pid(|file| file.process_name = None), Some(2718));
    // `/proc/<pid>/comm` keeps 15 bytes: `nvidia-cuda-mps`, with its newline.
    let comm = |file: &mut PidFileFacts| file.process_name = Some("nvidia-cuda-mps\n".to_owned());
    assert_eq!(pid(comm), Some(2718));
    let short = |file: &mut PidFileFacts| file.process_name = Some("nvidia".to_owned());
    assert_eq!(pid(short), None);
    let other = |file: &mut PidFileFacts| file.process_name = Some("nvidia-cuda-mpX".to_owned());
    assert_eq!(pid(other), None);
    assert_eq!(pid(|file| file.pid_alive = Some(false)), None);
    assert_eq!(
        pid(|file| file.contents.as_mut().unwrap().truncated = true),
        None
    );
    assert_eq!(
        pid(|file| file.contents.as_mut().unwrap().non_utf8 = true),
        None
    );
}

#[test]
fn an_inaccessible_pipe_says_which_access_failed() {
    let request = mps("cuda:0", Some("cuda:0"));
    let reason = |traversable: Option<bool>, read_write: Option<bool>| {
        let mut facts = healthy();
        let access = &mut facts.control_pipe.as_mut().unwrap().access;
        access.directory_traversable = traversable;
        access.read_write = read_write;
        access.error = None;
        message(&request, &facts)
    };
    let searched = "its directory cannot be searched by the launching user";
    let read_write = "the launching user cannot read and write it";
    let unknown = "access was not established";
    for (traversable, rw, want) in [
        (Some(false), None, searched),
        (Some(false), Some(false), searched),
        (None, Some(false), read_write),
        (Some(true), Some(false), read_write),
        (None, None, unknown),
        (Some(true), None, unknown),
    ] {
        let text = reason(traversable, rw);
        assert!(text.contains(want), "{traversable:?} {rw:?}: {text}");
    }
}

#[test]
fn each_code_says_why_in_a_sentence_of_its_own() {
    let whys: BTreeSet<&str> = Code::ALL.iter().map(|code| code.why()).collect();
    assert_eq!(whys.len(), Code::ALL.len());
    for code in Code::ALL {
        assert!(code.why().ends_with('.'), "{code:?}: {}", code.why());
    }
}

#[test]
fn an_empty_pipe_directory_variable_means_the_default_directory() {
    let env = |pipe: Option<&str>| sharing_policy::EnvFacts {
        cuda_visible_devices: None,
        cuda_device_order: None,
        cuda_mps_pipe_directory: pipe.map(OsText::from),
        cuda_mps_log_directory: None,
    };
    for unset_or_empty in [None, Some("")] {
        let env = env(unset_or_empty);
        assert_eq!(
            env.effective_pipe_directory(),
            OsText::from(sharing_policy::DEFAULT_PIPE_DIRECTORY)
        );
        assert_eq!(
            env.control_pipe_path(),
            OsText::from("/tmp/nvidia-mps/control")
        );
    }
    assert_eq!(
        env(Some("/run/mps")).control_pipe_path(),
        OsText::from("/run/mps/control")
    );
}

#[test]
fn an_index_out_of_range_says_why_the_list_is_short() {
    let mut facts = healthy();
    facts.env.cuda_visible_devices = Some(OsText::from("0,5,1"));
    let text = message(&mps("cuda:1", Some("cuda:0")), &facts);
    assert!(
        text.contains("1 GPU is visible with CUDA_VISIBLE_DEVICES='0,5,1': CUDA_VISIBLE_DEVICES entry 2 (\"5\")"),
        "{text}"
    );
}

#[test]
fn backend_names_compare_as_the_seed_lowercases_them() {
    let facts = healthy();
    let backend = |name: &str, supported: &str| {
        let mut request = mps("cuda:0", Some("cuda:0"));
        request.backend = Some(name.to_owned());
        request.supported_backends = vec![supported.to_owned()];
        validate(&request, &facts)
            .err()
            .map(|rejection| rejection.code())
    };
    assert_eq!(backend(" MJWarp ", "mjwarp"), None);
    // Python's `str.lower()` maps KELVIN SIGN (U+212A) to `k`; ASCII-only folding does not.
    assert_eq!(backend("\u{212A}elvin", "kelvin"), None);
    assert_eq!(backend("Kelvin", "\u{212A}ELVIN"), None);
    // A non-ASCII name that lowercases to something else is not supported.
    assert_eq!(
        backend("mjw\u{e4}rp", "mjwarp"),
        Some(Code::UnsupportedBackend)
    );
}

#[test]
fn the_host_name_is_carried_into_the_evidence_as_recorded() {
    let mut facts = healthy();
    assert_eq!(facts.host_name, None, "the fixture predates host_name");
    // host_name is a v2 field: a v1 snapshot holding it is refused.
    facts.schema = sharing_policy::SCHEMA.to_owned();
    let explicit = mps("cuda:0", Some("cuda:0"));
    let null = ambient("cuda:0", Some("cuda:0"));
    let cpu = ambient("cpu", None);
    for request in [&explicit, &null, &cpu] {
        assert_eq!(validate(request, &facts).unwrap().host_name, None);
    }
    facts.host_name = Some(OsText::from("gpu-node-07"));
    for request in [&explicit, &null, &cpu] {
        let evidence = validate(request, &facts).unwrap();
        assert_eq!(evidence.host_name.as_deref(), Some("gpu-node-07"));
    }
    facts.host_name = Some(OsText::from_bytes(b"node\xff".to_vec()));
    let evidence = validate(&explicit, &facts).unwrap();
    assert_eq!(evidence.host_name.as_deref(), Some("node\u{fffd}"));
    // A snapshot of another schema is not interpreted at all, host name included.
    facts.schema = "mps-preflight/host-facts/v0".to_owned();
    assert_eq!(validate(&null, &facts).unwrap().host_name, None);
}

/// Daemon-scope-unverified's fix follows the facts, one snapshot per case: a
/// caller that is not root may be told to run as root; a root caller never is; a daemon that
/// vanished while it was read, and a snapshot that never observed the daemon, each get their
/// own fix.
#[test]
fn daemon_scope_unverified_advice_fits_the_facts() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/hosts/v2-served-validated.json"
    );
    let base: sharing_policy::HostFacts =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let request = crate::support::mps("cuda:0", Some("cuda:0"));
    let scope_fix = |facts: &sharing_policy::HostFacts| -> String {
        sharing_policy::warnings(&request, facts)
            .into_iter()
            .find(|finding| finding.code == sharing_policy::Code::DaemonScopeUnverified)
            .map(|finding| finding.fix)
            .expect("daemon-scope-unverified")
    };
    // The caller and the listed server as one user (a root caller with a server of UID 1000
    // would be server-of-another-user, a rejection).
    let as_user = |facts: &mut sharing_policy::HostFacts, euid: u32| {
        facts.caller = Some(sharing_policy::CallerFacts {
            uid: euid,
            euid,
            cap_eff: None,
        });
        for server in facts.server_processes.iter_mut().flatten() {
            server.status_uid = Some(format!("{euid}\t{euid}\t{euid}\t{euid}"));
        }
    };
    let unreadable = |error: &str, euid: u32| {
        let mut facts = base.clone();
        let search = facts.daemon_process.as_mut().unwrap();
        search.processes[0].environ = None;
        search.processes[0]
            .errors
            .insert("environ".to_owned(), error.to_owned());
        as_user(&mut facts, euid);
        facts
    };
    let denied = "Permission denied (os error 13)";
    insta::assert_snapshot!(
        "scope fix: denied, not root",
        scope_fix(&unreadable(denied, 1000))
    );
    insta::assert_snapshot!("scope fix: denied, root", scope_fix(&unreadable(denied, 0)));
    let gone = "No such file or directory (os error 2)";
    insta::assert_snapshot!("scope fix: daemon gone", scope_fix(&unreadable(gone, 0)));
    let mut not_found = base.clone();
    let search = not_found.daemon_process.as_mut().unwrap();
    search.processes.clear();
    as_user(&mut not_found, 0);
    insta::assert_snapshot!("scope fix: not found, root", scope_fix(&not_found));
    let mut v1 = base.clone();
    v1.daemon_process = None;
    insta::assert_snapshot!("scope fix: never observed", scope_fix(&v1));
    // A root caller that /proc refuses most likely lacks CAP_SYS_PTRACE (a container's default
    // set): the fix names it, and never claims that /proc hides nothing from root.
    for facts in [&unreadable(denied, 0), &not_found] {
        let fix = scope_fix(facts);
        assert!(
            fix.contains("CAP_SYS_PTRACE") && fix.contains("SYS_PTRACE\"]"),
            "{fix}"
        );
        assert!(!fix.contains("hides nothing"), "{fix}");
    }
    assert!(!scope_fix(&unreadable(denied, 1000)).contains("CAP_SYS_PTRACE"));
    for facts in [unreadable(denied, 0), unreadable(gone, 0), not_found] {
        assert!(
            !scope_fix(&facts).contains("as root or"),
            "a root caller is told to run as root"
        );
    }
}

/// The observer's own tools that could not be started are named, in query order, with the OS
/// error; a tool that started and failed (a driver error) or timed out is not one of them.
#[test]
fn the_tools_the_observer_could_not_start_are_named() {
    let named = |name: &str| -> Vec<(&'static str, String)> {
        sharing_policy::tools_not_started(&fixture(name))
            .into_iter()
            .map(|tool| (tool.program, tool.error))
            .collect()
    };
    let control = named("mps-control-not-installed");
    assert_eq!(control.len(), 1, "{control:?}");
    assert_eq!(control[0].0, "nvidia-cuda-mps-control");
    assert!(!control[0].1.is_empty());
    let smi = named("learner-uuid-supplied-nvidia-smi-missing");
    assert_eq!(
        smi.iter().map(|(program, _)| *program).collect::<Vec<_>>(),
        ["nvidia-smi"]
    );
    let mut both = fixture("mps-control-not-installed");
    both.gpu_query = fixture("learner-uuid-supplied-nvidia-smi-missing").gpu_query;
    let programs: Vec<_> = sharing_policy::tools_not_started(&both)
        .into_iter()
        .map(|tool| tool.program)
        .collect();
    assert_eq!(programs, ["nvidia-smi", "nvidia-cuda-mps-control"]);
    for started in [
        "healthy-socket-with-server",
        "nvidia-smi-driver-failure",
        "frozen-daemon",
        "stale-socket-after-daemon-death",
    ] {
        assert_eq!(named(started), [], "{started}");
    }
}

/// A root probe that cannot read the daemon's environment: the fix names the missing
/// `CAP_SYS_PTRACE` when the caller's effective capabilities show it missing, and looks
/// elsewhere (a security profile, another namespace) when they show it held.
#[test]
fn the_unreadable_environ_fix_follows_the_callers_capabilities() {
    let request = sharing_policy::Request {
        require_verified: true,
        ..sharing_policy::Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp")
    };
    let fix = |cap_eff: Option<u64>| {
        let mut facts = crate::hosts::served("100.0\n", 0, "Default");
        facts.caller = Some(sharing_policy::CallerFacts {
            uid: 0,
            euid: 0,
            cap_eff,
        });
        let daemon = &mut facts.daemon_process.as_mut().unwrap().processes[0];
        daemon.environ = None;
        daemon.errors.insert(
            "environ".to_owned(),
            "Permission denied (os error 13)".to_owned(),
        );
        let rejection = sharing_policy::validate(&request, &facts).unwrap_err();
        assert_eq!(
            rejection.code(),
            sharing_policy::Code::DaemonScopeUnverified
        );
        rejection.to_string()
    };
    let ptrace = 1_u64 << sharing_policy::CAP_SYS_PTRACE_BIT;
    assert!(
        fix(Some(0x0000_a804_25fb & !ptrace)).contains("which its effective capabilities lack")
    );
    assert!(fix(Some(0x01ff_ffff_ffff)).contains("AppArmor"));
    assert!(fix(None).contains("the likely cause"));
}
