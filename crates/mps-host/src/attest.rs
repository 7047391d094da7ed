//! `attest`'s observation: after the learner and the collector started, the server
//! list, each server's client list and owner, and both processes' `/proc` entries, asked again
//! with a bounded backoff while the caller's `keep_waiting` says waiting may help. Raw: whether
//! the processes are attached is the caller's decision (`sharing_policy::attest`); this module
//! only observes, and asks the caller after each round whether to observe again.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mps_protocol::{DAEMON_PROBE, OsText, Pid, QueryRecord, client_query, retry::DAEMON_RETRY};
use sharing_policy::{
    ATTEST_SCHEMA, AttestFacts, DaemonSearch, EnvFacts, PidFileFacts, PipeDirectorySource,
    ServerFacts, attest_settings_commands,
};

use crate::capture::{DEFAULT_SCAN_LIMIT, daemon_query, read_host_name};
use crate::fs::observe_pid_file;
use crate::lock::observe_daemon_lock;
use crate::procfs::{SERVER_CAP, find_daemon, observe_caller, observe_client, observe_process};
use crate::retried::run_retried;
use crate::runner::{DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ProcessRunner, Runner};

/// The first pause between two rounds; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// The longest pause between two rounds.
pub const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What to attest and how patiently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttestOptions {
    /// The learner's PID.
    pub learner_pid: Pid,
    /// The collector's PID.
    pub collector_pid: Pid,
    /// The pipe directory whose daemon is asked (the validated one).
    pub pipe_directory: OsText,
    /// Where that pipe directory came from (recorded).
    pub pipe_directory_source: PipeDirectorySource,
    /// The deadline of each query (default 5 s).
    pub timeout: Duration,
    /// How long to keep asking until both are attached (default 0: one round). The whole run
    /// ends by `wait + timeout`: no round starts after `wait`, and no query outlives the end.
    pub wait: Duration,
    /// The `/proc` directory read (tests pass a fake tree).
    pub proc_root: PathBuf,
    /// Where `nvidia-cuda-mps-control` is looked for (`None`: the inherited `PATH`).
    pub search_path: Option<OsString>,
    /// The cap on each query's standard output and standard error.
    pub output_cap: usize,
}

