//! The synthetic host fixtures of `fixtures/hosts/`, built in code so they stay realistic and in
//! step with the schema. The committed JSON must equal what these builders produce; regenerate
//! with `UPDATE_FIXTURES=1 cargo test -p sharing-policy --test it hosts::`.
//!
//! Byte-exact daemon outputs are from docs/mps-daemon.md §2 (X1, X3, X13, X21); the server-list lines
//! are synthetic (no GPU was available to record a live server). nvidia-smi rows follow
//! `gpu_uuid::TABLE_QUERY_ARGS`.

use std::collections::BTreeMap;

use sharing_policy::{
    AccessFacts, BASE_GPU_QUERY_ARGS, CallerFacts, CapturedText, DAEMON_PROBE,
    DAEMON_QUERY_PROGRAM, DaemonSearch, DaemonSearchMethod, EnvFacts, FileFacts, FileKind,
    GPU_QUERY_PROGRAM, HostFacts, OsText, PidFileFacts, PipeFacts, ProcessFacts, QueryOutcome,
    QueryRecord, SCHEMA_V1, SCHEMA_V2, probe_stdin,
};

pub(crate) const H100_A: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
pub(crate) const H100_B: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";

/// Two H100s, nvidia-smi's rows (PCI order).
pub(crate) const TWO_H100: &str = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n\
                            1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\n";
/// One H100.
pub(crate) const ONE_H100: &str =
    "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n";
/// A desktop with two different models (koboldcpp#1023's host): CUDA's default fastest-first
/// order puts the 3090 first, nvidia-smi's PCI order the 1660.
pub(crate) const MIXED: &str = "0, GPU-0aa11ebd-627f-af3f-1a0d-4e1fd92fd7b0, NVIDIA GeForce GTX 1660 SUPER, 00000000:01:00.0\n\
                     1, GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293, NVIDIA GeForce RTX 3090, 00000000:08:00.0\n";
/// An A100 with MIG enabled next to one without (nvidia-smi --query-gpu lists whole GPUs only).
const MIG_HOST: &str = "0, GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77, NVIDIA A100-SXM4-40GB, 00000000:07:00.0\n\
                        1, GPU-0aa11ebd-627f-af3f-1a0d-4e1fd92fd7b0, NVIDIA A100-SXM4-40GB, 00000000:0F:00.0\n";

pub(crate) const ENOENT: &str = "No such file or directory (os error 2)";
pub(crate) const EACCES: &str = "Permission denied (os error 13)";
/// docs/mps-daemon.md §2 X1: no daemon, or unreachable for any reason.
const CANNOT_FIND: &str = "Cannot find MPS control daemon process\n";
/// docs/cuda-visibility.md §6: the driver-not-loaded message, exit 9.
const DRIVER_FAILURE: &str = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n";

pub(crate) fn text(s: &str) -> CapturedText {
    CapturedText::from_bytes(s.as_bytes(), false)
}

/// No CUDA variable set (pipe directory `/tmp/nvidia-mps`).
pub(crate) fn default_env() -> EnvFacts {
    env(None, None, None, None)
}

pub(crate) fn env(
    visible: Option<&str>,
    order: Option<&str>,
    pipe: Option<&str>,
    log: Option<&str>,
) -> EnvFacts {
    EnvFacts {
        cuda_visible_devices: visible.map(OsText::from),
        cuda_device_order: order.map(OsText::from),
        cuda_mps_pipe_directory: pipe.map(OsText::from),
        cuda_mps_log_directory: log.map(OsText::from),
    }
}

pub(crate) fn gpu_query(outcome: QueryOutcome) -> QueryRecord {
    QueryRecord {
        program: GPU_QUERY_PROGRAM.to_owned(),
        args: gpu_uuid::TABLE_QUERY_ARGS
            .iter()
            .map(|a| (*a).to_owned())
            .collect(),
        stdin: String::new(),
        env: BTreeMap::new(),
        env_removed: vec![],
        timeout_ms: 5000,
        elapsed_ms: 41,
        outcome,
        earlier_attempts: Vec::new(),
    }
}

