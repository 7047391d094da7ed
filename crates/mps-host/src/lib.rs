//! Live, read-only, bounded observation of a host's CUDA MPS state.
//!
//! `mps-host` is the only crate of mps-preflight that touches the host. It fills in a
//! [`sharing_policy::HostFacts`] snapshot and never interprets it: no CSV parsing, no liveness
//! decision. The validator in `sharing-policy` does that from the raw records, so a snapshot
//! recorded here and replayed from a fixture goes through the same parsers.
//!
//! What [`capture`] observes, when [`ProbeOptions::observe_cuda`] is set:
//!
//! - the environment: `CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`, `CUDA_MPS_PIPE_DIRECTORY`,
//!   `CUDA_MPS_LOG_DIRECTORY`, byte for byte ([`read_env`]);
//! - the control pipe `<pipe directory>/control`: `lstat` and `stat`, mode, owner, path length,
//!   and whether the probing user can search its directories and read and write it
//!   ([`observe_control_pipe`]);
//! - the pid file `<pipe directory>/nvidia-cuda-mps-control.pid` (550+ drivers): at most
//!   [`PID_FILE_CAP`] bytes, whether the PID is alive and its `/proc/<pid>/comm`
//!   ([`observe_pid_file`]);
//! - `nvidia-smi --query-gpu=… --format=csv,noheader` ([`gpu_query`]);
//! - `nvidia-cuda-mps-control` with **no arguments**, the read-only [`sharing_policy::DAEMON_PROBE`]
//!   commands on standard input, standard input then closed, `CUDA_MPS_PIPE_DIRECTORY` set
//!   explicitly and `CUDA_MPS_PROTOCOL_VERSION` removed ([`daemon_query`]).
//!
//! The two queries run concurrently through one [`Runner`]. The real one, [`ProcessRunner`], is
//! the only place a process is spawned: each run has a deadline, runs in its own process group
//! (killed as a whole when the deadline passes), and has its output capped. Nothing here loads
//! the CUDA driver or NVML: a CUDA initialisation is an MPS client handshake.
//!
//! # Examples
//!
//! Observing the live host (what the command line does):
//!
//! ```no_run
//! let facts = mps_host::capture(&mps_host::ProbeOptions::default());
//! println!("{}", facts.env.effective_pipe_directory().to_string_lossy());
//! ```
//!
//! The orchestration with a runner of your own (here one that runs nothing), against a pipe
//! directory that holds a regular file named `control`:
//!
//! ```
//! use mps_host::{capture_with, ProbeOptions, Query, Runner};
//! use sharing_policy::{EnvFacts, FileKind, OsText, QueryOutcome, QueryRecord};
//!
//! struct Offline;
//! impl Runner for Offline {
//!     fn run(&self, query: &Query) -> QueryRecord {
//!         let error = "offline".to_owned();
//!         query.record(QueryOutcome::SpawnFailed { error }, std::time::Duration::ZERO)
//!     }
//! }
//!
//! let dir = std::env::temp_dir().join(format!("mps-host-doctest-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join("control"), b"")?;
//! let env = EnvFacts {
//!     cuda_mps_pipe_directory: Some(OsText::from(dir.to_str().unwrap_or_default())),
//!     ..EnvFacts::default()
//! };
//!
//! let facts = capture_with(env, &Offline, &ProbeOptions::default());
//! let pipe = facts.control_pipe.as_ref().ok_or("no pipe facts")?;
//! assert_eq!(pipe.lstat.kind, FileKind::Regular);
//! let daemon = facts.daemon_query.as_ref().ok_or("no daemon query")?;
//! assert_eq!(daemon.program, "nvidia-cuda-mps-control");
//! assert!(daemon.args.is_empty());
//! assert_eq!(daemon.stdin, "get_default_active_thread_percentage\nget_server_list\n");
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod capture;
mod children;
mod fs;
mod retried;
mod runner;

pub use capture::{
    PIPE_DIRECTORY_VAR, PROTOCOL_VERSION_VAR, ProbeOptions, capture, capture_with, daemon_query,
    gpu_query, read_env,
};
pub use children::{StoppedQueries, stop_all_queries};
pub use fs::{PID_FILE_CAP, observe_control_pipe, observe_pid_file};
pub use retried::run_retried;
pub use runner::{DEFAULT_OUTPUT_CAP, DEFAULT_TIMEOUT, ProcessRunner, Query, Runner};
