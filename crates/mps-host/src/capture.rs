//! The orchestration: which queries are run and which files are looked at, and how the results
//! are assembled into one [`HostFacts`] snapshot.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mps_protocol::{
    DAEMON_QUERY_PROGRAM, GPU_QUERY_PROGRAM, OsText, QueryRecord, ReadOnlyCommand, first_session,
    probe_stdin, retry::DAEMON_RETRY,
};
use sharing_policy::{
    BASE_GPU_QUERY_ARGS, COMPUTE_APPS_QUERY_ARGS, DaemonSearchMethod, EnvFacts, GPU_QUERY_ARGS,
    HostFacts,
};

use crate::fs::{observe_control_pipe, observe_pid_file};
use crate::lock::observe_daemon_lock;
use crate::procfs::{SERVER_CAP, find_daemon, observe_caller, observe_client, observe_process};
use crate::retried::run_retried;
use crate::runner::{DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ProcessRunner, Query, Runner};

/// The variable that names the pipe directory; set explicitly in the daemon query's environment.
pub const PIPE_DIRECTORY_VAR: &str = "CUDA_MPS_PIPE_DIRECTORY";

/// Removed from the daemon query's environment: it would switch the front-end to the MPS v3
/// argv protocol, in which the stdin commands mean nothing.
pub const PROTOCOL_VERSION_VAR: &str = "CUDA_MPS_PROTOCOL_VERSION";

/// What to observe, and how patiently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The deadline of each subprocess (default 5 s). The two queries run concurrently, so a
    /// capture takes about one deadline at worst.
    pub timeout: Duration,
    /// The learner's GPU UUID as its own CUDA runtime reported it, copied into the snapshot.
    pub learner_uuid: Option<String>,
    /// Whether the caller's request needs host facts at all: pass
    /// `sharing_policy::observes_host(&request)`. `false` (a null request with no CUDA device,
    /// which the policy answers from the environment alone) observes nothing: no file is looked
    /// at, no process runs; only the environment is recorded.
    pub observe_cuda: bool,
    /// Where [`capture`] looks for `nvidia-smi` and `nvidia-cuda-mps-control`, in `PATH` syntax.
    /// `None`: the inherited `PATH`.
    pub search_path: Option<OsString>,
    /// The cap on each of a query's standard output and standard error (default 1 MiB).
    pub output_cap: usize,
    /// The `/proc` directory read for the servers' owners and the daemon's process (default
    /// `/proc`; tests pass a fake tree).
    pub proc_root: PathBuf,
    /// The most `/proc` entries a daemon scan looks at (default [`DEFAULT_SCAN_LIMIT`]); the
    /// scan also stops at the probe's deadline (`timeout` after the capture began).
    pub scan_limit: u64,
    /// The user the request is judged for (`--as-user`), whose groups decide whether its MPS
    /// server can reach the pipe directory; `None`: the probing process's own.
    pub as_user: Option<u32>,
}

/// The default bound of a `/proc` scan: more entries than a Linux host has processes by
/// default (`pid_max` is 32768 on most hosts, 4194304 at most).
pub const DEFAULT_SCAN_LIMIT: u64 = 65_536;

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            learner_uuid: None,
            observe_cuda: true,
            search_path: None,
            output_cap: DEFAULT_OUTPUT_CAP,
            proc_root: PathBuf::from("/proc"),
            scan_limit: DEFAULT_SCAN_LIMIT,
            as_user: None,
        }
    }
}

/// Observes this host: reads the environment, then [`capture_with`] a [`ProcessRunner`] built
/// from `options`, and records the host name ([`read_host_name`]). Never fails; whatever could
/// not be observed is recorded as such.
pub fn capture(options: &ProbeOptions) -> HostFacts {
    let runner = ProcessRunner {
        stdout_cap: options.output_cap,
        stderr_cap: options.output_cap,
        search_path: options.search_path.clone(),
    };
    let mut facts = capture_with(read_env(), &runner, options);
    facts.host_name = Some(read_host_name());
    if let Some(capacity) = facts.capacity.as_mut() {
        capacity.device_max_connections =
            std::env::var_os(MAX_CONNECTIONS_VAR).map(|value| OsText::from_bytes(value.into_vec()));
    }
    facts
}

/// This host's name: `uname(2)`'s `nodename`, byte for byte (a system call, no file or
/// process; the kernel bounds it to 64 bytes). What Slurm calls the node is usually this name
/// or its first label (`hostname -s`).
pub fn read_host_name() -> OsText {
    OsText::from_bytes(rustix::system::uname().nodename().to_bytes().to_vec())
}

