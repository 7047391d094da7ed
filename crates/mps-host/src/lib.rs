#![doc = include_str!("../README.md")]

mod attest;
mod capture;
mod children;
mod fs;
mod lock;
mod log;
mod passwd;
mod procfs;
mod reach;
mod retried;
mod runner;
mod shm;

pub use attest::{
    AttestOptions, FIRST_BACKOFF, KeepWaiting, MAX_BACKOFF, observe_attest, observe_attest_with,
};
pub use capture::{
    DEFAULT_SCAN_LIMIT, MAX_CONNECTIONS_VAR, PIPE_DIRECTORY_VAR, PROTOCOL_VERSION_VAR,
    ProbeOptions, capture, capture_with, daemon_query, gpu_query, read_env, read_host_name,
    run_gpu_query,
};
pub use children::{
    StoppedQueries, forbid_queries, no_query_running, stop_all_queries, watch_interrupts,
};
pub use fs::{PID_FILE_CAP, observe_control_pipe, observe_pid_file};
pub use lock::{LOCK_FILE_NAME, observe_daemon_lock};
pub use log::{observe_daemon_log, observe_log_directory, read_tail};
pub use passwd::{PASSWD_CAP, PASSWD_PATH, resolve_user, resolve_user_in};
pub use procfs::{find_daemon, observe_caller, observe_client, observe_process};
pub use reach::{GROUP_PATH, observe_path_entry, observe_pipe_access, user_groups};
pub use retried::run_retried;
pub use runner::{DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ProcessRunner, Query, Runner};
pub use shm::{SHM_PATH, observe_capacity, observe_shm};
