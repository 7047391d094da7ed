//! The seed's order of checks and its key phrases (users grep for them).

use sharing_policy::{Code, EnvFacts, HostFacts, OsText, Request, validate};

use crate::hosts::{self, ONE_H100, TWO_H100};
use crate::props_breakers::breakers;
use crate::support::{message, mps};

/// The phrase each rejection's message must contain, from the seed.
fn key_phrase(code: Code) -> &'static str {
    match code {
        Code::UnsupportedMode => "expected null or 'mps'",
        Code::UnsupportedSnapshotSchema | Code::InconsistentSnapshot => {
            "cannot use this host snapshot"
        }
        Code::UnsupportedBackend => "supports only the",
        Code::UnsupportedOs => "requires Linux",
        Code::InvalidRank => "valid rank in",
        Code::MissingCollector => "requires a CUDA collector",
        Code::NotCudaDevice => "requires CUDA learner and collector",
        Code::InvalidCudaDevice => "invalid CUDA device",
        Code::CudaUnavailable => "CUDA is unavailable",
        Code::DeviceOutOfRange => "is out of range",
        Code::AmbiguousDeviceOrder => "cannot trust index-based device mapping",
        Code::LearnerUuidUnresolved => "could not resolve the learner CUDA device UUID",
        Code::DifferentGpus => "share one physical GPU",
        Code::CollectorUuidUnresolved | Code::MigVisibilityUnsupported => {
            "could not resolve the collector CUDA UUID"
        }
        Code::NonUtf8PipeDirectory => "not valid UTF-8",
        Code::ControlPathTooLong => "longer than a Unix socket path allows",
        Code::ControlPipeMissing => "found no control pipe",
        Code::NotAControlPipe => "not a daemon control pipe",
        Code::ControlPipeInaccessible => "cannot access control pipe",
        Code::DaemonUnreachable | Code::DaemonTimedOut | Code::DaemonAnswerUnrecognized => {
            "could not reach the control daemon"
        }
        Code::GpuOutsideDaemonScope => "through the control daemon at",
        Code::DaemonIndexRemap => "renumbers the GPUs it serves",
        Code::DaemonIdentityUnverified => "could not verify which process is the control daemon",
        Code::DaemonPidFileDisagrees => "could not verify the control daemon's pid file",
        Code::DaemonOfAnotherUser => "would not be served by the control daemon",
        Code::DaemonScopeUnverified => "could not verify which GPUs",
        Code::ServerOfAnotherUser => "another user's MPS server",
        Code::ServerOwnerUnverified => "could not verify that the MPS servers",
        Code::ComputeModeForbidsSharing => "its compute mode is",
        Code::ComputeModeUnverified => "could not verify the compute mode",
        Code::GpuHeldByComputeProcess => "compute process(es) hold it",
        Code::ComputeAppsUnverified => "could not verify that no compute process holds GPU",
        Code::GpuNeedsRecovery => "it needs a recovery action",
        Code::GpuHealthUnverified => "could not verify the health of GPU",
        Code::PersistenceModeDisabled => "found persistence mode off",
        Code::ServerFault => "CUDA_ERROR_MPS_SERVER_NOT_READY",
        Code::ServerStatusUnverified => "could not verify the state of MPS server",
        Code::ActiveThreadPercentageBelowRequirement => "default active-thread percentage is",
        Code::PinnedMemBelowRequirement => "default pinned-memory limit for GPU",
        Code::PinnedMemLimitUnverified => {
            "could not verify the daemon's default pinned-memory limit"
        }
        Code::ServerCrashLoop => "its servers keep crashing",
        Code::ServerFatalErrorLogged => "handling a fatal GPU error",
        Code::DaemonLogUnverified => "could not verify the control daemon's log",
        Code::DaemonLogPendingClient
        | Code::DaemonLogClientPidZero
        | Code::DaemonLogServerFailedToStart => "may explain a later failure",
        Code::StaleServerClient => "left in an undefined state",
        Code::ServerClientsUnverified => "could not verify the clients of MPS server",
        Code::ServerClientLimitReached => "over the limit of",
        Code::ServerClientLimitUnverified => "does not say which GPU each uses",
        Code::ServerLimitsUnverified => "the running MPS server applies",
        Code::ShmNotShared => "is not the control daemon's",
        Code::ShmUnverified => "/dev/shm",
        Code::ShmBelowRequirement => "room in /dev/shm",
        Code::PipeDirectoryUnreachable => "the MPS server runs as the client's user",
        Code::PipeAccessUnverified => "can reach the pipe directory",
        Code::DeviceMaxConnectionsHigh | Code::DaemonOpenFilesLow => "advises on GPU",
        other => panic!("no key phrase for {other}"),
    }
}

