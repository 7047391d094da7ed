//! The two vocabularies render the same findings: every key phrase users grep for is in both,
//! and the command line's words carry none of the reference configuration's names or jargon.

use serde_json::json;
use sharing_policy::{Code, HostFacts, Request, Vocabulary, explain};

use crate::support::mps;

/// A key phrase, the finding that carries it, and the host and request that produce it.
struct Case {
    phrase: &'static str,
    code: Code,
    host: &'static str,
    request: fn() -> Request,
}

fn host(name: &str) -> HostFacts {
    let path = format!("{}/../../fixtures/hosts/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn same_gpu() -> Request {
    mps("cuda:0", Some("cuda:0"))
}

/// Every key phrase users grep for, with a case whose finding carries it.
const CASES: [Case; 14] = [
    Case {
        phrase: "expected null or 'mps'",
        code: Code::UnsupportedMode,
        host: "healthy-socket-with-server.json",
        request: || Request {
            mode: Some("bogus".to_owned()),
            ..same_gpu()
        },
    },
    Case {
        phrase: "only the mjwarp backend",
        code: Code::UnsupportedBackend,
        host: "healthy-socket-with-server.json",
        request: || Request {
            backend: Some("mujoco".to_owned()),
            ..same_gpu()
        },
    },
    Case {
        phrase: "valid rank in",
        code: Code::InvalidRank,
        host: "healthy-socket-with-server.json",
        request: || Request {
            rank: 2,
            world_size: 2,
            ..same_gpu()
        },
    },
    Case {
        phrase: "requires a CUDA collector",
        code: Code::MissingCollector,
        host: "healthy-socket-with-server.json",
        request: || mps("cuda:0", None),
    },
    Case {
        phrase: "requires CUDA learner and collector",
        code: Code::NotCudaDevice,
        host: "healthy-socket-with-server.json",
        request: || mps("gpu0", Some("cuda:0")),
    },
    Case {
        phrase: "invalid CUDA device",
        code: Code::InvalidCudaDevice,
        host: "healthy-socket-with-server.json",
        request: || mps("cuda:x", Some("cuda:0")),
    },
    Case {
        phrase: "CUDA is unavailable",
        code: Code::CudaUnavailable,
        host: "real-daemon-bookworm-535.261.03-idle.json",
        request: same_gpu,
    },
    Case {
        phrase: "share one physical GPU",
        code: Code::DifferentGpus,
        host: "mixed-models-with-pci-bus-id.json",
        request: || mps("cuda:0", Some("cuda:1")),
    },
    Case {
        phrase: "could not resolve the collector CUDA UUID",
        code: Code::CollectorUuidUnresolved,
        host: "learner-uuid-supplied-nvidia-smi-missing.json",
        request: same_gpu,
    },
    Case {
        phrase: "found no control pipe",
        code: Code::ControlPipeMissing,
        host: "no-control-pipe.json",
        request: same_gpu,
    },
    Case {
        phrase: "not a daemon control pipe",
        code: Code::NotAControlPipe,
        host: "control-regular-file.json",
        request: same_gpu,
    },
    Case {
        phrase: "cannot access control pipe",
        code: Code::ControlPipeInaccessible,
        host: "control-no-access.json",
        request: same_gpu,
    },
    Case {
        phrase: "could not reach the control daemon",
        code: Code::DaemonUnreachable,
        host: "stale-socket-after-daemon-death.json",
        request: same_gpu,
    },
    Case {
        phrase: "CUDA_DEVICE_ORDER",
        code: Code::AmbiguousDeviceOrder,
        host: "mixed-models-without-pci-bus-id.json",
        request: same_gpu,
    },
];

/// The case's finding, rendered in `vocabulary`.
fn finding(case: &Case, vocabulary: Vocabulary) -> sharing_policy::Finding {
    let request = Request {
        vocabulary,
        ..(case.request)()
    };
    explain(&request, &host(case.host))
        .into_iter()
        .find(|finding| finding.code == case.code)
        .unwrap_or_else(|| panic!("{:?} on {} gives no {}", vocabulary, case.host, case.code))
}

#[test]
fn every_key_phrase_is_in_both_renderings_of_its_finding() {
    for case in &CASES {
        for vocabulary in [Vocabulary::Reference, Vocabulary::Cli] {
            let finding = finding(case, vocabulary);
            assert!(
                finding.message.contains(case.phrase),
                "{vocabulary:?} {}: {:?} lacks {:?}",
                case.code,
                finding.message,
                case.phrase
            );
        }
    }
}

/// What the reference's configuration calls things, and its jargon: never in the CLI's words.
const REFERENCE_ONLY: [&str; 9] = [
    "training.",
    "learner_device=",
    "collector_device=",
    "world_size)",
    "rank=",
    "rank-local",
    "multi-context",
    "\\n'",
    "torch_module",
];

#[test]
fn the_cli_vocabulary_speaks_the_cli_flags_only() {
    for case in &CASES {
        let reference = finding(case, Vocabulary::Reference);
        let cli = finding(case, Vocabulary::Cli);
        for field in [&cli.message, &cli.found, &cli.why, &cli.fix] {
            for term in REFERENCE_ONLY {
                assert!(
                    !field.contains(term),
                    "{}: {field:?} says {term:?}",
                    case.code
                );
            }
        }
        // The same finding: only its words differ.
        assert_eq!(reference.code, cli.code);
    }
}

#[test]
fn the_cli_renderings() {
    let rendered: serde_json::Value = CASES
        .iter()
        .map(|case| {
            let cli = finding(case, Vocabulary::Cli);
            json!({
                "code": cli.code,
                "message": cli.message,
                "found": cli.found,
                "why": cli.why,
                "fix": cli.fix,
            })
        })
        .collect();
    insta::assert_json_snapshot!(rendered);
}

#[test]
fn without_a_backend_nothing_about_backends_is_checked() {
    let facts = host("healthy-socket-with-server.json");
    let no_backend = Request {
        backend: None,
        supported_backends: Vec::new(),
        ..same_gpu()
    };
    assert!(sharing_policy::validate(&no_backend, &facts).is_ok());
    let named = Request {
        backend: Some("mujoco".to_owned()),
        ..no_backend
    };
    assert_eq!(
        sharing_policy::validate(&named, &facts).unwrap_err().code(),
        Code::UnsupportedBackend
    );
}