/// Observes the host as `env` describes it, running queries through `runner`: the GPU table
/// query and the daemon query concurrently, the control pipe and the pid file meanwhile; then
/// the processes of the servers the daemon listed, and the daemon's own process (through the
/// pid file, or a bounded `/proc` scan when the pid file does not identify it).
///
/// The daemon query runs even when nothing is at the control path: it runs concurrently with
/// the filesystem checks, and its record shows what a client would have met there.
pub fn capture_with(env: EnvFacts, runner: &dyn Runner, options: &ProbeOptions) -> HostFacts {
    let started = Instant::now();
    let mut facts = HostFacts::unobserved(std::env::consts::OS, env);
    facts.learner_uuid.clone_from(&options.learner_uuid);
    if !options.observe_cuda {
        return facts;
    }
    let directory = facts.env.effective_pipe_directory();
    let gpu = gpu_query(options.timeout);
    let daemon = daemon_query(&directory, &first_session(), options.timeout);
    let (root, deadline) = (&options.proc_root, started + options.timeout);
    let mut search = None;
    std::thread::scope(|scope| {
        let gpu = Concurrent::start(scope, "gpu-query", || run_gpu_query(runner, &gpu));
        let daemon = Concurrent::start(scope, "daemon-query", || {
            run_retried(runner, &daemon, &DAEMON_RETRY)
        });
        facts.control_pipe = Some(observe_control_pipe(&facts.env));
        // The daemon's process is looked for while the queries run, so a /proc scan costs
        // no extra time when the queries take longer than it.
        let early = observe_pid_file(&facts.env);
        let lock = observe_daemon_lock(root, &directory);
        search = Some((
            find_daemon(root, &early, lock, options.scan_limit, deadline),
            early,
        ));
        facts.daemon_query = daemon.join();
        // The pid file's liveness is read after the daemon query ended, so a daemon that died
        // while it was being asked is not recorded as alive.
        facts.pid_file = Some(observe_pid_file(&facts.env));
        if let Some((record, rejected)) = gpu.join() {
            facts.gpu_query = Some(record);
            facts.gpu_query_rejected = rejected;
        }
    });
    facts.caller = Some(observe_caller());
    let servers = facts.daemon_query.as_ref().map_or_else(Vec::new, |query| {
        sharing_policy::listed_server_pids(query, &directory)
    });
    facts.server_processes = Some(
        servers
            .into_iter()
            .take(SERVER_CAP)
            .map(|pid| observe_process(root, pid, false))
            .collect(),
    );
    if let Some(pid_file) = &facts.pid_file {
        // The early search stands when the lock proved the daemon, or when the pid file kept
        // its verdict meanwhile; otherwise (a daemon that started or stopped during the
        // query) search again, after the fact.
        let identified = sharing_policy::pid_file_daemon_pid;
        facts.daemon_process = match search {
            Some((search, _)) if search.method == DaemonSearchMethod::Lock => Some(search),
            Some((search, early)) if identified(&early) == identified(pid_file) => Some(search),
            _ => {
                let lock = observe_daemon_lock(root, &directory);
                Some(find_daemon(
                    root,
                    pid_file,
                    lock,
                    options.scan_limit,
                    deadline,
                ))
            }
        };
    }
    // The daemon's own log, read once its process is proven: a bounded read of two files.
    if facts.daemon_process.is_some() {
        facts.daemon_log = Some(crate::log::observe_daemon_log(&facts, &directory));
    }
    // The settings session, and on a GPU in Exclusive_Process with no server yet (a compute
    // process holding it keeps the server from starting) one more bounded nvidia-smi, only
    // where the policy says so (never in Default mode or with a server running). Both follow
    // the first round and each has its own deadline, so when both run they run side by side:
    // a real nvidia-smi's NVML start then costs no extra wall time.
    if sharing_policy::compute_apps_wanted(&facts) {
        let (settings, apps) = std::thread::scope(|scope| {
            let observed = &facts;
            let settings = Concurrent::start(scope, "settings-query", move || {
                settings_query(observed, runner, deadline)
            });
            let apps = compute_apps_query(runner, deadline);
            (settings.join().flatten(), apps)
        });
        facts.settings_query = settings;
        facts.compute_apps_query = Some(apps);
    } else {
        facts.settings_query = settings_query(&facts, runner, deadline);
    }
    // The clients the listed servers named (a client of a killed run that is dead or a zombie
    // leaves its server in an undefined state): /proc reads only, bounded by the policy's
    // cap; nothing when no server is listed.
    let clients = sharing_policy::listed_client_pids(&facts);
    if !clients.is_empty() {
        facts.listed_clients = Some(
            clients
                .into_iter()
                .take(sharing_policy::MAX_LISTED_CLIENTS)
                .map(|pid| observe_client(root, pid))
                .collect(),
        );
    }
    // The daemon's /dev/shm and limits only when its lock proves which process it is.
    let proven = sharing_policy::proven_daemon_pid(&facts);
    facts.shm = Some(crate::shm::observe_shm(root, proven));
    facts.capacity = Some(crate::shm::observe_capacity(root, proven, None));
    // What the judged user's server must reach: lstat of each directory on the way to the
    // pipe and log directories, the two files it opens, the user's groups.
    facts.pipe_access = Some(crate::reach::observe_pipe_access(
        &facts,
        &directory,
        options.as_user,
    ));
    facts
}

