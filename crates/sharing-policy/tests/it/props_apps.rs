//! The compute processes holding a GPU in `Exclusive_Process` with no server yet,
//! the per-device client limit, and a v4 snapshot that lacks a v4 fact. Each breaker starts
//! from a served daemon ([`make_served`]).

use sharing_policy::{
    COMPUTE_APPS_QUERY_ARGS, CapturedText, Code, HostFacts, QueryOutcome, QueryRecord, Request,
    SCHEMA_V3, compute_apps_wanted, validate, warnings,
};

use crate::props_breakers::{Breaker, pick};
use crate::props_client_limit::full_server;
use crate::props_served::{add_server, make_served};
use crate::support::mps;

/// The compute-apps query as the probe records it: `code`, and `stdout`.
pub(crate) fn apps_query(code: i32, stdout: &str) -> QueryRecord {
    QueryRecord {
        program: "nvidia-smi".to_owned(),
        args: COMPUTE_APPS_QUERY_ARGS.map(str::to_owned).to_vec(),
        stdin: String::new(),
        env: std::collections::BTreeMap::new(),
        env_removed: vec![],
        timeout_ms: 5000,
        elapsed_ms: 7,
        outcome: QueryOutcome::Exited {
            code: Some(code),
            signal: None,
            stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
            stderr: CapturedText::default(),
        },
        earlier_attempts: vec![],
    }
}

pub(crate) fn stdout_of(query: &mut QueryRecord) -> &mut CapturedText {
    match &mut query.outcome {
        QueryOutcome::Exited { stdout, .. } => stdout,
        other => panic!("not an answer: {other:?}"),
    }
}

/// Every GPU of the served host in `Exclusive_Process`, and no server listed: where the
/// compute-apps query is needed. `apps` is its answer (`None`: not recorded).
pub(crate) fn exclusive_idle(f: &mut HostFacts, apps: Option<QueryRecord>) {
    make_served(f);
    let gpu = stdout_of(f.gpu_query.as_mut().unwrap());
    gpu.text = gpu.text.replace("Default,", "Exclusive_Process,");
    let daemon = stdout_of(f.daemon_query.as_mut().unwrap());
    daemon.text = daemon.text.lines().next().unwrap_or_default().to_owned() + "\n";
    f.server_processes = Some(vec![]);
    f.compute_apps_query = apps;
}

/// A `gpu_uuid, pid, process_name` row for every GPU of the host's table.
pub(crate) fn rows_for_every_gpu(f: &HostFacts, pid: u32, name: &str) -> String {
    let QueryOutcome::Exited { stdout, .. } = &f.gpu_query.as_ref().unwrap().outcome else {
        unreachable!()
    };
    stdout
        .text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|token| token.starts_with("GPU-"))
        .map(|uuid| [uuid, ", ", &pid.to_string(), ", ", name, "\n"].concat())
        .collect()
}

pub(crate) fn apps_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "a compute process holds the GPU in Exclusive_Process with no server",
            code: Code::GpuHeldByComputeProcess,
            apply: |_, f, s| {
                exclusive_idle(f, None);
                let name = pick(&["python3", "/usr/bin/ollama", "a, b"], s);
                f.compute_apps_query = Some(apps_query(0, &rows_for_every_gpu(f, 4242, name)));
            },
        },
        Breaker {
            name: "the compute processes unreadable, verification required",
            code: Code::ComputeAppsUnverified,
            apply: |r, f, s| {
                r.require_verified = true;
                let apps = match s % 4 {
                    0 => None,
                    1 => Some(apps_query(9, "")),
                    2 => Some(apps_query(0, "No running processes found\n")),
                    _ => Some(apps_query(0, "[Insufficient Permissions]\n")),
                };
                exclusive_idle(f, apps);
            },
        },
    ]
}

pub(crate) fn request() -> Request {
    mps("cuda:0", Some("cuda:0"))
}

pub(crate) fn base() -> HostFacts {
    crate::props::healthy_bases()
        .into_iter()
        .map(|mut f| {
            make_served(&mut f);
            f
        })
        .find(|f| validate(&request(), f).is_ok() && warnings(&request(), f).is_empty())
        .unwrap()
}