#[test]
fn every_rejection_carries_its_key_phrase_and_a_remedy() {
    let base = hosts::all()
        .into_iter()
        .find(|(n, _)| *n == "healthy-socket-with-server")
        .unwrap()
        .1;
    for breaker in breakers() {
        for salt in 0..4 {
            let mut request = mps("cuda:0", Some("cuda:0"));
            let mut facts = base.clone();
            (breaker.apply)(&mut request, &mut facts, salt);
            let rejection = validate(&request, &facts).unwrap_err();
            let text = rejection.to_string();
            assert!(
                text.contains(key_phrase(rejection.code())),
                "{breaker:?}: {text}"
            );
            assert!(
                text.starts_with("training.cuda_process_sharing")
                    || text.starts_with("Unsupported training.cuda_process_sharing="),
                "{text}"
            );
            assert!(
                text.ends_with('.') || text.contains("nvidia-cuda-mps-control"),
                "a message ends with what to do: {text}"
            );
        }
    }
}

#[test]
fn codes_are_stable_kebab_case_and_serialize_as_such() {
    let expected = [
        "unsupported-mode",
        "unsupported-snapshot-schema",
        "unsupported-backend",
        "unsupported-os",
        "invalid-rank",
        "missing-collector",
        "not-cuda-device",
        "invalid-cuda-device",
        "cuda-unavailable",
        "device-out-of-range",
        "mig-visibility-unsupported",
        "ambiguous-device-order",
        "learner-uuid-unresolved",
        "different-gpus",
        "collector-uuid-unresolved",
        "inconsistent-snapshot",
        "non-utf8-pipe-directory",
        "control-path-too-long",
        "control-pipe-missing",
        "not-a-control-pipe",
        "control-pipe-inaccessible",
        "daemon-unreachable",
        "daemon-timed-out",
        "daemon-answer-unrecognized",
        "gpu-outside-daemon-scope",
        "daemon-index-remap",
        "daemon-identity-unverified",
        "daemon-pid-file-disagrees",
        "daemon-of-another-user",
        "daemon-scope-unverified",
        "server-of-another-user",
        "server-owner-unverified",
        "gpu-needs-recovery",
        "gpu-health-unverified",
        "compute-mode-forbids-sharing",
        "compute-mode-unverified",
        "gpu-held-by-compute-process",
        "compute-apps-unverified",
        "persistence-mode-disabled",
        "server-fault",
        "server-status-unverified",
        "stale-server-client",
        "server-clients-unverified",
        "server-client-limit-reached",
        "server-client-limit-unverified",
        "server-has-clients",
        "active-thread-percentage-below-requirement",
        "pinned-mem-below-requirement",
        "pinned-mem-limit-unverified",
        "server-limits-unverified",
        "server-crash-loop",
        "server-fatal-error-logged",
        "daemon-log-unverified",
        "daemon-log-pending-client",
        "daemon-log-client-pid-zero",
        "daemon-log-server-failed-to-start",
        "shm-not-shared",
        "shm-unverified",
        "shm-below-requirement",
        "pipe-directory-unreachable",
        "pipe-access-unverified",
        "device-max-connections-high",
        "daemon-open-files-low",
    ];
    let got: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(got, expected);
    for code in Code::ALL {
        assert_eq!(
            serde_json::to_value(code).unwrap(),
            serde_json::Value::from(code.as_str())
        );
        assert_eq!(code.to_string(), code.as_str());
        assert!(!code.why().is_empty());
    }
}