/// The caller's variable that sets how many work queues each CUDA context opens.
pub const MAX_CONNECTIONS_VAR: &str = "CUDA_DEVICE_MAX_CONNECTIONS";

/// A query on a thread of its own, or, when no thread can be had (a process limit,
/// `RLIMIT_NPROC`: `std::thread::scope`'s `spawn` would panic), run on the joining thread
/// instead. Run one after the other, the queries take longer, but each
/// still has its own deadline, so the probe stays bounded.
enum Concurrent<'scope, T, F> {
    Running(std::thread::ScopedJoinHandle<'scope, T>),
    Deferred(F),
}

impl<'scope, T: Send + 'scope, F: FnOnce() -> T + Send + Copy + 'scope> Concurrent<'scope, T, F> {
    /// `run` on a new thread named `name`; `run` is `Copy` (it borrows only), so a failed
    /// spawn, which consumes its closure, still leaves a copy to run later.
    fn start<'env>(scope: &'scope std::thread::Scope<'scope, 'env>, name: &str, run: F) -> Self {
        match std::thread::Builder::new()
            .name(name.to_owned())
            .spawn_scoped(scope, run)
        {
            Ok(handle) => Self::Running(handle),
            Err(_) => Self::Deferred(run),
        }
    }

    /// The query's record; `None` when its runner panicked (that query stays unobserved).
    fn join(self) -> Option<T> {
        match self {
            Self::Running(handle) => handle.join().ok(),
            Self::Deferred(run) => Some(run()),
        }
    }
}

/// The least time the settings session gets, even when the first queries used up the deadline.
const SETTINGS_FLOOR: Duration = Duration::from_millis(500);

/// Once the daemon answered live, the settings session the policy asks for
/// ([`sharing_policy::settings_commands`]: each listed server's state, each GPU ordinal's
/// default pinned-memory limit), within what is left of the probe's deadline.
fn settings_query(
    facts: &HostFacts,
    runner: &dyn Runner,
    deadline: Instant,
) -> Option<QueryRecord> {
    let commands = sharing_policy::settings_commands(facts)?;
    let directory = facts.env.effective_pipe_directory();
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(SETTINGS_FLOOR);
    let query = daemon_query(&directory, &commands, left);
    Some(run_retried(runner, &query, &DAEMON_RETRY))
}

/// `nvidia-smi` with [`COMPUTE_APPS_QUERY_ARGS`] (each compute process's GPU UUID, PID and
/// name), empty stdin, within what is left of the probe's deadline (at least
/// [`SETTINGS_FLOOR`]); recorded raw, never retried.
fn compute_apps_query(runner: &dyn Runner, deadline: Instant) -> QueryRecord {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(SETTINGS_FLOOR);
    runner.run(&Query {
        program: GPU_QUERY_PROGRAM.to_owned(),
        args: COMPUTE_APPS_QUERY_ARGS
            .iter()
            .map(|arg| (*arg).to_owned())
            .collect(),
        stdin: String::new(),
        env: BTreeMap::new(),
        env_removed: Vec::new(),
        timeout: left,
    })
}

/// Runs the host GPU query ([`gpu_query`]); when `nvidia-smi` rejects one of its fields as an
/// older driver does ([`sharing_policy::field_rejected`]: `Field "…" is not a valid field to
/// query.`, exit status 2), asks the base query ([`BASE_GPU_QUERY_ARGS`]) within what is left
/// of the same deadline. Returns the record the table is read from and, after a fallback, the
/// rejected one (`HostFacts::gpu_query_rejected`). Any other failure is the answer: no second
/// process is spawned on a host whose driver knows the fields.
pub fn run_gpu_query(runner: &dyn Runner, query: &Query) -> (QueryRecord, Option<QueryRecord>) {
    let started = Instant::now();
    let first = runner.run(query);
    if sharing_policy::field_rejected(&first).is_none() {
        return (first, None);
    }
    let left = query.timeout.saturating_sub(started.elapsed());
    let base = Query {
        args: BASE_GPU_QUERY_ARGS
            .iter()
            .map(|arg| (*arg).to_owned())
            .collect(),
        timeout: left.max(Duration::from_millis(1)),
        ..query.clone()
    };
    (runner.run(&base), Some(first))
}

