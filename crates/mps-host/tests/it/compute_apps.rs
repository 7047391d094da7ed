//! The compute processes of a GPU in `Exclusive_Process` with no MPS server yet:
//! the probe asks `nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name
//! --format=csv,noheader` only there, records it raw, and the validator rejects a process on
//! the GPU. A fake `nvidia-smi` answers the fields asked (with no process it prints nothing,
//! exit 0; an unknown field is exit 2) and counts the compute-apps runs; a fake control
//! front-end answers live, listing a server or none.

use std::ffi::OsString;
use std::os::unix::net::UnixListener;
use std::time::Duration;

use crate::common::{capture_on, fake_program, shared_fake_daemon, short_tempdir};
use mps_host::ProbeOptions;
use sharing_policy::{
    COMPUTE_APPS_QUERY_ARGS, Code, EnvFacts, HostFacts, OsText, QueryOutcome, Request, validate,
};

const GPU_A: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
const GPU_B: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";

/// A host whose GPU 0 is in `mode`, whose daemon lists `servers` (`""`: none) and whose
/// compute-apps query prints `apps` and exits `code`. Returns the facts and how many
/// times the compute-apps query ran.
fn probe(mode: &str, servers: &str, apps: &str, code: i32) -> (HostFacts, usize) {
    let dir = short_tempdir("apps");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let runs = dir.path().join("runs").display().to_string();
    let [asked, format] = COMPUTE_APPS_QUERY_ARGS;
    fake_program(
        &bin,
        "nvidia-smi",
        &format!(
            "case \"$1\" in\n\
             --query-compute-apps=*)\n\
               echo run >> '{runs}'\n\
               if [ \"$1\" != '{asked}' ] || [ \"$2\" != '{format}' ]; then\n\
                 printf 'Field \"x\" is not a valid field to query.\\n\\n'; exit 2\n\
               fi\n\
               printf '{apps}'; exit {code} ;;\n\
             esac\n\
             echo '{mode}, 550.163.01, Enabled, None, No, No, No, 0, {GPU_A}, NVIDIA H100 80GB HBM3, 00000000:18:00.0'\n\
             echo 'Default, 550.163.01, Enabled, None, No, No, No, 1, {GPU_B}, NVIDIA H100 80GB HBM3, 00000000:2A:00.0'"
        ),
    );
    // `servers` is printf text: PIDs each followed by a `\\n` escape.
    let listed: Vec<u32> = servers
        .split("\\n")
        .filter_map(|pid| pid.parse().ok())
        .collect();
    shared_fake_daemon(dir.path(), &listed);
    let pipe = dir.path().join("pipe");
    std::fs::create_dir(&pipe).unwrap();
    let _control = UnixListener::bind(pipe.join("control")).unwrap();
    let env = EnvFacts {
        cuda_mps_pipe_directory: Some(OsText::from(pipe.to_str().unwrap())),
        ..EnvFacts::default()
    };
    let options = ProbeOptions {
        timeout: Duration::from_secs(5),
        search_path: Some(OsString::from(&bin)),
        ..ProbeOptions::default()
    };
    let facts = capture_on(env, &options);
    let count = std::fs::read_to_string(&runs)
        .unwrap_or_default()
        .lines()
        .count();
    (facts, count)
}

fn request() -> Request {
    Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp")
}

#[test]
fn a_process_holding_the_exclusive_gpu_is_recorded_and_rejected() {
    let row = format!("{GPU_A}, 4242, /usr/bin/python3\\n{GPU_B}, 77, other\\n");
    let (facts, runs) = probe("Exclusive_Process", "", &row, 0);
    assert_eq!(runs, 1, "asked once");
    let record = facts.compute_apps_query.as_ref().unwrap();
    assert_eq!(record.args, COMPUTE_APPS_QUERY_ARGS);
    assert!(
        matches!(&record.outcome, QueryOutcome::Exited { code: Some(0), stdout, .. } if stdout.text.contains("4242")),
        "{record:?}"
    );
    let rejection = validate(&request(), &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::GpuHeldByComputeProcess);
    assert!(
        rejection.message().contains("PID 4242"),
        "{}",
        rejection.message()
    );
}

#[test]
fn an_empty_answer_validates_and_records_no_process() {
    let (facts, runs) = probe("Exclusive_Process", "", "", 0);
    assert_eq!(runs, 1);
    let evidence = validate(&request(), &facts).unwrap();
    assert_eq!(evidence.gpu_compute_processes, Some(0));
    // A process on the other GPU only is not this job's concern.
    let (facts, _) = probe(
        "Exclusive_Process",
        "",
        &format!("{GPU_B}, 77, other\\n"),
        0,
    );
    assert_eq!(
        validate(&request(), &facts).unwrap().gpu_compute_processes,
        Some(0)
    );
}

#[test]
fn a_failed_query_is_unverified_never_a_pass() {
    let (facts, runs) = probe("Exclusive_Process", "", "", 6);
    assert_eq!(runs, 1);
    let evidence = validate(&request(), &facts).unwrap();
    assert!(evidence.unverified.contains(&Code::ComputeAppsUnverified));
    let strict = Request {
        require_verified: true,
        ..request()
    };
    let rejection = validate(&strict, &facts).unwrap_err();
    assert!(
        [
            Code::ComputeAppsUnverified,
            Code::DaemonIdentityUnverified,
            Code::DaemonScopeUnverified,
            Code::ServerOwnerUnverified
        ]
        .contains(&rejection.code()),
        "{:?}",
        rejection.code()
    );
}

#[test]
fn no_process_is_added_in_default_mode_or_with_a_server() {
    let held = format!("{GPU_A}, 4242, python3\\n");
    let (facts, runs) = probe("Default", "", &held, 0);
    assert_eq!(runs, 0, "Default mode");
    assert!(facts.compute_apps_query.is_none());
    let (facts, runs) = probe("Exclusive_Process", "4428\\n", &held, 0);
    assert_eq!(runs, 0, "a server is listed");
    assert!(facts.compute_apps_query.is_none());
}