/// The checks in the seed's order: each entry breaks one prerequisite on a healthy two-GPU host.
type Break = fn(&mut Request, &mut HostFacts);

fn chain() -> Vec<(Code, Break)> {
    vec![
        (Code::UnsupportedMode, |r, _| {
            r.mode = Some("shared".to_owned());
        }),
        (Code::UnsupportedSnapshotSchema, |_, f| {
            "v0".clone_into(&mut f.schema);
        }),
        (Code::UnsupportedBackend, |r, _| {
            r.backend = Some("mujoco".to_owned());
        }),
        (Code::UnsupportedOs, |_, f| "macos".clone_into(&mut f.os)),
        (Code::InvalidRank, |r, _| r.rank = 2),
        (Code::MissingCollector, |r, _| r.collector_device = None),
        (Code::NotCudaDevice, |r, _| {
            "cpu".clone_into(&mut r.learner_device);
        }),
        (Code::InvalidCudaDevice, |r, _| {
            "cuda:x".clone_into(&mut r.learner_device);
        }),
        (Code::CudaUnavailable, |_, f| {
            f.learner_uuid = None;
            f.gpu_query = None;
        }),
        (Code::DeviceOutOfRange, |r, f| {
            "cuda:2".clone_into(&mut r.learner_device);
            f.learner_uuid = None;
        }),
        (Code::DifferentGpus, |r, f| {
            f.learner_uuid = None;
            f.gpu_query = Some(hosts::gpu_query(sharing_policy::QueryOutcome::Exited {
                code: Some(0),
                signal: None,
                stdout: sharing_policy::CapturedText::from_bytes(TWO_H100.as_bytes(), false),
                stderr: sharing_policy::CapturedText::default(),
            }));
            r.collector_device = Some("cuda:1".to_owned());
        }),
        (Code::CollectorUuidUnresolved, |r, f| {
            f.learner_uuid = Some(hosts::H100_A.to_owned());
            f.gpu_query = None;
            r.collector_device = Some("cuda:0".to_owned());
        }),
        (Code::ControlPathTooLong, |_, f| {
            let long = format!("/scratch/{}", "p".repeat(100));
            f.env.cuda_mps_pipe_directory = Some(OsText::from(long.as_str()));
            let env = f.env.clone();
            let mut pipe = hosts::live_socket(&env);
            pipe.lstat.kind = sharing_policy::FileKind::Missing;
            pipe.stat.kind = sharing_policy::FileKind::Missing;
            f.control_pipe = Some(pipe);
            f.daemon_query = Some(hosts::daemon_query(&env, crate::changes::no_daemon()));
        }),
        (Code::ControlPipeMissing, |_, f| {
            let pipe = f.control_pipe.as_mut().unwrap();
            pipe.lstat.kind = sharing_policy::FileKind::Missing;
            pipe.stat.kind = sharing_policy::FileKind::Missing;
        }),
        (Code::NotAControlPipe, |_, f| {
            let pipe = f.control_pipe.as_mut().unwrap();
            pipe.lstat.kind = sharing_policy::FileKind::Regular;
            pipe.stat.kind = sharing_policy::FileKind::Regular;
        }),
        (Code::ControlPipeInaccessible, |_, f| {
            f.control_pipe.as_mut().unwrap().access.read_write = Some(false);
        }),
        (Code::DaemonUnreachable, |_, f| {
            f.daemon_query.as_mut().unwrap().outcome = crate::changes::no_daemon();
        }),
    ]
}

#[test]
fn checks_run_in_the_seeds_order() {
    // For each check k, break k and every later check: k must be the one reported.
    let base = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n");
    let chain = chain();
    for k in 0..chain.len() {
        let mut request = mps("cuda:0", Some("cuda:0"));
        let mut facts = base.clone();
        for (_, breaker) in chain.iter().skip(k).rev() {
            breaker(&mut request, &mut facts);
        }
        let expected = chain[k].0;
        let got = validate(&request, &facts).err().map(|r| r.code());
        assert_eq!(got, Some(expected), "with checks {k}.. broken");
    }
}

