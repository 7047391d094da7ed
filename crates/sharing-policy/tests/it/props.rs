//! The fail-closed rule, as properties over snapshots built by mutating healthy fixtures.

use proptest::prelude::*;
use proptest::sample::select;
use sharing_policy::{
    CapturedText, Code, FileKind, HostFacts, OsText, QueryOutcome, Request, SCHEMA, SCHEMA_V1,
    explain, listed_server_pids, observes_host, validate,
};

use crate::hosts::{self, H100_A, H100_B, ONE_H100, TWO_H100};
use crate::props_served::{served_breakers, set_v1_table, settings_breakers};
use crate::support::mps;

fn config() -> ProptestConfig {
    // Failing seeds are saved under tests/proptest-regressions/; commit them.
    ProptestConfig::with_cases(256)
}

/// The healthy fixtures an explicit cuda:0/cuda:0 request validates on.
fn healthy_bases() -> Vec<HostFacts> {
    let bases: Vec<HostFacts> = hosts::all()
        .into_iter()
        .map(|(_, facts)| facts)
        .filter(|facts| validate(&mps("cuda:0", Some("cuda:0")), facts).is_ok())
        .collect();
    assert!(
        bases.len() >= 6,
        "expected several healthy fixtures, got {}",
        bases.len()
    );
    bases
}

pub(crate) fn exited(code: i32, stdout: &str, stderr: &str) -> QueryOutcome {
    QueryOutcome::Exited {
        code: Some(code),
        signal: None,
        stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
        stderr: CapturedText::from_bytes(stderr.as_bytes(), false),
    }
}

/// Rebuilds every record that depends on the pipe directory, so the snapshot stays consistent.
fn set_pipe_directory(facts: &mut HostFacts, directory: Option<OsText>) {
    facts.env.cuda_mps_pipe_directory = directory;
    let env = facts.env.clone();
    if let Some(pipe) = &mut facts.control_pipe {
        let path = env.control_pipe_path();
        pipe.directory = env.effective_pipe_directory();
        pipe.path_len = path.as_bytes().len();
        pipe.path = path;
    }
    if let Some(query) = &mut facts.daemon_query {
        query.env.insert(
            "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
            env.effective_pipe_directory(),
        );
    }
    if let Some(pid) = &mut facts.pid_file {
        pid.path = env.pid_file_path();
    }
}

fn daemon_outcome(facts: &mut HostFacts, outcome: QueryOutcome) {
    facts.daemon_query.as_mut().unwrap().outcome = outcome;
}

/// A pool of values for one fact, some healthy, some not.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        select(vec![
            "",
            "100.0\n",
            "100.0\n4428\n",
            "0\n",
            "Cannot find MPS control daemon process\n",
            "garbage"
        ])
        .prop_map(str::to_owned),
        ".{0,40}",
    ]
}

fn any_os_text() -> impl Strategy<Value = Option<OsText>> {
    prop_oneof![
        Just(None),
        select(vec![
            "",
            "0",
            "1",
            "0,1",
            "1,0",
            "-1",
            "all",
            "GPU-8932f937",
            "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1",
            "GPU-",
            "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
            "0,5,1",
            " 0"
        ])
        .prop_map(|s| Some(OsText::from(s))),
        proptest::collection::vec(any::<u8>(), 0..12).prop_map(|b| Some(OsText::from_bytes(b))),
    ]
}

fn any_outcome() -> impl Strategy<Value = QueryOutcome> {
    prop_oneof![
        (select(vec![0, 1, 9, 255]), any_text(), any_text())
            .prop_map(|(code, out, err)| exited(code, &out, &err)),
        (any_text(), any::<bool>(), any::<bool>()).prop_map(|(out, truncated, bad)| {
            let mut stdout = CapturedText::from_bytes(out.as_bytes(), truncated);
            stdout.non_utf8 |= bad;
            QueryOutcome::Exited {
                code: Some(0),
                signal: None,
                stdout,
                stderr: CapturedText::default(),
            }
        }),
        Just(QueryOutcome::Exited {
            code: None,
            signal: Some(9),
            stdout: CapturedText::default(),
            stderr: CapturedText::default()
        }),
        Just(QueryOutcome::TimedOut {
            stdout: CapturedText::default(),
            stderr: CapturedText::default()
        }),
        Just(QueryOutcome::SpawnFailed {
            error: "No such file or directory (os error 2)".to_owned()
        }),
    ]
}

