//! The generators of the fail-closed properties (split out of props.rs by responsibility):
//! arbitrary snapshots built by mutating healthy fixtures, and requests.

use proptest::prelude::*;
use proptest::sample::select;
use sharing_policy::{
    CapturedText, FileKind, HostFacts, OsText, QueryOutcome, Request, SCHEMA, SCHEMA_V1,
};

use crate::hosts::{H100_A, H100_B, ONE_H100, TWO_H100};
use crate::props_served::set_v1_table;

#[allow(clippy::wildcard_imports)]
use crate::props::*;

/// A pool of values for one fact, some healthy, some not.
pub(crate) fn any_text() -> impl Strategy<Value = String> {
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

pub(crate) fn any_os_text() -> impl Strategy<Value = Option<OsText>> {
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

pub(crate) fn any_outcome() -> impl Strategy<Value = QueryOutcome> {
    prop_oneof![
        (select(vec![0, 1, 9, 255]), any_text(), any_text())
            .prop_map(|(code, out, err)| QueryOutcome::exited(code, &out, &err)),
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

pub(crate) fn any_kind() -> impl Strategy<Value = FileKind> {
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
pub(crate) fn any_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        3 => plausible_request(),
        1 => arbitrary_request(),
    ]
}

pub(crate) fn plausible_request() -> impl Strategy<Value = Request> {
    (
        select(vec!["mps", " MPS ", "Mps"]),
        select(vec!["cuda:0", "cuda", " CUDA:0 "]),
        select(vec!["cuda:0", "cuda", "cuda:00"]),
        select(vec!["mjwarp", " MJWarp "]),
        select(vec![(0, 1), (1, 2), (3, 4)]),
        any::<bool>(),
        // Judged for the probing user, or for another (`--as-user`), whose servers are its own.
        select(vec![None, None, Some(0), Some(1000), Some(1001)]),
    )
        .prop_map(
            |(mode, learner, collector, backend, (rank, world_size), strict, as_user)| {
                let mut request = Request::new(Some(mode), learner, Some(collector), backend);
                request.rank = rank;
                request.world_size = world_size;
                request.require_verified = strict;
                request.as_user = as_user;
                request
            },
        )
}

pub(crate) fn arbitrary_request() -> impl Strategy<Value = Request> {
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
pub(crate) fn any_facts() -> impl Strategy<Value = HostFacts> {
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
                    set_v1_table(&mut facts, QueryOutcome::exited(0, smi, ""));
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