pub(crate) fn codes(request: &Request, f: &HostFacts) -> (Result<(), Code>, Vec<Code>) {
    let verdict = validate(request, f).map(|_| ()).map_err(|r| r.code());
    let mut codes: Vec<Code> = warnings(request, f).iter().map(|w| w.code).collect();
    codes.dedup();
    (verdict, codes)
}

#[test]
fn an_empty_answer_validates_and_a_held_gpu_is_rejected() {
    let mut f = base();
    exclusive_idle(&mut f, Some(apps_query(0, "")));
    assert!(compute_apps_wanted(&f));
    let evidence = validate(&request(), &f).unwrap();
    assert_eq!(evidence.gpu_compute_processes, Some(0));
    assert!(warnings(&request(), &f).is_empty());
    let rows = rows_for_every_gpu(&f, 4242, "python3");
    f.compute_apps_query = Some(apps_query(0, &rows));
    let rejection = validate(&request(), &f).unwrap_err();
    assert_eq!(rejection.code(), Code::GpuHeldByComputeProcess);
    assert!(
        rejection.message().contains("PID 4242 ('python3')"),
        "{}",
        rejection.message()
    );
}

#[test]
fn the_query_is_not_needed_in_default_mode_or_with_a_server() {
    let f = base();
    assert!(!compute_apps_wanted(&f), "Default mode");
    assert_eq!(
        validate(&request(), &f).unwrap().gpu_compute_processes,
        None
    );
    let mut with_server = base();
    exclusive_idle(&mut with_server, None);
    add_server(&mut with_server, Some(1000));
    assert!(!compute_apps_wanted(&with_server), "a server is listed");
    // Even a recorded answer naming the GPU is not judged once a server runs (the process
    // may be that server's client).
    let rows = rows_for_every_gpu(&with_server, 4242, "python3");
    with_server.compute_apps_query = Some(apps_query(0, &rows));
    let verdict = validate(&request(), &with_server).map_err(|r| r.code());
    assert!(verdict.is_ok(), "{verdict:?}");
    assert_eq!(
        validate(&request(), &with_server)
            .unwrap()
            .gpu_compute_processes,
        None
    );
    let mut idle = base();
    exclusive_idle(&mut idle, None);
    assert!(compute_apps_wanted(&idle));
}

#[test]
fn an_unread_answer_is_unverified_and_an_older_snapshot_is_judged_as_before() {
    let mut f = base();
    exclusive_idle(&mut f, None);
    assert_eq!(
        codes(&request(), &f),
        (Ok(()), vec![Code::ComputeAppsUnverified])
    );
    let mut v3 = f.clone();
    SCHEMA_V3.clone_into(&mut v3.schema);
    assert!(
        !codes(&request(), &v3)
            .1
            .contains(&Code::ComputeAppsUnverified)
    );
    f.compute_apps_query = Some(apps_query(6, ""));
    assert_eq!(
        codes(&request(), &f),
        (Ok(()), vec![Code::ComputeAppsUnverified])
    );
}

/// Takes a fact out of a served snapshot.
type DropFact = fn(&mut HostFacts);