fn any_kind() -> impl Strategy<Value = FileKind> {
    select(vec![
        FileKind::Socket,
        FileKind::Fifo,
        FileKind::Regular,
        FileKind::Directory,
        FileKind::Symlink,
        FileKind::CharDevice,
        FileKind::BlockDevice,
        FileKind::Missing,
        FileKind::Unknown,
    ])
}

/// Mostly plausible explicit requests (so many cases validate), sometimes anything.
fn any_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        3 => plausible_request(),
        1 => arbitrary_request(),
    ]
}

fn plausible_request() -> impl Strategy<Value = Request> {
    (
        select(vec!["mps", " MPS ", "Mps"]),
        select(vec!["cuda:0", "cuda", " CUDA:0 "]),
        select(vec!["cuda:0", "cuda", "cuda:00"]),
        select(vec!["mjwarp", " MJWarp "]),
        select(vec![(0, 1), (1, 2), (3, 4)]),
        any::<bool>(),
    )
        .prop_map(
            |(mode, learner, collector, backend, (rank, world_size), strict)| {
                let mut request = Request::new(Some(mode), learner, Some(collector), backend);
                request.rank = rank;
                request.world_size = world_size;
                request.require_verified = strict;
                request
            },
        )
}

fn arbitrary_request() -> impl Strategy<Value = Request> {
    let devices = select(vec![
        "cuda", "cuda:0", "cuda:1", "cuda:2", " CUDA:0 ", "cpu", "cuda:x", "cuda:-1", "cuda:+1",
    ]);
    (
        select(vec![
            None,
            Some("mps"),
            Some(" MPS "),
            Some(""),
            Some("mpss"),
        ]),
        devices.clone(),
        prop_oneof![Just(None), devices.prop_map(Some)],
        select(vec!["mjwarp", " MJWarp ", "mujoco"]),
        -1i64..3,
        -1i64..3,
        select(vec![vec!["mjwarp"], vec!["mjwarp", "genesis"], vec![]]),
    )
        .prop_map(
            |(mode, learner, collector, backend, rank, world_size, supported)| {
                let mut request = Request::new(mode, learner, collector, backend);
                request.rank = rank;
                request.world_size = world_size;
                request.supported_backends = supported.into_iter().map(str::to_owned).collect();
                request
            },
        )
}

/// Arbitrary snapshots: a healthy base with any subset of its facts replaced.
#[allow(
    clippy::too_many_lines,
    reason = "one table of every fact and its pool"
)]
fn any_facts() -> impl Strategy<Value = HostFacts> {
    (
        select(healthy_bases()),
        prop::option::weighted(0.15, select(vec!["linux", "macos", "windows", "Linux"])),
        prop::option::weighted(
            0.15,
            select(vec![SCHEMA, SCHEMA_V1, "mps-preflight/host-facts/v0", ""]),
        ),
        prop::option::weighted(0.15, any_os_text()),
        prop::option::weighted(
            0.15,
            prop_oneof![
                Just(None),
                select(vec!["PCI_BUS_ID", "FASTEST_FIRST", "pci_bus_id"])
                    .prop_map(|s| Some(OsText::from(s)))
            ],
        ),
        prop::option::weighted(0.15, any_os_text()),
        (
            prop::option::weighted(
                0.15,
                select(vec![TWO_H100, ONE_H100, "", "0, GPU-zz, x, y\n"]),
            ),
            prop::option::weighted(0.15, any_outcome()),
        ),
        (
            prop::option::weighted(0.15, (any_kind(), any_kind())),
            prop::option::weighted(
                0.15,
                (
                    prop::option::of(any::<bool>()),
                    prop::option::of(any::<bool>()),
                ),
            ),
        ),
        (
            prop::option::weighted(0.15, any_outcome()),
            prop::option::weighted(0.15, select(vec![H100_A, H100_B, "nonsense"])),
        ),
        (
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.05),
        ),
    )
        .prop_map(
            |(
                mut facts,
                os,
                schema,
                visible,
                order,
                pipe_dir,
                (smi, gpu_outcome),
                (kinds, access),
                (daemon, learner),
                (drop_gpu, drop_pipe, drop_daemon),
            )| {
                if let Some(os) = os {
                    os.clone_into(&mut facts.os);
                }
                if let Some(schema) = schema {
                    schema.clone_into(&mut facts.schema);
                }
                if let Some(visible) = visible {
                    facts.env.cuda_visible_devices = visible;
                }
                if let Some(order) = order {
                    facts.env.cuda_device_order = order;
                }
                if let Some(dir) = pipe_dir {
                    set_pipe_directory(&mut facts, dir);
                }
                if let Some(smi) = smi {
                    set_v1_table(&mut facts, exited(0, smi, ""));
                }
                if let Some(outcome) = gpu_outcome {
                    set_v1_table(&mut facts, outcome);
                }
                if let Some((lstat, stat)) = kinds {
                    let pipe = facts.control_pipe.as_mut().unwrap();
                    pipe.lstat.kind = lstat;
                    pipe.stat.kind = stat;
                }
                if let Some((traversable, read_write)) = access {
                    let pipe = facts.control_pipe.as_mut().unwrap();
                    pipe.access.directory_traversable = traversable;
                    pipe.access.read_write = read_write;
                }
                if let Some(outcome) = daemon {
                    daemon_outcome(&mut facts, outcome);
                }
                facts.learner_uuid = learner.map(str::to_owned);
                if drop_gpu {
                    facts.gpu_query = None;
                }
                if drop_pipe {
                    facts.control_pipe = None;
                }
                if drop_daemon {
                    facts.daemon_query = None;
                }
                facts
            },
        )
}

