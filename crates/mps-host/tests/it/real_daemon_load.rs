//! Many ranks probing one real control daemon at once. The daemon serves one
//! front-end session at a time and drops the others (`sharing_policy::retry` names what they
//! see); without retries 8 probes at once already gave false rejections. Runs against whichever
//! daemon `$MPS_PREFLIGHT_MPS_CONTROL` names (`.ci/run` runs it for 535 and 550); skips without.

use std::time::Duration;

use crate::common::daemon::{Daemon, binary_or_skip};
use mps_host::capture_with;
use sharing_policy::{HostFacts, Request, validate};

/// Probes started at once: above the 16 the target asks for, below what a 2-core CI machine
/// spawns comfortably within the deadline.
const PROBES: usize = 24;

#[test]
fn concurrent_probes_of_one_idle_daemon_all_validate_and_replay_alike() {
    let Some(binary) = binary_or_skip("concurrent_probes_of_one_idle_daemon_all_validate") else {
        return;
    };
    let daemon = Daemon::start(&binary);
    crate::common::fake_program(
        &daemon.bin_dir,
        "nvidia-smi",
        "echo 'Default, 535.261.03, Enabled, None, No, No, No, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0'",
    );
    let options = daemon.options(Duration::from_secs(10));
    let runner = daemon.runner();
    let barrier = std::sync::Barrier::new(PROBES);
    let snapshots: Vec<HostFacts> = std::thread::scope(|scope| {
        let probes: Vec<_> = (0..PROBES)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    capture_with(daemon.env(), &runner, &options)
                })
            })
            .collect();
        probes
            .into_iter()
            .map(|probe| probe.join().unwrap())
            .collect()
    });

    let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    let mut attempts = 0;
    for facts in &snapshots {
        let query = facts.daemon_query.as_ref().unwrap();
        attempts += query.earlier_attempts.len() + 1;
        let evidence =
            validate(&request, facts).unwrap_or_else(|rejection| panic!("{rejection}\n{query:#?}"));
        assert!(evidence.validated);
        // The snapshot holds every attempt, so a replayed `check` gives the same verdict.
        let replayed: HostFacts =
            serde_json::from_str(&serde_json::to_string(facts).unwrap()).unwrap();
        assert_eq!(&replayed, facts);
        assert_eq!(validate(&request, &replayed), Ok(evidence));
    }
    eprintln!("{PROBES} concurrent probes: {attempts} daemon-query attempts in all");
}
