//! `capture` end to end with the real runner and fake `nvidia-smi` / `nvidia-cuda-mps-control`
//! programs on a private search path (the process-wide environment is never changed).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use crate::common::daemon::os_text;
use crate::common::{fake_program, short_tempdir};
use mps_host::{ProbeOptions, capture};
use sharing_policy::{EnvFacts, FileKind, QueryOutcome};
use std::os::unix::net::UnixListener;

fn stdout_of(outcome: &QueryOutcome) -> &str {
    match outcome {
        QueryOutcome::Exited {
            code: Some(0),
            stdout,
            ..
        } => &stdout.text,
        other => panic!("expected exit 0, got {other:?}"),
    }
}

fn options_in(dir: &std::path::Path, timeout: Duration) -> ProbeOptions {
    ProbeOptions {
        timeout,
        search_path: Some(OsString::from(dir)),
        ..ProbeOptions::default()
    }
}

#[test]
fn the_two_queries_run_concurrently() {
    // Each fake waits for the other to have started. Run one after the other, the first would
    // wait until its deadline and time out; run concurrently, both finish at once.
    let bin = short_tempdir("conc");
    let mark = |name: &str| bin.path().join(name).display().to_string();
    let rendezvous = |mine: &str, theirs: &str| {
        format!(
            "touch '{mine}'\nwhile [ ! -e '{theirs}' ]; do sleep 0.05; done\necho met",
            mine = mark(mine),
            theirs = mark(theirs)
        )
    };
    fake_program(
        bin.path(),
        "nvidia-smi",
        &rendezvous("smi.started", "ctl.started"),
    );
    fake_program(
        bin.path(),
        "nvidia-cuda-mps-control",
        &rendezvous("ctl.started", "smi.started"),
    );

    let facts = capture(&options_in(bin.path(), Duration::from_secs(30)));

    assert_eq!(stdout_of(&facts.gpu_query.unwrap().outcome), "met\n");
    assert_eq!(stdout_of(&facts.daemon_query.unwrap().outcome), "met\n");
}

#[test]
fn the_daemon_front_end_gets_no_arguments_the_probe_on_stdin_and_the_pipe_directory() {
    let bin = short_tempdir("e2e");
    let pipe = short_tempdir("pipe");
    let _listener = UnixListener::bind(pipe.path().join("control")).unwrap();
    fake_program(
        bin.path(),
        "nvidia-cuda-mps-control",
        "printf 'argc=%s pipe=%s proto=%s\\n' \"$#\" \"$CUDA_MPS_PIPE_DIRECTORY\" \
         \"${CUDA_MPS_PROTOCOL_VERSION-unset}\"\ncat",
    );
    fake_program(bin.path(), "nvidia-smi", "printf '%s\\n' \"$*\"");
    let env = EnvFacts {
        cuda_mps_pipe_directory: Some(os_text(pipe.path())),
        ..EnvFacts::default()
    };
    let options = ProbeOptions {
        learner_uuid: Some("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6".to_owned()),
        ..options_in(bin.path(), Duration::from_secs(30))
    };
    let facts = crate::common::capture_on(env.clone(), &options);

    assert_eq!(facts.env, env);
    assert_eq!(facts.os, "linux");
    assert_eq!(facts.learner_uuid, options.learner_uuid);
    assert_eq!(
        stdout_of(&facts.daemon_query.as_ref().unwrap().outcome),
        format!(
            "argc=0 pipe={} proto=unset\n{}",
            pipe.path().display(),
            sharing_policy::probe_stdin(&sharing_policy::first_session())
        )
    );
    assert_eq!(
        stdout_of(&facts.gpu_query.as_ref().unwrap().outcome),
        "--query-gpu=compute_mode,driver_version,persistence_mode,gpu_recovery_action,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,index,uuid,name,pci.bus_id --format=csv,noheader\n"
    );
    assert_eq!(facts.control_pipe.unwrap().lstat.kind, FileKind::Socket);
    assert!(facts.pid_file.unwrap().error.is_some());
    // The snapshot round-trips through its JSON form.
    let json = serde_json::to_string(&facts.daemon_query).unwrap();
    assert!(
        json.contains("\"env_removed\":[\"CUDA_MPS_PROTOCOL_VERSION\"]"),
        "{json}"
    );
}

#[test]
fn a_probe_where_both_programs_hang_costs_one_deadline_not_two() {
    let bin = short_tempdir("hang");
    fake_program(bin.path(), "nvidia-smi", "exec sleep 30");
    fake_program(bin.path(), "nvidia-cuda-mps-control", "exec sleep 30");
    let timeout = Duration::from_secs(4);

    let started = Instant::now();
    let facts = capture(&options_in(bin.path(), timeout));
    let elapsed = started.elapsed();

    assert!(matches!(
        facts.gpu_query.unwrap().outcome,
        QueryOutcome::TimedOut { .. }
    ));
    assert!(matches!(
        facts.daemon_query.unwrap().outcome,
        QueryOutcome::TimedOut { .. }
    ));
    // Sequential runs would need two deadlines (8 s): one deadline plus a generous margin is less.
    assert!(elapsed < timeout * 2, "took {elapsed:?}");
}

#[test]
fn nothing_runs_and_nothing_is_looked_at_when_no_cuda_device_is_involved() {
    let bin = short_tempdir("cpu");
    let ran = bin.path().join("ran");
    for name in ["nvidia-smi", "nvidia-cuda-mps-control"] {
        fake_program(bin.path(), name, &format!("touch '{}'", ran.display()));
    }
    let options = ProbeOptions {
        observe_cuda: false,
        ..options_in(bin.path(), Duration::from_secs(5))
    };

    let facts = capture(&options);

    assert!(!ran.exists(), "a program ran");
    assert!(facts.gpu_query.is_none() && facts.daemon_query.is_none());
    assert!(facts.control_pipe.is_none() && facts.pid_file.is_none());
}

#[test]
fn without_the_programs_every_query_is_a_recorded_spawn_failure() {
    let bin = short_tempdir("none");
    let facts = capture(&options_in(bin.path(), Duration::from_secs(5)));
    for query in [facts.gpu_query.unwrap(), facts.daemon_query.unwrap()] {
        assert!(
            matches!(query.outcome, QueryOutcome::SpawnFailed { .. }),
            "{query:?}"
        );
    }
}