/// The "served" invariants of validated evidence: nothing known forbids sharing, and
/// `unverified: []` means every new fact was proven from the raw facts.
fn assert_served(request: &Request, facts: &HostFacts, evidence: &sharing_policy::Evidence) {
    assert!(
        !matches!(
            evidence.compute_mode.as_deref(),
            Some("Prohibited" | "Exclusive_Thread")
        ),
        "{:?}",
        evidence.compute_mode
    );
    if evidence
        .server_uids
        .iter()
        .any(|uid| Some(*uid) != evidence.caller_uid)
    {
        assert_eq!(evidence.daemon_multiuser, Some(true));
    }
    if request.require_verified {
        assert!(evidence.unverified.is_empty(), "{:?}", evidence.unverified);
    }
    if !evidence.unverified.is_empty() {
        return;
    }
    assert_ne!(facts.schema, SCHEMA_V1);
    if evidence.server_pid.is_some() {
        // Nothing unverified with a listed server: its state was read (a v3 settings session).
        assert_eq!(facts.schema, SCHEMA);
        assert!(matches!(
            evidence.server_status.as_deref(),
            Some("ACTIVE" | "INITIALIZING")
        ));
    }
    assert!(matches!(
        evidence.compute_mode.as_deref(),
        Some("Default" | "Exclusive_Process")
    ));
    let search = facts
        .daemon_process
        .as_ref()
        .expect("the daemon was looked for");
    let daemon = search
        .processes
        .iter()
        .find(|p| Some(p.pid) == evidence.daemon_pid)
        .expect("the daemon was identified");
    let environ = daemon.environ.as_ref().expect("its scope was read");
    assert_eq!(
        environ
            .get("CUDA_VISIBLE_DEVICES")
            .map(OsText::to_string_lossy),
        evidence.daemon_visible_devices
    );
    let caller = facts.caller.expect("the caller was recorded");
    assert_eq!(evidence.caller_uid, Some(caller.euid));
    let pipe = facts.env.effective_pipe_directory();
    let listed = listed_server_pids(facts.daemon_query.as_ref().unwrap(), &pipe);
    if evidence.daemon_multiuser != Some(true) {
        assert_eq!(evidence.server_uids.len(), listed.len());
        assert!(evidence.server_uids.iter().all(|uid| *uid == caller.euid));
    }
}