/// A v4 snapshot lacking a v4 fact a check needs is unverified for that
/// check, never a silent pass; an older snapshot is judged as before.
#[test]
fn a_v4_snapshot_lacking_a_v4_fact_is_unverified_for_that_check() {
    let strict = Request {
        require_verified: true,
        ..request()
    };
    let cases: [(&str, DropFact, Code); 4] = [
        (
            "daemon_log",
            |f| f.daemon_log = None,
            Code::DaemonLogUnverified,
        ),
        ("shm", |f| f.shm = None, Code::ShmUnverified),
        (
            "compute_apps_query",
            |f| exclusive_idle(f, None),
            Code::ComputeAppsUnverified,
        ),
        (
            "listed_clients",
            |f| {
                full_server(f, 3);
                f.listed_clients = None;
            },
            Code::ServerClientsUnverified,
        ),
    ];
    for (field, drop, code) in cases {
        let mut f = base();
        drop(&mut f);
        assert_eq!(codes(&request(), &f), (Ok(()), vec![code]), "{field}");
        assert_eq!(validate(&strict, &f).unwrap_err().code(), code, "{field}");
    }
    // The health columns: a v4 GPU query without them and no recorded rejection.
    let mut f = base();
    let query = f.gpu_query.as_mut().unwrap();
    query.args = sharing_policy::BASE_GPU_QUERY_ARGS
        .map(str::to_owned)
        .to_vec();
    let stdout = stdout_of(query);
    stdout.text = stdout
        .text
        .lines()
        .map(|row| {
            let columns: Vec<&str> = row.split(',').collect();
            [&columns[..2], &columns[7..]].concat().join(",") + "\n"
        })
        .collect();
    assert_eq!(
        codes(&request(), &f),
        (Ok(()), vec![Code::GpuHealthUnverified])
    );
    // The same snapshots under v3, whose schema never recorded those facts (and cannot
    // carry the v4 ones), are judged as before: no new warning.
    let mut v3 = base();
    SCHEMA_V3.clone_into(&mut v3.schema);
    v3.daemon_log = None;
    v3.shm = None;
    assert_eq!(codes(&request(), &v3), (Ok(()), vec![]));
    // An older snapshot that carries a v4 field is refused, the new one included.
    for field in sharing_policy::V4_ONLY_FIELDS {
        for schema in [
            SCHEMA_V3,
            sharing_policy::SCHEMA_V2,
            sharing_policy::SCHEMA_V1,
        ] {
            assert!(
                sharing_policy::schema_field_error(schema, [field]).is_some(),
                "{schema} {field}"
            );
        }
    }
    assert!(sharing_policy::V4_ONLY_FIELDS.contains(&"compute_apps_query"));
    // gpu_query_rejected and capacity: absent in a v4 snapshot is what a host whose driver
    // knows the health columns, or with nothing to advise, records; nothing to verify.
    let mut f = base();
    f.gpu_query_rejected = None;
    f.capacity = None;
    assert_eq!(codes(&request(), &f), (Ok(()), vec![]));
}

/// A GPU UUID no base host has.
const ELSEWHERE: &str = "GPU-11111111-2222-3333-4444-555555555555, 12, other";

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Whatever the compute-apps answer holds, a process on the GPU is a rejection, and only
    /// an exit-0 answer of blank lines and other GPUs' rows passes; anything else is
    /// unverified (a rejection under `--require-verified`), never a pass.
    #[test]
    fn compute_apps_answers_never_turn_a_rejection_into_a_pass(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                proptest::strategy::Just(ELSEWHERE.to_owned()),
                "[ -~]{0,30}",
            ],
            0..4,
        ),
        held: bool,
        code in proptest::prop_oneof![proptest::strategy::Just(0), 1..10i32],
        require_verified: bool,
    ) {
        let mut f = base();
        exclusive_idle(&mut f, None);
        let mut stdout = lines.join("\n");
        if held {
            stdout = rows_for_every_gpu(&f, 4242, "python3") + &stdout;
        }
        f.compute_apps_query = Some(apps_query(code, &stdout));
        let request = Request { require_verified, ..request() };
        let clean = code == 0
            && lines.iter().all(|line| line.trim().is_empty() || line == ELSEWHERE);
        match validate(&request, &f) {
            Err(rejection) if held => {
                proptest::prop_assert_eq!(rejection.code(), Code::GpuHeldByComputeProcess);
            }
            Err(rejection) => {
                proptest::prop_assert!(!clean && require_verified);
                proptest::prop_assert_eq!(rejection.code(), Code::ComputeAppsUnverified);
            }
            Ok(evidence) => {
                proptest::prop_assert!(!held, "a held GPU passed");
                if clean {
                    proptest::prop_assert_eq!(evidence.gpu_compute_processes, Some(0));
                } else {
                    proptest::prop_assert!(!require_verified);
                    proptest::prop_assert!(evidence.unverified.contains(&Code::ComputeAppsUnverified));
                }
            }
        }
    }
}