/// The host GPU table query: `nvidia-smi` with [`sharing_policy::GPU_QUERY_ARGS`] (the compute
/// mode, the driver version, the health columns [`sharing_policy::GPU_HEALTH_COLUMNS`], then
/// `index,uuid,name,pci.bus_id`; `--format=csv,noheader`), empty stdin: the table and the
/// GPU's state in one process. Run it with [`run_gpu_query`], which falls back on older
/// drivers.
pub fn gpu_query(timeout: Duration) -> Query {
    Query {
        program: GPU_QUERY_PROGRAM.to_owned(),
        args: GPU_QUERY_ARGS.iter().map(|arg| (*arg).to_owned()).collect(),
        stdin: String::new(),
        env: BTreeMap::new(),
        env_removed: Vec::new(),
        timeout,
    }
}

/// The daemon query: `nvidia-cuda-mps-control` with no arguments, `commands` on standard input
/// (then closed), `CUDA_MPS_PIPE_DIRECTORY` set to `directory`, `CUDA_MPS_PROTOCOL_VERSION`
/// removed. Only [`ReadOnlyCommand`]s can be expressed.
pub fn daemon_query(directory: &OsText, commands: &[ReadOnlyCommand], timeout: Duration) -> Query {
    Query {
        program: DAEMON_QUERY_PROGRAM.to_owned(),
        args: Vec::new(),
        stdin: probe_stdin(commands),
        env: BTreeMap::from([(PIPE_DIRECTORY_VAR.to_owned(), directory.clone())]),
        env_removed: vec![PROTOCOL_VERSION_VAR.to_owned()],
        timeout,
    }
}