/// Every invariant a validated explicit request must satisfy, checked against the raw facts.
fn assert_invariants(request: &Request, facts: &HostFacts) {
    let Ok(evidence) = validate(request, facts) else {
        return;
    };
    if !evidence.validated {
        assert!(
            request.mode.is_none(),
            "only a null request yields unvalidated evidence"
        );
        assert_eq!(evidence.configured, None);
        return;
    }
    let mode = request.mode.as_deref().unwrap();
    assert!(
        mode.trim().eq_ignore_ascii_case("mps"),
        "explicit mode {mode:?}"
    );
    assert_eq!(evidence.configured.as_deref(), Some("mps"));
    assert_eq!(evidence.effective.as_deref(), Some("mps"));
    assert!(!evidence.ambient_server);
    assert!(sharing_policy::SCHEMAS_READ.contains(&facts.schema.as_str()));
    assert_ne!(
        evidence.server_status.as_deref(),
        Some("FAULT"),
        "a server in FAULT is never validated"
    );
    assert_served(request, facts, &evidence);
    let backend = request.backend.as_deref().map(|b| b.trim().to_lowercase());
    assert!(
        backend.as_ref().is_none_or(|backend| request
            .supported_backends
            .iter()
            .any(|b| b.trim().to_lowercase() == *backend)),
        "backend {backend:?}"
    );
    assert_eq!(facts.os, "linux");
    assert!(0 <= request.rank && request.rank < request.world_size);
    assert!(request.collector_device.is_some());
    let (learner, collector) = (
        evidence.learner_gpu_uuid.as_deref(),
        evidence.collector_gpu_uuid.as_deref(),
    );
    assert!(
        learner.is_some() && learner == collector,
        "{learner:?} vs {collector:?}"
    );
    let pipe = facts
        .control_pipe
        .as_ref()
        .expect("a validated host has an observed control pipe");
    assert!(
        matches!(pipe.stat.kind, FileKind::Socket | FileKind::Fifo),
        "{:?}",
        pipe.stat.kind
    );
    assert!(matches!(
        evidence.control_pipe_kind.as_deref(),
        Some("unix_socket" | "fifo")
    ));
    assert!(pipe.path.as_bytes().len() <= 107);
    assert_eq!(pipe.access.directory_traversable, Some(true));
    assert_eq!(pipe.access.read_write, Some(true));
    let daemon = facts
        .daemon_query
        .as_ref()
        .expect("a validated host has a daemon query");
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        stderr,
        ..
    } = &daemon.outcome
    else {
        panic!("validated without a daemon answer: {:?}", daemon.outcome);
    };
    assert!(
        stderr.text.is_empty()
            && !stdout.truncated
            && !stdout.non_utf8
            && stdout.text.ends_with('\n')
    );
    assert!(daemon.args.is_empty());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn validated_implies_every_invariant(request in any_request(), facts in any_facts()) {
        assert_invariants(&request, &facts);
    }

    #[test]
    fn deterministic_and_explain_agrees_with_validate(request in any_request(), facts in any_facts()) {
        let first = validate(&request, &facts);
        prop_assert_eq!(&first, &validate(&request, &facts));
        let findings = explain(&request, &facts);
        prop_assert_eq!(&findings, &explain(&request, &facts));
        prop_assert_eq!(findings.is_empty(), first.is_ok());
        if let Err(rejection) = &first {
            prop_assert_eq!(findings[0].code, rejection.code());
            prop_assert_eq!(&findings[0].message, rejection.message());
            prop_assert!(findings.iter().all(|f| !f.found.is_empty() && !f.fix.is_empty() && f.why == f.code.why()));
        }
    }

    /// Issue 25, "decide once": the one-walk verdict every renderer prints is exactly what the
    /// separate calls return, so no rendering can disagree with the evidence.
    #[test]
    fn judge_agrees_with_validate_explain_and_warnings(request in any_request(), facts in any_facts()) {
        let verdict = sharing_policy::judge(&request, &facts);
        prop_assert_eq!(&verdict.result, &validate(&request, &facts));
        prop_assert_eq!(&verdict.findings, &explain(&request, &facts));
        prop_assert_eq!(&verdict.warnings, &sharing_policy::warnings(&request, &facts));
        let null = Request { mode: None, ..request.clone() };
        prop_assert_eq!(Ok(verdict.ambient.clone()), validate(&null, &facts));
        prop_assert_eq!(
            verdict.validated(),
            validate(&request, &facts).is_ok_and(|evidence| evidence.validated)
        );
    }

    #[test]
    fn a_null_request_never_rejects(request in any_request(), facts in any_facts()) {
        let request = Request { mode: None, ..request };
        let evidence = validate(&request, &facts).unwrap();
        prop_assert!(!evidence.validated);
        prop_assert!(explain(&request, &facts).is_empty());
        if evidence.ambient_server {
            let daemon = facts.daemon_query.as_ref().unwrap();
            let answered = matches!(&daemon.outcome, QueryOutcome::Exited { code: Some(0), stderr, .. } if stderr.text.is_empty());
            prop_assert!(answered, "ambient_server without an answer: {:?}", daemon.outcome);
        }
    }

    #[test]
    fn a_cpu_learner_without_collector_looks_at_nothing(facts in any_facts()) {
        let evidence = validate(&Request::new(None, "cpu", None, "mjwarp"), &facts).unwrap();
        prop_assert_eq!(evidence.pipe_directory, None);
        prop_assert_eq!(evidence.control_pipe, None);
        prop_assert_eq!(evidence.learner_gpu_uuid, None);
        prop_assert_eq!(evidence.server_pid, None);
        prop_assert_eq!(evidence.daemon_pid, None);
        prop_assert!(!evidence.ambient_server);
    }

    /// `observes_host` is the policy's own rule: when it is false, a snapshot that observed
    /// nothing but the environment (what `probe` captures then) gives the same answer.
    #[test]
    fn a_request_that_observes_nothing_depends_only_on_the_environment(
        request in arbitrary_request().prop_map(|request| Request { mode: None, ..request }),
        facts in any_facts(),
    ) {
        if !observes_host(&request) {
            let mut bare = HostFacts::unobserved(&facts.os, facts.env.clone());
            bare.schema.clone_from(&facts.schema);
            bare.learner_uuid.clone_from(&facts.learner_uuid);
            prop_assert_eq!(validate(&request, &facts), validate(&request, &bare));
            prop_assert_eq!(explain(&request, &facts), explain(&request, &bare));
        }
    }

    #[test]
    fn breaking_one_fact_yields_exactly_its_rejection(
        base in select(healthy_bases()),
        breaker in select(breakers()),
        salt in 0usize..1000,
    ) {
        let mut request = mps("cuda:0", Some("cuda:0"));
        let mut facts = base;
        (breaker.apply)(&mut request, &mut facts, salt);
        let got = validate(&request, &facts).err().map(|r| r.code());
        prop_assert_eq!(got, Some(breaker.code), "breaker {}", breaker.name);
    }
}