pub(crate) fn daemon_query(env: &EnvFacts, outcome: QueryOutcome) -> QueryRecord {
    let elapsed_ms = if matches!(outcome, QueryOutcome::TimedOut { .. }) {
        5002
    } else {
        3
    };
    QueryRecord {
        program: DAEMON_QUERY_PROGRAM.to_owned(),
        args: vec![],
        stdin: probe_stdin(&DAEMON_PROBE),
        env: BTreeMap::from([(
            "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
            env.effective_pipe_directory(),
        )]),
        env_removed: vec!["CUDA_MPS_PROTOCOL_VERSION".to_owned()],
        timeout_ms: 5000,
        elapsed_ms,
        outcome,
        earlier_attempts: Vec::new(),
    }
}

fn file(kind: FileKind, mode: u32, uid: u32) -> FileFacts {
    FileFacts {
        kind,
        mode: Some(mode),
        uid: Some(uid),
        gid: Some(uid),
        error: None,
    }
}

fn failed(kind: FileKind, error: &str) -> FileFacts {
    FileFacts {
        kind,
        mode: None,
        uid: None,
        gid: None,
        error: Some(error.to_owned()),
    }
}

fn access(traversable: Option<bool>, read_write: Option<bool>, error: Option<&str>) -> AccessFacts {
    AccessFacts {
        uid: Some(1000),
        directory_traversable: traversable,
        read_write,
        error: error.map(str::to_owned),
    }
}

pub(crate) fn pipe(
    env: &EnvFacts,
    lstat: FileFacts,
    stat: FileFacts,
    access: AccessFacts,
) -> PipeFacts {
    let path = env.control_pipe_path();
    PipeFacts {
        directory: env.effective_pipe_directory(),
        path_len: path.as_bytes().len(),
        path,
        lstat,
        stat,
        access,
    }
}

/// The control socket as every observed driver creates it: a socket, mode 0666, here owned by
/// root, reachable by the probing user (uid 1000).
pub(crate) fn live_socket(env: &EnvFacts) -> PipeFacts {
    let socket = file(FileKind::Socket, 0o666, 0);
    pipe(
        env,
        socket.clone(),
        socket,
        access(Some(true), Some(true), None),
    )
}

/// A 550+ driver's pid file: the daemon PID, no trailing newline (docs/mps-daemon.md §2 X21).
pub(crate) fn pid_file(env: &EnvFacts, pid: &str, alive: bool) -> PidFileFacts {
    PidFileFacts {
        path: env.pid_file_path(),
        contents: Some(text(pid)),
        error: None,
        pid_alive: Some(alive),
        process_name: alive.then(|| "nvidia-cuda-mps".to_owned()),
    }
}

/// 470/535 drivers write no pid file.
pub(crate) fn no_pid_file(env: &EnvFacts, error: &str) -> PidFileFacts {
    PidFileFacts {
        path: env.pid_file_path(),
        contents: None,
        error: Some(error.to_owned()),
        pid_alive: None,
        process_name: None,
    }
}

/// A healthy host: the GPU table `smi`, a live socket, a daemon answering `answer`, a 550 pid file.
pub(crate) fn healthy(env: EnvFacts, smi: &str, answer: &str) -> HostFacts {
    HostFacts {
        schema: SCHEMA_V1.to_owned(),
        os: "linux".to_owned(),
        gpu_query: Some(gpu_query(QueryOutcome::exited(0, smi, ""))),
        control_pipe: Some(live_socket(&env)),
        daemon_query: Some(daemon_query(&env, QueryOutcome::exited(0, answer, ""))),
        pid_file: Some(pid_file(&env, "2718", true)),
        learner_uuid: None,
        cuda_device_uuids: None,
        gpu_models_query: None,
        gpu_query_rejected: None,
        caller: None,
        server_processes: None,
        daemon_process: None,
        host_name: None,
        settings_query: None,
        daemon_log: None,
        listed_clients: None,
        shm: None,
        capacity: None,
        compute_apps_query: None,
        pipe_access: None,
        env,
    }
}

