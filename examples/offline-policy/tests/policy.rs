//! Kestrel's expectations of the hosts in `fixtures/hosts/`.

use std::path::{Path, PathBuf};

use gpu_uuid::GpuUuid;
use offline_policy::{launcher_request, load_host};
use sharing_policy::{Code, explain, validate};

fn hosts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts")
}

fn host(name: &str) -> sharing_policy::HostFacts {
    load_host(&hosts().join(format!("{name}.json"))).unwrap()
}

/// The H100s Kestrel's hosts carry, as `nvidia-smi` names them.
const H100_0: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
const H100_1: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";

#[test]
fn healthy_hosts_validate_on_the_gpu_the_mask_selects() {
    for (name, gpu) in [
        ("healthy-socket-with-server", H100_0),
        ("healthy-idle-daemon", H100_0),
        ("numeric-mask", H100_1),
        ("uuid-mask", H100_1),
        ("prefix-mask", H100_1),
    ] {
        let evidence = validate(&launcher_request(0, 1), &host(name)).unwrap();
        let token = GpuUuid::parse(gpu).unwrap().canonical_token();
        assert!(evidence.validated, "{name}");
        assert_eq!(
            evidence.learner_gpu_uuid.as_deref(),
            Some(token.as_str()),
            "{name}"
        );
        assert_eq!(
            evidence.collector_gpu_uuid, evidence.learner_gpu_uuid,
            "{name}"
        );
    }
}

#[test]
fn every_rank_of_a_two_rank_job_validates_and_a_third_does_not() {
    let facts = host("healthy-socket-with-server");
    for rank in 0..2 {
        let evidence = validate(&launcher_request(rank, 2), &facts).unwrap();
        assert_eq!((evidence.rank, evidence.world_size), (rank, 2));
    }
    let rejection = validate(&launcher_request(2, 2), &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::InvalidRank);
}

#[test]
fn broken_hosts_are_rejected_with_the_code_the_on_call_runbook_names() {
    for (name, code) in [
        ("no-control-pipe", Code::ControlPipeMissing),
        ("stale-socket-after-daemon-death", Code::DaemonUnreachable),
        ("frozen-daemon", Code::DaemonTimedOut),
        ("control-no-access", Code::ControlPipeInaccessible),
        ("empty-mask", Code::CudaUnavailable),
        ("mig-mask", Code::MigVisibilityUnsupported),
        (
            "mixed-models-without-pci-bus-id",
            Code::AmbiguousDeviceOrder,
        ),
        ("old-snapshot-schema", Code::UnsupportedSnapshotSchema),
    ] {
        let rejection = validate(&launcher_request(0, 1), &host(name)).unwrap_err();
        assert_eq!(rejection.code(), code, "{name}: {rejection}");
        assert_eq!(rejection.code().as_str(), code.as_str());
    }
}

#[test]
fn every_shipped_host_gets_an_answer_and_doctor_agrees_with_it() {
    let mut seen = 0;
    for entry in std::fs::read_dir(hosts()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let facts = load_host(&path).unwrap();
        let request = launcher_request(0, 1);
        let findings = explain(&request, &facts);
        match validate(&request, &facts) {
            Ok(evidence) => assert!(
                evidence.validated && findings.is_empty(),
                "{}",
                path.display()
            ),
            Err(rejection) => {
                assert_eq!(
                    findings.first().map(|f| f.code),
                    Some(rejection.code()),
                    "{}",
                    path.display()
                );
            }
        }
        seen += 1;
    }
    assert!(seen >= 15, "found {seen} snapshots");
}