/// Reads the CUDA variables of this process's environment, byte for byte (`var_os`).
pub fn read_env() -> EnvFacts {
    let read =
        |name: &str| std::env::var_os(name).map(|value| OsText::from_bytes(value.into_vec()));
    EnvFacts {
        cuda_visible_devices: read("CUDA_VISIBLE_DEVICES"),
        cuda_device_order: read("CUDA_DEVICE_ORDER"),
        cuda_mps_pipe_directory: read(PIPE_DIRECTORY_VAR),
        cuda_mps_log_directory: read("CUDA_MPS_LOG_DIRECTORY"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sharing_policy::{CapturedText, QueryOutcome};

    use super::*;
    use crate::runner::MockRunner;

    fn answered(query: &Query) -> QueryRecord {
        let outcome = QueryOutcome::Exited {
            code: Some(0),
            signal: None,
            stdout: CapturedText::from_bytes(b"100.0\n", false),
            stderr: CapturedText::default(),
        };
        query.record(outcome, Duration::from_millis(3))
    }

    fn env_with_pipe_dir(dir: &str) -> EnvFacts {
        EnvFacts {
            cuda_mps_pipe_directory: Some(OsText::from(dir)),
            ..EnvFacts::default()
        }
    }

    #[test]
    fn both_queries_are_issued_once_with_the_right_program_args_stdin_and_env() {
        let timeout = Duration::from_millis(1234);
        let mut runner = MockRunner::new();
        runner
            .expect_run()
            .withf(|query| query.program == "nvidia-smi")
            .times(1)
            .returning(move |query| {
                assert_eq!(
                    query.args,
                    [
                        "--query-gpu=compute_mode,driver_version,persistence_mode,gpu_recovery_action,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,index,uuid,name,pci.bus_id",
                        "--format=csv,noheader"
                    ]
                );
                assert_eq!(query.stdin, "");
                assert!(query.env.is_empty() && query.env_removed.is_empty());
                assert_eq!(query.timeout, timeout);
                answered(query)
            });
        runner
            .expect_run()
            .withf(|query| query.program == "nvidia-cuda-mps-control")
            .times(1)
            .returning(move |query| {
                assert!(query.args.is_empty(), "commands go on stdin, never argv");
                assert!(
                    query.stdin.starts_with(
                        "get_default_active_thread_percentage\nget_server_list\n\
                         get_default_active_thread_percentage\nget_default_device_pinned_mem_limit 0\n"
                    ),
                    "{:?}",
                    query.stdin
                );
                assert_eq!(query.stdin, probe_stdin(&first_session()));
                assert_eq!(
                    query.env,
                    BTreeMap::from([(
                        "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
                        OsText::from("/nonexistent/mps-pipe")
                    )])
                );
                assert_eq!(query.env_removed, ["CUDA_MPS_PROTOCOL_VERSION"]);
                // The first attempt gets what is left of the one deadline.
                assert!(
                    query.timeout <= timeout && query.timeout + Duration::from_secs(1) > timeout
                );
                answered(query)
            });
        let options = ProbeOptions {
            timeout,
            learner_uuid: Some("GPU-abc".to_owned()),
            ..ProbeOptions::default()
        };

        let facts = capture_with(
            env_with_pipe_dir("/nonexistent/mps-pipe"),
            &runner,
            &options,
        );

        assert_eq!(facts.learner_uuid.as_deref(), Some("GPU-abc"));
        assert_eq!(
            facts.gpu_query.as_ref().map(|q| q.program.as_str()),
            Some("nvidia-smi")
        );
        let daemon = facts.daemon_query.unwrap();
        assert_eq!(daemon.program, "nvidia-cuda-mps-control");
        assert_eq!(daemon.timeout_ms, 1234);
        assert!(
            daemon.elapsed_ms < 1234,
            "counted from the first attempt's start"
        );
        assert!(
            daemon.earlier_attempts.is_empty(),
            "a live answer is not retried"
        );
        let pipe = facts.control_pipe.unwrap();
        assert_eq!(pipe.path, OsText::from("/nonexistent/mps-pipe/control"));
        assert_eq!(pipe.lstat.kind, sharing_policy::FileKind::Missing);
        let pid_file = facts.pid_file.unwrap();
        assert_eq!(
            pid_file.path,
            OsText::from("/nonexistent/mps-pipe/nvidia-cuda-mps-control.pid")
        );
        assert!(pid_file.contents.is_none() && pid_file.error.is_some());
    }

    #[test]
    fn an_unset_or_empty_pipe_directory_queries_the_default_one_explicitly() {
        for raw in [None, Some(OsText::from(""))] {
            let mut runner = MockRunner::new();
            runner.expect_run().times(2).returning(|query| {
                if query.program == "nvidia-cuda-mps-control" {
                    assert_eq!(
                        query.env.get("CUDA_MPS_PIPE_DIRECTORY"),
                        Some(&OsText::from("/tmp/nvidia-mps"))
                    );
                }
                answered(query)
            });
            let env = EnvFacts {
                cuda_mps_pipe_directory: raw.clone(),
                ..EnvFacts::default()
            };
            let facts = capture_with(env, &runner, &ProbeOptions::default());
            assert_eq!(
                facts.env.cuda_mps_pipe_directory, raw,
                "the raw value is kept"
            );
            assert_eq!(
                facts.control_pipe.unwrap().path,
                OsText::from("/tmp/nvidia-mps/control")
            );
        }
    }

    #[test]
    fn nothing_is_observed_when_no_cuda_device_is_involved() {
        let mut runner = MockRunner::new();
        runner.expect_run().times(0);
        let env = env_with_pipe_dir("/tmp/whatever");
        let options = ProbeOptions {
            observe_cuda: false,
            ..ProbeOptions::default()
        };

        let facts = capture_with(env.clone(), &runner, &options);

        assert_eq!(facts.env, env);
        assert_eq!(facts.schema, sharing_policy::SCHEMA);
        assert!(facts.gpu_query.is_none());
        assert!(facts.daemon_query.is_none());
        assert!(facts.control_pipe.is_none());
        assert!(facts.pid_file.is_none());
    }

    #[test]
    fn the_daemon_probe_sends_only_read_only_commands() {
        let query = daemon_query(
            &OsText::from("/tmp/nvidia-mps"),
            &first_session(),
            DEFAULT_TIMEOUT,
        );
        assert!(
            query.stdin.ends_with('\n'),
            "the last command is terminated"
        );
        for line in query.stdin.lines() {
            assert!(
                ReadOnlyCommand::parse_line(line).is_some(),
                "{line:?} is not a read-only command"
            );
            for forbidden in [
                "quit",
                "start_server",
                "shutdown_server",
                "terminate_client",
                "set_",
            ] {
                assert!(!line.contains(forbidden), "{line:?}");
            }
        }
        assert!(query.args.is_empty());
    }

    #[test]
    fn default_options_are_five_seconds_and_one_mebibyte() {
        let options = ProbeOptions::default();
        assert_eq!(options.timeout, Duration::from_secs(5));
        assert_eq!(options.output_cap, 1024 * 1024);
        assert!(options.observe_cuda);
    }
}