/// The settings session the probe would ask on `facts`, each asked command answered
/// by `answer` (its lines, newline-terminated; `""` for none) between `100.0` liveness lines.
pub(crate) fn settings(
    facts: &HostFacts,
    answer: impl Fn(sharing_policy::ReadOnlyCommand) -> String,
) -> Option<QueryRecord> {
    use sharing_policy::ReadOnlyCommand;
    settings_with(facts, |command| match command {
        // A server with no client, applying the daemon's 100.0 default.
        ReadOnlyCommand::GetClientList(_) => String::new(),
        ReadOnlyCommand::GetActiveThreadPercentage(_) => "100.0\n".to_owned(),
        other => answer(other),
    })
}

/// [`settings`] where `answer` answers every asked command, the listed servers' clients and
/// active-thread percentages included.
pub(crate) fn settings_with(
    facts: &HostFacts,
    answer: impl Fn(sharing_policy::ReadOnlyCommand) -> String,
) -> Option<QueryRecord> {
    let session = sharing_policy::settings_commands(facts)?;
    let mut stdout = String::from("100.0\n");
    for command in session.iter().skip(1).step_by(2) {
        stdout.push_str(&answer(*command));
        stdout.push_str("100.0\n");
    }
    let mut record = daemon_query(&facts.env, QueryOutcome::exited(0, &stdout, ""));
    record.stdin = probe_stdin(&session);
    Some(record)
}

/// A v2 GPU query (the base query, as v2 and v3 snapshots record it): each row of `smi` with
/// its compute mode and driver version first.
pub(crate) fn gpu_query_v2(smi: &str, mode: &str) -> QueryRecord {
    let mut rows = String::new();
    for row in smi.lines() {
        rows.push_str(&[mode, ", 550.163.01, ", row.trim_start(), "\n"].concat());
    }
    let mut record = gpu_query(QueryOutcome::exited(0, &rows, ""));
    record.args = BASE_GPU_QUERY_ARGS
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    record
}

/// The healthy health columns: persistence on, no recovery action, nothing pending or failed.
pub(crate) const HEALTHY: &str = "Enabled, None, No, No, No";

/// A process as `/proc` shows it to root: `uid` in every `Uid:` field.
pub(crate) fn process(pid: i64, uid: u32, comm: &str) -> ProcessFacts {
    let mut process = ProcessFacts::new(pid);
    process.status_uid = Some(format!("{uid}\t{uid}\t{uid}\t{uid}"));
    process.comm = Some(comm.to_owned());
    process
}

/// The control daemon's process (PID 2718, root's) started with `args` and `environ`.
pub(crate) fn daemon_process(args: &[&str], environ: &[(&str, &str)]) -> ProcessFacts {
    let mut daemon = process(2718, 0, "nvidia-cuda-mps");
    daemon.cmdline = Some(
        std::iter::once("nvidia-cuda-mps-control")
            .chain(args.iter().copied())
            .map(OsText::from)
            .collect(),
    );
    daemon.environ = Some(
        environ
            .iter()
            .map(|(key, value)| ((*key).to_owned(), OsText::from(*value)))
            .collect(),
    );
    daemon
}

/// A search that found `processes` through the pid file (550+).
pub(crate) fn by_pid_file(processes: Vec<ProcessFacts>) -> DaemonSearch {
    DaemonSearch {
        proc_root: OsText::from("/proc"),
        method: DaemonSearchMethod::PidFile,
        scanned: 0,
        limit: 0,
        stopped: None,
        error: None,
        processes,
        lock: None,
    }
}

/// A v2 host as root's probe records it (uid 1000 asking): two H100s in `mode`, a 550 pid file
/// naming the daemon, the daemon answering `answer`, each listed server owned by `server_uid`,
/// the daemon pinned to `H100_A` unless `daemon` says otherwise.
pub(crate) fn served(answer: &str, server_uid: u32, mode: &str) -> HostFacts {
    let mut facts = healthy(env(None, None, None, None), TWO_H100, answer);
    SCHEMA_V2.clone_into(&mut facts.schema);
    facts.gpu_query = Some(gpu_query_v2(TWO_H100, mode));
    facts.caller = Some(CallerFacts {
        uid: 1000,
        euid: 1000,
        cap_eff: None,
    });
    facts.server_processes = Some(
        answer
            .lines()
            .skip(1)
            .filter_map(|line| line.parse().ok())
            .map(|pid| process(pid, server_uid, "nvidia-cuda-mps"))
            .collect(),
    );
    facts.daemon_process = Some(by_pid_file(vec![daemon_process(
        &["-d"],
        &[("CUDA_VISIBLE_DEVICES", H100_A)],
    )]));
    facts
}

