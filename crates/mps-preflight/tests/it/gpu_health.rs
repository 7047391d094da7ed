//! The GPU's health columns end to end: `probe` on fake hosts whose `nvidia-smi` reports a GPU
//! that needs a reset, persistence off, or rejects the columns as an older driver does.

use crate::support::{FakeHost, GPU0, MPS_REQUEST, args};

/// A host with one GPU whose health columns are `health`, and a live daemon.
fn host(health: &str) -> FakeHost {
    let mut host = FakeHost::new();
    let row = format!(
        "Default, 550.163.01, {health}, 0, {GPU0}, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"
    );
    host.tool("nvidia-smi", &row, "", 0)
        .daemon_answers("4242\n")
        .socket();
    host
}

#[test]
fn a_gpu_that_needs_a_reset_is_a_node_fault_in_the_brief_line() {
    let host = host("Enabled, Reset, No, No, No");
    let run = host.run(&args("probe", &MPS_REQUEST, &["--format", "brief"]));
    assert_eq!(run.code, 1, "{}", run.render());
    assert!(
        run.stdout.starts_with("gpu-needs-recovery: "),
        "{}",
        run.render()
    );
}

/// The evidence `probe` prints on `host`, and its `unverified` codes.
fn unverified(host: &FakeHost) -> Vec<String> {
    let run = host.run(&args("probe", &MPS_REQUEST, &[]));
    assert_eq!(run.code, 0, "{}", run.render());
    let evidence: serde_json::Value = serde_json::from_str(&run.stdout).expect("evidence");
    assert_eq!(evidence["compute_mode"], "Default", "{}", run.render());
    evidence["unverified"]
        .as_array()
        .expect("unverified")
        .iter()
        .map(|code| code.as_str().expect("code").to_owned())
        .collect()
}

#[test]
fn persistence_off_is_a_warning_not_a_rejection() {
    let host = host("Disabled, None, No, No, No");
    let codes = unverified(&host);
    assert!(
        codes.iter().any(|c| c == "persistence-mode-disabled"),
        "{codes:?}"
    );
    assert!(
        !codes.iter().any(|c| c == "gpu-health-unverified"),
        "{codes:?}"
    );
    let doctor = host.run(&args("doctor", &MPS_REQUEST, &[]));
    assert!(
        doctor.stdout.contains("persistence mode off")
            || doctor.stderr.contains("persistence mode off"),
        "{}",
        doctor.render()
    );
}

#[test]
fn an_older_driver_costs_the_probe_nothing_but_the_health_proof() {
    let mut host = FakeHost::new();
    // As an older driver answers a field it does not know: standard output, exit status 2.
    host.script(
        "nvidia-smi",
        &format!(
            "case \"$1\" in\n\
             *gpu_recovery_action*) printf 'Field \"gpu_recovery_action\" is not a valid field to query.\\n\\n'; exit 2 ;;\n\
             esac\n\
             echo 'Default, 535.261.03, 0, {GPU0}, NVIDIA H100 80GB HBM3, 00000000:18:00.0'"
        ),
    )
    .daemon_answers("4242\n")
    .socket();
    let codes = unverified(&host);
    assert!(
        codes.iter().any(|c| c == "gpu-health-unverified"),
        "{codes:?}"
    );
    assert!(
        !codes.iter().any(|c| c == "persistence-mode-disabled"),
        "{codes:?}"
    );
}