#[test]
fn the_seeds_messages_survive() {
    let healthy = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n");
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.mode = Some("invalid".to_owned());
    assert_eq!(
        message(&request, &healthy),
        "Unsupported training.cuda_process_sharing='invalid'; expected null or 'mps'. An explicit 'mps' request never falls back to multi-context CUDA execution."
    );
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.backend = Some("mujoco".to_owned());
    assert!(message(&request, &healthy).starts_with(
        "training.cuda_process_sharing='mps' supports only the mjwarp backend in this release; got training.sim_backend='mujoco'."
    ));
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.rank = 2;
    request.world_size = 2;
    assert!(message(&request, &healthy)
        .starts_with("training.cuda_process_sharing='mps' requires a valid rank in [0, world_size); got rank=2, world_size=2."));
    assert!(message(&mps("cuda:0", None), &healthy).starts_with(
        "training.cuda_process_sharing='mps' requires a CUDA collector process device; the mjwarp learner/collector rank-local binding did not produce one."
    ));
    assert!(message(&mps("cpu", Some("cuda:0")), &healthy)
        .starts_with("training.cuda_process_sharing='mps' requires CUDA learner and collector devices; got learner_device='cpu'."));
    assert!(
        message(&mps("cuda:x", Some("cuda:0")), &healthy).starts_with(
            "training.cuda_process_sharing='mps' received invalid CUDA device 'cuda:x'"
        )
    );
    let mut mac = healthy.clone();
    "macos".clone_into(&mut mac.os);
    assert!(
        message(&mps("cuda:0", Some("cuda:0")), &mac)
            .starts_with("training.cuda_process_sharing='mps' requires Linux; got os='macos'.")
    );
}

#[test]
fn configured_backends_are_listed_when_not_the_default() {
    let healthy = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n");
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.backend = Some("mujoco".to_owned());
    request.supported_backends = vec!["mjwarp".to_owned(), "Genesis".to_owned()];
    let text = message(&request, &healthy);
    assert!(text.contains("supports only the configured backends 'mjwarp', 'genesis'; got training.sim_backend='mujoco'"), "{text}");
    request.backend = Some(" GENESIS ".to_owned());
    assert!(validate(&request, &healthy).is_ok());
}

#[test]
fn mode_accepts_mps_in_any_case_with_whitespace_only() {
    let healthy = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n");
    for mode in ["mps", " MPS ", "Mps", "\tmps\n"] {
        let request = Request::new(Some(mode), "cuda:0", Some("cuda:0"), "mjwarp");
        let evidence = validate(&request, &healthy).unwrap();
        assert_eq!(evidence.configured.as_deref(), Some("mps"), "{mode:?}");
    }
    for mode in ["", "m p s", "mps2", "null", "MPS-v3"] {
        let request = Request::new(Some(mode), "cuda:0", Some("cuda:0"), "mjwarp");
        assert_eq!(
            validate(&request, &healthy).unwrap_err().code(),
            Code::UnsupportedMode,
            "{mode:?}"
        );
    }
}

#[test]
fn devices_are_normalised_in_the_evidence() {
    let healthy = hosts::healthy(EnvFacts::default(), TWO_H100, "100.0\n");
    let evidence = validate(&mps(" CUDA ", Some("cuda:00")), &healthy).unwrap();
    assert_eq!(evidence.learner_device.as_deref(), Some("cuda:0"));
    assert_eq!(evidence.collector_device.as_deref(), Some("cuda:0"));
}

#[test]
fn the_collector_is_named_when_its_device_is_wrong() {
    // The seed always said learner_device (the reference module's wording).
    let healthy = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n");
    let text = message(&mps("cuda:0", Some("cpu")), &healthy);
    assert!(text.contains("got collector_device='cpu'"), "{text}");
    assert!(!text.contains("learner_device"), "{text}");
    let text = message(&mps("cuda:0", Some("cuda:+1")), &healthy);
    assert!(text.contains("'cuda:+1' for collector_device"), "{text}");
}