/// One way of breaking one prerequisite of a valid (request, snapshot) pair.
#[derive(Clone)]
pub(crate) struct Breaker {
    pub(crate) name: &'static str,
    pub(crate) code: Code,
    pub(crate) apply: fn(&mut Request, &mut HostFacts, usize),
}

impl std::fmt::Debug for Breaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

pub(crate) fn pick<T: Copy>(options: &[T], salt: usize) -> T {
    options[salt % options.len()]
}

/// Every single-fact breaker, each with the code it must produce on any healthy base.
#[allow(clippy::too_many_lines)]
pub(crate) fn breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "mode",
            code: Code::UnsupportedMode,
            apply: |r, _, s| {
                r.mode = Some(pick(&["", "MPS2", "none", "null", "cuda"], s).to_owned());
            },
        },
        Breaker {
            name: "schema",
            code: Code::UnsupportedSnapshotSchema,
            apply: |_, f, s| {
                pick(
                    &[
                        "",
                        "mps-preflight/host-facts/v0",
                        "mps-preflight/host-facts/v4",
                    ],
                    s,
                )
                .clone_into(&mut f.schema);
            },
        },
        Breaker {
            name: "backend",
            code: Code::UnsupportedBackend,
            apply: |r, _, s| r.backend = Some(pick(&["mujoco", "", "mjx", "warp"], s).to_string()),
        },
        Breaker {
            name: "no supported backend",
            code: Code::UnsupportedBackend,
            apply: |r, _, _| r.supported_backends.clear(),
        },
        Breaker {
            name: "os",
            code: Code::UnsupportedOs,
            apply: |_, f, s| {
                pick(&["macos", "windows", "freebsd", "Linux", ""], s).clone_into(&mut f.os);
            },
        },
        Breaker {
            name: "rank",
            code: Code::InvalidRank,
            apply: |r, _, s| {
                let (rank, ws) = pick(&[(1, 1), (-1, 1), (0, 0), (2, 2), (0, -3)], s);
                r.rank = rank;
                r.world_size = ws;
            },
        },
        Breaker {
            name: "no collector",
            code: Code::MissingCollector,
            apply: |r, _, _| r.collector_device = None,
        },
        Breaker {
            name: "learner not cuda",
            code: Code::NotCudaDevice,
            apply: |r, _, s| {
                pick(&["cpu", "mps", "gpu:0", "cuda:", ""], s).clone_into(&mut r.learner_device);
            },
        },
        Breaker {
            name: "collector not cuda",
            code: Code::NotCudaDevice,
            apply: |r, _, s| {
                r.collector_device = Some(pick(&["cpu", "meta", "cuda:"], s).to_owned());
            },
        },
        Breaker {
            name: "learner bad index",
            code: Code::InvalidCudaDevice,
            apply: |r, _, s| {
                pick(
                    &[
                        "cuda:x", "cuda:-1", "cuda:+0", "cuda: 0", "cuda:0_0", "cuda:٠",
                    ],
                    s,
                )
                .clone_into(&mut r.learner_device);
            },
        },
        Breaker {
            name: "nvidia-smi failed",
            code: Code::CudaUnavailable,
            apply: |_, f, s| {
                let outcome = match s % 4 {
                    0 => exited(
                        9,
                        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
                        "",
                    ),
                    1 => QueryOutcome::SpawnFailed {
                        error: "No such file or directory (os error 2)".to_owned(),
                    },
                    2 => QueryOutcome::TimedOut {
                        stdout: CapturedText::default(),
                        stderr: CapturedText::default(),
                    },
                    _ => exited(0, "No devices were found\n", ""),
                };
                set_v1_table(f, outcome);
            },
        },
        Breaker {
            name: "nvidia-smi not recorded",
            code: Code::CudaUnavailable,
            apply: |_, f, _| f.gpu_query = None,
        },
        Breaker {
            name: "nvidia-smi output cut short",
            code: Code::CudaUnavailable,
            apply: |_, f, _| {
                if let QueryOutcome::Exited { stdout, .. } =
                    &mut f.gpu_query.as_mut().unwrap().outcome
                {
                    stdout.truncated = true;
                }
            },
        },
        Breaker {
            name: "mask hides every GPU",
            code: Code::CudaUnavailable,
            apply: |_, f, s| {
                f.env.cuda_visible_devices = Some(OsText::from(pick(
                    &["", " ", "-1", "all", "NoDevFiles", "0,0", "GPU-ffffffff"],
                    s,
                )));
            },
        },
        Breaker {
            name: "learner index out of range",
            code: Code::DeviceOutOfRange,
            apply: |r, _, s| {
                pick(&["cuda:7", "cuda:64", "cuda:4294967295"], s)
                    .clone_into(&mut r.learner_device);
            },
        },
        Breaker {
            name: "MIG mask",
            code: Code::MigVisibilityUnsupported,
            apply: |_, f, s| {
                f.env.cuda_visible_devices = Some(OsText::from(pick(
                    &[
                        "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
                        "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0",
                    ],
                    s,
                )));
            },
        },
        Breaker {
            name: "mixed models, index order",
            code: Code::AmbiguousDeviceOrder,
            apply: |_, f, s| {
                f.env
                    .cuda_visible_devices
                    .clone_from(&[None, Some(OsText::from("0")), Some(OsText::from("1,0"))][s % 3]);
                f.env.cuda_device_order.clone_from(
                    &[
                        None,
                        Some(OsText::from("FASTEST_FIRST")),
                        Some(OsText::from("pci_bus_id")),
                    ][s % 3],
                );
                set_v1_table(f, exited(
                    0,
                    "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA A100-SXM4-80GB, 00000000:2A:00.0\n",
                    "",
                ));
            },
        },
        Breaker {
            name: "bad learner UUID",
            code: Code::LearnerUuidUnresolved,
            apply: |_, f, s| {
                f.learner_uuid = Some(
                    pick(
                        &[
                            "",
                            "GPU-",
                            "nonsense",
                            "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
                            "GPU-8932f937",
                        ],
                        s,
                    )
                    .to_owned(),
                );
            },
        },
        Breaker {
            name: "other learner UUID",
            code: Code::DifferentGpus,
            apply: |_, f, _| {
                f.learner_uuid = Some("GPU-ffffffff-0000-0000-0000-000000000000".to_owned());
            },
        },
        Breaker {
            name: "collector on another GPU",
            code: Code::DifferentGpus,
            apply: |r, f, _| {
                f.env.cuda_visible_devices =
                    Some(OsText::from(format!("{H100_A},{H100_B}").as_str()));
                set_v1_table(f, exited(0, TWO_H100, ""));
                r.collector_device = Some("cuda:1".to_owned());
            },
        },
        Breaker {
            name: "collector out of range",
            code: Code::CollectorUuidUnresolved,
            apply: |r, _, s| r.collector_device = Some(pick(&["cuda:5", "cuda:99"], s).to_owned()),
        },
        Breaker {
            name: "collector without a table",
            code: Code::CollectorUuidUnresolved,
            apply: |_, f, _| {
                f.learner_uuid = Some(H100_A.to_owned());
                f.gpu_query = None;
            },
        },
        Breaker {
            name: "gpu query is another query",
            code: Code::InconsistentSnapshot,
            apply: |_, f, _| {
                f.gpu_query.as_mut().unwrap().args = vec![
                    "--query-gpu=index,uuid,name".to_owned(),
                    "--format=csv,noheader".to_owned(),
                ];
            },
        },
        Breaker {
            name: "pipe record for another path",
            code: Code::InconsistentSnapshot,
            apply: |_, f, _| {
                f.control_pipe.as_mut().unwrap().path = OsText::from("/elsewhere/control");
            },
        },
        Breaker {
            name: "non-UTF-8 pipe directory",
            code: Code::NonUtf8PipeDirectory,
            apply: |_, f, _| {
                set_pipe_directory(f, Some(OsText::from_bytes(b"/tmp/mps-\xff".to_vec())));
            },
        },
        Breaker {
            name: "pipe path too long",
            code: Code::ControlPathTooLong,
            apply: |_, f, s| {
                set_pipe_directory(
                    f,
                    Some(OsText::from(
                        format!("/scratch/{}", "d".repeat(91 + s % 40)).as_str(),
                    )),
                );
            },
        },
        Breaker {
            name: "pipe not observed",
            code: Code::ControlPipeMissing,
            apply: |_, f, _| f.control_pipe = None,
        },
        Breaker {
            name: "pipe missing",
            code: Code::ControlPipeMissing,
            apply: |_, f, s| {
                let pipe = f.control_pipe.as_mut().unwrap();
                pipe.lstat.kind = pick(&[FileKind::Missing, FileKind::Symlink], s);
                pipe.stat.kind = FileKind::Missing;
            },
        },
        Breaker {
            name: "pipe wrong kind",
            code: Code::NotAControlPipe,
            apply: |_, f, s| {
                let kind = pick(
                    &[
                        FileKind::Regular,
                        FileKind::Directory,
                        FileKind::CharDevice,
                        FileKind::BlockDevice,
                    ],
                    s,
                );
                let pipe = f.control_pipe.as_mut().unwrap();
                pipe.lstat.kind = kind;
                pipe.stat.kind = kind;
            },
        },
        Breaker {
            name: "pipe cannot be examined",
            code: Code::ControlPipeInaccessible,
            apply: |_, f, s| {
                let pipe = f.control_pipe.as_mut().unwrap();
                if s % 2 == 0 {
                    pipe.lstat.kind = FileKind::Unknown;
                } else {
                    pipe.stat.kind = FileKind::Unknown;
                }
            },
        },
        Breaker {
            name: "pipe access",
            code: Code::ControlPipeInaccessible,
            apply: |_, f, s| {
                let access = &mut f.control_pipe.as_mut().unwrap().access;
                let (t, rw) = pick(
                    &[
                        (Some(false), Some(true)),
                        (Some(true), Some(false)),
                        (None, Some(true)),
                        (Some(true), None),
                        (None, None),
                    ],
                    s,
                );
                access.directory_traversable = t;
                access.read_write = rw;
            },
        },
        Breaker {
            name: "daemon absent",
            code: Code::DaemonUnreachable,
            apply: |_, f, s| {
                let outcome = match s % 4 {
                    0 => exited(1, "", "Cannot find MPS control daemon process\n"),
                    1 => exited(
                        1,
                        "",
                        "Cannot authenticate or connect to MPS control daemon process\n",
                    ),
                    2 => QueryOutcome::SpawnFailed {
                        error: "No such file or directory (os error 2)".to_owned(),
                    },
                    _ => QueryOutcome::Exited {
                        code: None,
                        signal: Some(9),
                        stdout: CapturedText::default(),
                        stderr: CapturedText::default(),
                    },
                };
                daemon_outcome(f, outcome);
            },
        },
        Breaker {
            name: "daemon not queried",
            code: Code::DaemonUnreachable,
            apply: |_, f, _| f.daemon_query = None,
        },
        Breaker {
            name: "daemon frozen",
            code: Code::DaemonTimedOut,
            apply: |_, f, _| {
                daemon_outcome(
                    f,
                    QueryOutcome::TimedOut {
                        stdout: CapturedText::default(),
                        stderr: CapturedText::default(),
                    },
                );
            },
        },
        Breaker {
            name: "daemon answer odd",
            code: Code::DaemonAnswerUnrecognized,
            apply: |_, f, s| {
                let outcome = match s % 6 {
                    0 => exited(0, "", ""),
                    1 => exited(
                        0,
                        "Unknown command \"get_default_active_thread_percentage\"\n",
                        "",
                    ),
                    2 => exited(0, "100.0\n", "warning\n"),
                    3 => exited(0, "100.0\nServer not found\n", ""),
                    4 => QueryOutcome::Exited {
                        code: Some(0),
                        signal: None,
                        stdout: CapturedText::from_bytes(b"100.0\n", true),
                        stderr: CapturedText::default(),
                    },
                    _ => QueryOutcome::Exited {
                        code: Some(0),
                        signal: None,
                        stdout: CapturedText::from_bytes(b"100.0\n\xff\n", false),
                        stderr: CapturedText::default(),
                    },
                };
                daemon_outcome(f, outcome);
            },
        },
        Breaker {
            name: "daemon query with argv",
            code: Code::InconsistentSnapshot,
            apply: |_, f, _| {
                f.daemon_query.as_mut().unwrap().args = vec!["get_server_list".to_owned()];
            },
        },
        Breaker {
            name: "daemon query for another directory",
            code: Code::InconsistentSnapshot,
            apply: |_, f, _| {
                f.daemon_query.as_mut().unwrap().env.insert(
                    "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
                    OsText::from("/elsewhere"),
                );
            },
        },
    ]
    .into_iter()
    .chain(served_breakers())
    .chain(settings_breakers())
    .collect()
}

