//! The GPU query on a driver that does not know the health columns: `nvidia-smi` rejects the
//! query as an older driver does (`Field "…" is not a valid field to query.` on standard output,
//! exit status 2; CoHDI/composable-resource-operator#37), and the probe asks the base query
//! within the same deadline. Any other failure is the answer: no second process.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use crate::common::{fake_program, short_tempdir};
use mps_host::{ProbeOptions, capture};
use sharing_policy::{BASE_GPU_QUERY_ARGS, GPU_QUERY_ARGS, QueryOutcome};

const ROW: &str = "Default, 535.261.03, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0";

fn options_in(dir: &std::path::Path, timeout: Duration) -> ProbeOptions {
    ProbeOptions {
        timeout,
        search_path: Some(OsString::from(dir)),
        ..ProbeOptions::default()
    }
}

/// An `nvidia-smi` of a driver without `gpu_recovery_action`: it answers the base query and
/// rejects any query naming the field, after `delay` seconds each. Every run appends a line
/// to `runs`.
fn old_smi(bin: &std::path::Path, delay: &str, base_delay: &str) {
    let runs = bin.join("runs").display().to_string();
    fake_program(
        bin,
        "nvidia-smi",
        &format!(
            "echo run >> '{runs}'\n\
             case \"$1\" in\n\
             *gpu_recovery_action*) sleep {delay}; printf 'Field \"gpu_recovery_action\" is not a valid field to query.\\n\\n'; exit 2 ;;\n\
             esac\n\
             sleep {base_delay}\n\
             echo '{ROW}'"
        ),
    );
    fake_program(bin, "nvidia-cuda-mps-control", "exit 1");
}

fn runs(bin: &std::path::Path) -> usize {
    std::fs::read_to_string(bin.join("runs"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn an_old_driver_that_rejects_the_health_fields_gets_the_base_query() {
    let bin = short_tempdir("oldd");
    old_smi(bin.path(), "0", "0");
    let facts = capture(&options_in(bin.path(), Duration::from_secs(5)));
    let query = facts.gpu_query.as_ref().unwrap();
    assert_eq!(query.args, BASE_GPU_QUERY_ARGS);
    assert!(
        matches!(&query.outcome, QueryOutcome::Exited { code: Some(0), stdout, .. } if stdout.text.trim() == ROW),
        "{query:?}"
    );
    let rejected = facts.gpu_query_rejected.as_ref().unwrap();
    assert_eq!(rejected.args, GPU_QUERY_ARGS);
    assert!(
        matches!(
            &rejected.outcome,
            QueryOutcome::Exited { code: Some(2), .. }
        ),
        "{rejected:?}"
    );
    assert_eq!(
        sharing_policy::field_rejected(rejected).as_deref(),
        Some("Field \"gpu_recovery_action\" is not a valid field to query.")
    );
    assert_eq!(runs(bin.path()), 2);
    // The table is read from the base query, as before.
    assert_eq!(
        sharing_policy::host_gpu_table(query).unwrap().rows().len(),
        1
    );
}

#[test]
fn the_fallback_shares_the_first_query_s_deadline() {
    let bin = short_tempdir("oldt");
    // The rejection comes after 1 s; the base query would take 30 s.
    old_smi(bin.path(), "1", "30");
    let timeout = Duration::from_secs(3);
    let started = Instant::now();
    let facts = capture(&options_in(bin.path(), timeout));
    let elapsed = started.elapsed();
    let query = facts.gpu_query.as_ref().unwrap();
    assert_eq!(query.args, BASE_GPU_QUERY_ARGS);
    assert!(
        matches!(query.outcome, QueryOutcome::TimedOut { .. }),
        "{query:?}"
    );
    assert!(query.timeout_ms < 3000, "{}", query.timeout_ms);
    assert!(facts.gpu_query_rejected.is_some());
    assert!(
        elapsed < timeout + Duration::from_millis(1500),
        "{elapsed:?}"
    );
}

#[test]
fn any_other_failure_is_the_answer_and_spawns_nothing_more() {
    let bin = short_tempdir("oldf");
    let runs_file = bin.path().join("runs").display().to_string();
    fake_program(
        bin.path(),
        "nvidia-smi",
        &format!(
            "echo run >> '{runs_file}'\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9"
        ),
    );
    fake_program(bin.path(), "nvidia-cuda-mps-control", "exit 1");
    let facts = capture(&options_in(bin.path(), Duration::from_secs(5)));
    assert_eq!(facts.gpu_query.as_ref().unwrap().args, GPU_QUERY_ARGS);
    assert!(facts.gpu_query_rejected.is_none());
    assert_eq!(runs(bin.path()), 1);
}

#[test]
fn a_driver_that_knows_the_fields_is_asked_once() {
    let bin = short_tempdir("newd");
    let runs_file = bin.path().join("runs").display().to_string();
    fake_program(
        bin.path(),
        "nvidia-smi",
        &format!(
            "echo run >> '{runs_file}'\necho 'Default, 550.163.01, Enabled, Reset, No, No, No, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0'"
        ),
    );
    fake_program(bin.path(), "nvidia-cuda-mps-control", "exit 1");
    let facts = capture(&options_in(bin.path(), Duration::from_secs(5)));
    assert_eq!(facts.gpu_query.as_ref().unwrap().args, GPU_QUERY_ARGS);
    assert!(facts.gpu_query_rejected.is_none());
    assert_eq!(runs(bin.path()), 1);
}
