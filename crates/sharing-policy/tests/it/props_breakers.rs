//! The single-fact breakers of the fail-closed properties (split out of props.rs by
//! responsibility): each breaks one prerequisite of a valid (request, snapshot) pair.

use sharing_policy::{CapturedText, Code, FileKind, HostFacts, OsText, QueryOutcome, Request};

use crate::hosts::{H100_A, H100_B, TWO_H100};
use crate::props_served::{
    health_breakers, identity_breakers, served_breakers, set_v1_table, settings_breakers,
};

#[allow(clippy::wildcard_imports)]
use crate::props::*;

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
                        "mps-preflight/host-facts/v5",
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
                    0 => QueryOutcome::exited(
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
                    _ => QueryOutcome::exited(0, "No devices were found\n", ""),
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
                set_v1_table(f, QueryOutcome::exited(
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
                set_v1_table(f, QueryOutcome::exited(0, TWO_H100, ""));
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
                    0 => QueryOutcome::exited(1, "", "Cannot find MPS control daemon process\n"),
                    1 => QueryOutcome::exited(
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
                    0 => QueryOutcome::exited(0, "", ""),
                    1 => QueryOutcome::exited(
                        0,
                        "Unknown command \"get_default_active_thread_percentage\"\n",
                        "",
                    ),
                    2 => QueryOutcome::exited(0, "100.0\n", "warning\n"),
                    3 => QueryOutcome::exited(0, "100.0\nServer not found\n", ""),
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
    .chain(identity_breakers())
    .chain(served_breakers())
    .chain(health_breakers())
    .chain(settings_breakers())
    .chain(crate::daemon_log::log_breakers())
    .chain(crate::props_clients::client_breakers())
    .chain(crate::props_shm::shm_breakers())
    .chain(crate::props_apps::apps_breakers())
    .chain(crate::props_client_limit::client_limit_breakers())
    .chain(crate::props_reach::reach_breakers())
    .collect()
}