/// The other half of `observes_host`: every request it says looks at the host does, so `probe`
/// skipping observation for it would change the answer.
#[test]
fn a_request_that_observes_the_host_sees_more_than_the_environment() {
    let facts = healthy_bases().remove(0);
    let mut bare = HostFacts::unobserved(&facts.os, facts.env.clone());
    bare.learner_uuid.clone_from(&facts.learner_uuid);
    for request in [
        Request::new(None, "cuda:0", None, "mjwarp"),
        Request::new(None, "cpu", Some("cuda"), "mjwarp"),
        Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp"),
    ] {
        assert!(observes_host(&request), "{request:?}");
        assert_ne!(
            validate(&request, &facts),
            validate(&request, &bare),
            "{request:?}"
        );
    }
}

#[test]
fn every_code_has_a_breaker() {
    let covered: Vec<Code> = breakers().iter().map(|b| b.code).collect();
    for code in Code::ALL {
        assert!(
            covered.contains(&code),
            "no single-fact breaker produces {code}"
        );
    }
}

#[test]
fn every_breaker_on_every_base_at_every_salt() {
    // The exhaustive version of `breaking_one_fact_yields_exactly_its_rejection` for small salts.
    for base in healthy_bases() {
        for breaker in breakers() {
            for salt in 0..8 {
                let mut request = mps("cuda:0", Some("cuda:0"));
                let mut facts = base.clone();
                (breaker.apply)(&mut request, &mut facts, salt);
                let got = validate(&request, &facts).err().map(|r| r.code());
                assert_eq!(
                    got,
                    Some(breaker.code),
                    "breaker {:?} salt {salt} on {:?}",
                    breaker,
                    base.env
                );
            }
        }
    }
}

#[test]
fn the_generators_reach_validated_hosts_often() {
    // The invariant property means something only if many generated cases validate.
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = (any_request(), any_facts());
    let validated = (0..400)
        .filter(|_| {
            let (request, facts) = strategy.new_tree(&mut runner).unwrap().current();
            validate(&request, &facts).is_ok_and(|e| e.validated)
        })
        .count();
    assert!(
        validated >= 40,
        "only {validated} of 400 generated cases validate"
    );
}