/// A host whose daemon is gone: `control` is `pipe`, the query finds no daemon (X1).
fn no_daemon(env: EnvFacts, smi: &str, pipe: PipeFacts, pid: PidFileFacts) -> HostFacts {
    let mut facts = healthy(env, smi, "");
    facts.control_pipe = Some(pipe);
    facts.daemon_query = Some(daemon_query(
        &facts.env,
        QueryOutcome::exited(1, "", CANNOT_FIND),
    ));
    facts.pid_file = Some(pid);
    facts
}

pub(crate) fn missing_pipe(env: &EnvFacts, traversable: Option<bool>) -> PipeFacts {
    let error = traversable.is_none().then_some(ENOENT);
    pipe(
        env,
        failed(FileKind::Missing, ENOENT),
        failed(FileKind::Missing, ENOENT),
        access(traversable, None, error),
    )
}

/// Every synthetic fixture, by file name (without `.json`).
#[allow(clippy::too_many_lines)]
pub(crate) fn all() -> Vec<(&'static str, HostFacts)> {
    let default = env(None, None, None, None);
    let mut out = Vec::new();

    out.push((
        "healthy-socket-with-server",
        healthy(default.clone(), TWO_H100, "100.0\n4428\n"),
    ));

    let mut idle = healthy(
        env(
            None,
            None,
            Some("/run/nvidia-mps"),
            Some("/var/log/nvidia-mps"),
        ),
        ONE_H100,
        "100.0\n",
    );
    idle.pid_file = Some(no_pid_file(&idle.env, ENOENT)); // a 535 driver
    out.push(("healthy-idle-daemon", idle));

    let fifo = file(FileKind::Fifo, 0o644, 0);
    out.push((
        "control-fifo",
        no_daemon(
            default.clone(),
            ONE_H100,
            pipe(
                &default,
                fifo.clone(),
                fifo,
                access(Some(true), Some(true), None),
            ),
            no_pid_file(&default, ENOENT),
        ),
    ));

    out.push((
        "no-control-pipe",
        no_daemon(
            default.clone(),
            ONE_H100,
            missing_pipe(&default, None),
            no_pid_file(&default, ENOENT),
        ),
    ));

    out.push((
        "stale-socket-after-daemon-death",
        no_daemon(default.clone(), ONE_H100, live_socket(&default), {
            let mut stale = pid_file(&default, "2718", false);
            stale.process_name = None;
            stale
        }),
    ));

    let regular = file(FileKind::Regular, 0o644, 1000);
    out.push((
        "control-regular-file",
        no_daemon(
            default.clone(),
            ONE_H100,
            pipe(
                &default,
                regular.clone(),
                regular,
                access(Some(true), Some(true), None),
            ),
            no_pid_file(&default, ENOENT),
        ),
    ));

    let private = env(None, None, Some("/run/user/1001/nvidia-mps"), None);
    out.push((
        "control-no-access",
        no_daemon(
            private.clone(),
            ONE_H100,
            pipe(
                &private,
                failed(FileKind::Unknown, EACCES),
                failed(FileKind::Unknown, EACCES),
                access(Some(false), None, Some(EACCES)),
            ),
            no_pid_file(&private, EACCES),
        ),
    ));

    out.push((
        "numeric-mask",
        healthy(env(Some("1"), None, None, None), TWO_H100, "100.0\n4428\n"),
    ));
    out.push((
        "uuid-mask",
        healthy(
            env(Some(H100_B), None, None, None),
            TWO_H100,
            "100.0\n4428\n",
        ),
    ));
    out.push((
        "prefix-mask",
        healthy(
            env(Some("GPU-5a88edbe"), None, None, None),
            TWO_H100,
            "100.0\n4428\n",
        ),
    ));
    out.push((
        "mig-mask",
        healthy(
            env(
                Some("MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"),
                None,
                None,
                None,
            ),
            MIG_HOST,
            "100.0\n",
        ),
    ));
    out.push((
        "empty-mask",
        healthy(env(Some(""), None, None, None), TWO_H100, "100.0\n4428\n"),
    ));
    out.push((
        "mixed-models-without-pci-bus-id",
        healthy(default.clone(), MIXED, "100.0\n"),
    ));
    out.push((
        "mixed-models-with-pci-bus-id",
        healthy(env(None, Some("PCI_BUS_ID"), None, None), MIXED, "100.0\n"),
    ));

    let mut driver = healthy(default.clone(), ONE_H100, "100.0\n");
    driver.gpu_query = Some(gpu_query(QueryOutcome::exited(9, DRIVER_FAILURE, "")));
    out.push(("nvidia-smi-driver-failure", driver));

    let mut mac = HostFacts::unobserved("macos", default.clone());
    mac.gpu_query = Some(gpu_query(QueryOutcome::SpawnFailed {
        error: ENOENT.to_owned(),
    }));
    mac.control_pipe = Some(missing_pipe(&default, None));
    mac.daemon_query = Some(daemon_query(
        &default,
        QueryOutcome::SpawnFailed {
            error: ENOENT.to_owned(),
        },
    ));
    mac.pid_file = Some(no_pid_file(&default, ENOENT));
    SCHEMA_V2.clone_into(&mut mac.schema);
    out.push(("non-linux", mac));

    // Extra scenarios, one per remaining rejection family.
    let long = env(
        None,
        None,
        Some(
            "/scratch/slurm/job-48213377/array-task-0017/node-gpu-h100-0042/nvidia-cuda-mps-rank-0003/pipe-directory",
        ),
        None,
    );
    out.push((
        "control-path-too-long",
        no_daemon(
            long.clone(),
            ONE_H100,
            missing_pipe(&long, Some(true)),
            no_pid_file(&long, ENOENT),
        ),
    ));

    let mut frozen = healthy(default.clone(), ONE_H100, "");
    frozen.daemon_query = Some(daemon_query(
        &default,
        QueryOutcome::TimedOut {
            stdout: CapturedText::default(),
            stderr: CapturedText::default(),
        },
    ));
    out.push(("frozen-daemon", frozen));

    let mut uninstalled = no_daemon(
        default.clone(),
        ONE_H100,
        missing_pipe(&default, None),
        no_pid_file(&default, ENOENT),
    );
    uninstalled.daemon_query = Some(daemon_query(
        &default,
        QueryOutcome::SpawnFailed {
            error: ENOENT.to_owned(),
        },
    ));
    out.push(("mps-control-not-installed", uninstalled));

    let quoted = env(
        None,
        None,
        Some("/scratch/o'brien/run $1/mps"),
        Some("/scratch/o'brien/run $1/mps log"),
    );
    out.push((
        "no-control-pipe-quoted-directory",
        no_daemon(
            quoted.clone(),
            ONE_H100,
            missing_pipe(&quoted, Some(true)),
            no_pid_file(&quoted, ENOENT),
        ),
    ));

    let mut supplied = healthy(default.clone(), ONE_H100, "100.0\n");
    supplied.gpu_query = Some(gpu_query(QueryOutcome::SpawnFailed {
        error: ENOENT.to_owned(),
    }));
    supplied.learner_uuid = Some(H100_A.to_owned());
    out.push(("learner-uuid-supplied-nvidia-smi-missing", supplied));

    let mut old = healthy(default.clone(), ONE_H100, "100.0\n");
    "mps-preflight/host-facts/v0".clone_into(&mut old.schema);
    out.push(("old-snapshot-schema", old));

    let mut stale_pid = healthy(default, ONE_H100, "100.0\n");
    let mut dead = pid_file(&stale_pid.env, "1893", false);
    dead.process_name = None;
    stale_pid.pid_file = Some(dead);
    out.push(("healthy-daemon-stale-pid-file", stale_pid));

    out.extend(crate::hosts_served::fixtures());
    out.extend(crate::hosts_deployed::fixtures());
    out.extend(crate::settings::fixtures());
    out
}