impl AttestOptions {
    /// The defaults for these two PIDs on `pipe_directory`.
    pub fn new(learner_pid: Pid, collector_pid: Pid, pipe_directory: OsText) -> Self {
        Self {
            learner_pid,
            collector_pid,
            pipe_directory,
            pipe_directory_source: PipeDirectorySource::Environment,
            timeout: DEFAULT_TIMEOUT,
            wait: Duration::ZERO,
            proc_root: PathBuf::from("/proc"),
            search_path: None,
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

/// Observes through a [`ProcessRunner`] built from `options`, and records the host name;
/// rounds go on while `keep_waiting` says so (see [`observe_attest_with`]).
pub fn observe_attest(options: &AttestOptions, keep_waiting: KeepWaiting<'_>) -> AttestFacts {
    let runner = ProcessRunner {
        stdout_cap: options.output_cap,
        stderr_cap: options.output_cap,
        search_path: options.search_path.clone(),
    };
    let mut facts = observe_attest_with(&runner, options, keep_waiting);
    facts.host_name = Some(read_host_name());
    facts
}

/// The caller's answer, after a round, to "is another round worth waiting for?": `true` to
/// observe again (after a pause, while the wait lasts). Front ends pass the policy's
/// judgement (`|facts| sharing_policy::attest(facts).worth_waiting()`); this crate never
/// judges what it observed.
pub type KeepWaiting<'a> = &'a dyn Fn(&AttestFacts) -> bool;

/// Observes in rounds through `runner`: a round, then, while `keep_waiting` says so of that
/// round's snapshot and `options.wait` has not passed, a pause (50 ms, doubling up to 1 s, cut
/// to what is left of the wait) and another round. The snapshot is the last round's, with the
/// count of rounds.
pub fn observe_attest_with(
    runner: &dyn Runner,
    options: &AttestOptions,
    keep_waiting: KeepWaiting<'_>,
) -> AttestFacts {
    let started = Instant::now();
    let wait_until = started + options.wait;
    let end = wait_until + options.timeout;
    let mut backoff = FIRST_BACKOFF;
    let mut rounds = 0_u32;
    // The daemon is long-lived: its pid file and process (multi-user mode) are read once.
    let daemon = observe_daemon(options, started + options.timeout);
    // Each process's start time, pinned at the first round that read it.
    let (mut learner_start, mut collector_start) = (None, None);
    loop {
        rounds = rounds.saturating_add(1);
        let mut facts = round(runner, options, end);
        (facts.pid_file, facts.daemon_process) = (Some(daemon.0.clone()), Some(daemon.1.clone()));
        learner_start = learner_start.or(facts.learner.start_time);
        collector_start = collector_start.or(facts.collector.start_time);
        facts.learner.first_start_time = learner_start;
        facts.collector.first_start_time = collector_start;
        facts.rounds = rounds;
        facts.elapsed_ms = millis(started.elapsed());
        let now = Instant::now();
        if now >= wait_until || !keep_waiting(&facts) {
            return facts;
        }
        std::thread::sleep(backoff.min(wait_until - now));
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One round: the server query, each listed server's client query and process, then both
/// processes (read last, so one that ended during the queries is seen as ended).
fn round(runner: &dyn Runner, options: &AttestOptions, end: Instant) -> AttestFacts {
    let dir = &options.pipe_directory;
    let root = &options.proc_root;
    let left = || {
        options
            .timeout
            .min(end.saturating_duration_since(Instant::now()))
    };
    let server_query = run_retried(
        runner,
        &daemon_query(dir, &DAEMON_PROBE, left()),
        &DAEMON_RETRY,
    );
    let servers = sharing_policy::listed_server_pids(&server_query, dir)
        .into_iter()
        .filter_map(Pid::new)
        .take(SERVER_CAP)
        .map(|pid| ServerFacts {
            pid: pid.get(),
            client_query: client_list(runner, dir, pid, left()),
            process: observe_process(root, pid.get(), false),
            settings_query: Some(server_settings(runner, dir, pid, left())),
        })
        .collect();
    AttestFacts {
        schema: ATTEST_SCHEMA.to_owned(),
        os: std::env::consts::OS.to_owned(),
        pipe_directory: dir.clone(),
        pipe_directory_source: options.pipe_directory_source,
        caller: Some(observe_caller()),
        learner: observe_client(root, options.learner_pid.get()),
        collector: observe_client(root, options.collector_pid.get()),
        server_query: Some(server_query),
        servers,
        wait_ms: millis(options.wait),
        rounds: 1,
        elapsed_ms: 0,
        host_name: None,
        pid_file: None,
        daemon_process: None,
        observer_pid_namespace: crate::procfs::read_pid_namespace(root, "self").ok(),
    }
}

/// The pipe directory's pid file and the control daemon's process, found as the preflight
/// finds them (the pid file, else a `/proc` scan bounded by entries and `deadline`).
fn observe_daemon(options: &AttestOptions, deadline: Instant) -> (PidFileFacts, DaemonSearch) {
    let env = EnvFacts {
        cuda_visible_devices: None,
        cuda_device_order: None,
        cuda_mps_pipe_directory: Some(options.pipe_directory.clone()),
        cuda_mps_log_directory: None,
    };
    let pid_file = observe_pid_file(&env);
    let lock = observe_daemon_lock(&options.proc_root, &options.pipe_directory);
    let search = find_daemon(
        &options.proc_root,
        &pid_file,
        lock,
        DEFAULT_SCAN_LIMIT,
        deadline,
    );
    (pid_file, search)
}

/// `get_client_list <server>`, after the liveness line, asked again while busy.
fn client_list(runner: &dyn Runner, dir: &OsText, server: Pid, timeout: Duration) -> QueryRecord {
    run_retried(
        runner,
        &daemon_query(dir, &client_query(server), timeout),
        &DAEMON_RETRY,
    )
}

/// The server's state, active-thread percentage and pinned-memory limit (the commands of
/// `sharing_policy::attest_settings_commands`), asked again while busy.
fn server_settings(
    runner: &dyn Runner,
    dir: &OsText,
    server: Pid,
    timeout: Duration,
) -> QueryRecord {
    run_retried(
        runner,
        &daemon_query(dir, &attest_settings_commands(server), timeout),
        &DAEMON_RETRY,
    )
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
