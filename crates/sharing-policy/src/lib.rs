//! The pure, fail-closed validator of CUDA MPS process sharing.
//!
//! This crate performs no I/O, reads no clock and no environment, and never initialises CUDA
//! (a CUDA initialisation *is* an MPS client handshake): every fact arrives in a [`HostFacts`]
//! snapshot, so a capture taken on a GPU host replays identically on a laptop.
//!
//! Input: a [`Request`] (what the launcher asks for) and a [`HostFacts`] snapshot (raw
//! observations of one host, recorded by `mps-host` or loaded from a fixture). Output:
//!
//! - [`validate`]: for an explicit `mps` request, [`Evidence`] when every prerequisite is
//!   proven, else the first unmet one as a [`Rejection`] with a stable [`Code`]. For a null
//!   request, best-effort ambient evidence; it never rejects.
//! - [`explain`]: every unmet prerequisite as a [`Finding`] (for a `doctor` view); empty
//!   exactly when [`validate`] succeeds.
//!
//! Anything unknown, unparsable, timed out, cut short or not UTF-8 counts as unproven, never as
//! a pass.
//!
//! The checks, in the reference implementation's order: mode, snapshot schema, backend, Linux,
//! rank, a collector, CUDA device strings, the learner's GPU, the collector's GPU and that they
//! are one, the control pipe (path length, presence, kind, access) and the daemon's answer. The
//! crate README lists every code.
//!
//! ROCm/HIP checks do not apply: the reference rejected a ROCm/HIP `PyTorch` build, but this
//! validator runs no `PyTorch`; GPUs are identified from `nvidia-smi` and `CUDA_VISIBLE_DEVICES`.
//!
//! # Examples
//!
//! ```
//! use std::collections::BTreeMap;
//! use sharing_policy::{
//!     explain, probe_stdin, validate, AccessFacts, CapturedText, EnvFacts, FileFacts, FileKind,
//!     HostFacts, PipeFacts, QueryOutcome, QueryRecord, Request, DAEMON_PROBE,
//! };
//!
//! fn exited(stdout: &str) -> QueryOutcome {
//!     QueryOutcome::Exited {
//!         code: Some(0),
//!         signal: None,
//!         stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
//!         stderr: CapturedText::default(),
//!     }
//! }
//! let socket = FileFacts { kind: FileKind::Socket, mode: Some(0o666), uid: Some(0), gid: Some(0), error: None };
//! let env = EnvFacts::default(); // CUDA_VISIBLE_DEVICES unset, default pipe directory
//! let mut facts = HostFacts::unobserved("linux", env.clone());
//! facts.gpu_query = Some(QueryRecord {
//!     program: "nvidia-smi".into(),
//!     args: gpu_uuid::TABLE_QUERY_ARGS.map(String::from).to_vec(),
//!     stdin: String::new(),
//!     env: BTreeMap::new(),
//!     env_removed: vec![],
//!     timeout_ms: 5000,
//!     elapsed_ms: 40,
//!     outcome: exited("0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n"),
//!     earlier_attempts: vec![],
//! });
//! facts.control_pipe = Some(PipeFacts {
//!     directory: env.effective_pipe_directory(),
//!     path: env.control_pipe_path(),
//!     path_len: env.control_pipe_path().as_bytes().len(),
//!     lstat: socket.clone(),
//!     stat: socket,
//!     access: AccessFacts { uid: Some(1000), directory_traversable: Some(true), read_write: Some(true), error: None },
//! });
//! facts.daemon_query = Some(QueryRecord {
//!     program: "nvidia-cuda-mps-control".into(),
//!     args: vec![],
//!     stdin: probe_stdin(&DAEMON_PROBE),
//!     env: BTreeMap::from([("CUDA_MPS_PIPE_DIRECTORY".into(), env.effective_pipe_directory())]),
//!     env_removed: vec!["CUDA_MPS_PROTOCOL_VERSION".into()],
//!     timeout_ms: 5000,
//!     elapsed_ms: 3,
//!     outcome: exited("100.0\n"), // a live, idle daemon: no server yet
//!     earlier_attempts: vec![],
//! });
//!
//! let request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
//! let evidence = validate(&request, &facts)?;
//! assert!(evidence.validated);
//! assert_eq!(evidence.learner_gpu_uuid.as_deref(), Some("8932F937D72C4106C12F20BD9FAED9F6"));
//! assert_eq!(evidence.control_pipe.as_deref(), Some("/tmp/nvidia-mps/control"));
//! assert_eq!(evidence.server_pid, None);
//! assert!(explain(&request, &facts).is_empty());
//!
//! // The same host with the daemon gone: rejected, with the command that fixes it.
//! facts.daemon_query.as_mut().unwrap().outcome = QueryOutcome::Exited {
//!     code: Some(1),
//!     signal: None,
//!     stdout: CapturedText::default(),
//!     stderr: CapturedText::from_bytes(b"Cannot find MPS control daemon process\n", false),
//! };
//! let rejection = validate(&request, &facts).unwrap_err();
//! assert_eq!(rejection.code().as_str(), "daemon-unreachable");
//! assert!(rejection.to_string().contains("could not reach the control daemon"));
//! assert!(rejection.to_string().contains("nvidia-cuda-mps-control -d"));
//! # Ok::<(), sharing_policy::Rejection>(())
//! ```

mod ambient;
mod assess;
mod code;
mod commands;
mod daemon;
mod device;
mod evidence;
mod facts;
mod finding;
mod gpu;
mod request;
pub mod retry;
mod start;
mod text;

use assess::{Unmet, Wanted};
pub use code::Code;
pub use commands::{DAEMON_PROBE, ReadOnlyCommand, probe_stdin};
pub use evidence::Evidence;
pub use facts::{
    AccessFacts, Attempt, CONTROL_PIPE_NAME, CapturedText, DAEMON_QUERY_PROGRAM,
    DEFAULT_PIPE_DIRECTORY, EnvFacts, FileFacts, FileKind, GPU_QUERY_PROGRAM, HostFacts, OsText,
    PID_FILE_NAME, PidFileFacts, PipeFacts, QueryOutcome, QueryRecord, SCHEMA, parse_pid,
};
pub use finding::{Finding, Rejection};
pub use gpu::{HostTableError, host_gpu_table, index_order_trusted};
pub use request::{DEFAULT_SUPPORTED_BACKEND, Request};
pub use start::start_command;
pub use text::{quote_name, shell_quote};

/// The longest control socket path (`<pipe directory>/control`) the validator accepts: an
/// `AF_UNIX` `sun_path` holds 108 bytes including the terminating NUL.
pub const MAX_CONTROL_PATH_BYTES: usize = assess::MAX_SOCKET_PATH;

/// Whether [`validate`] and [`explain`] look at any host fact beyond the raw environment
/// ([`HostFacts::env`]) and the caller-supplied learner UUID.
///
/// An explicit request (any mode other than null) always does. A null request does only when
/// its learner or its collector is a CUDA device (`cuda` or `cuda:<index>`, as the validator
/// parses them): a null request with a `cpu` learner and no CUDA collector looks at nothing,
/// so its evidence is the same whatever the control pipe, the daemon, the pid file or the GPU
/// table show. The validator applies this rule itself; a caller that observes the host uses
/// it to decide whether to observe anything (`mps-preflight probe` passes it as
/// `mps_host::ProbeOptions::observe_cuda`), so a probe that skips observation prints what a
/// check of a full capture prints, by construction.
///
/// ```
/// use sharing_policy::{observes_host, Request};
///
/// assert!(observes_host(&Request::new(Some("mps"), "cpu", None, "mjwarp")));
/// assert!(observes_host(&Request::new(None, "cuda:0", None, "mjwarp")));
/// assert!(observes_host(&Request::new(None, "cpu", Some("cuda"), "mjwarp")));
/// assert!(!observes_host(&Request::new(None, "cpu", None, "mjwarp")));
/// assert!(!observes_host(&Request::new(None, "cpu", Some("cpu"), "mjwarp")));
/// // Not a CUDA device as the validator reads one: nothing to look up.
/// assert!(!observes_host(&Request::new(None, "cuda:x", None, "mjwarp")));
/// ```
pub fn observes_host(request: &Request) -> bool {
    request.mode.is_some() || ambient::names_a_cuda_device(request)
}

/// Validates one rank's request against a host snapshot.
///
/// - Null request (`request.mode == None`): never rejects. Returns best-effort ambient evidence
///   (`configured`, `effective` null, `validated` false), with `ambient_server` true exactly
///   when the control daemon answered live. A learner `cpu` with no collector looks at nothing.
/// - Explicit request: [`Evidence`] with `validated` true when every prerequisite is proven.
///
/// # Errors
/// For an explicit request, the first unmet prerequisite in the reference order (a mode other
/// than null or `mps` included), as a [`Rejection`] whose message carries the reference's key
/// phrase and what to do. Deterministic: the same inputs give the same answer.
pub fn validate(request: &Request, facts: &HostFacts) -> Result<Evidence, Rejection> {
    if request.mode.is_none() {
        return Ok(ambient::evidence(request, facts));
    }
    assess::explicit(request, facts, Wanted::First).map_err(|unmet| unmet.first.into())
}

/// Every unmet prerequisite of the request, in the order [`validate`] checks them (its first
/// element is what [`validate`] rejects with). Empty exactly when [`validate`] returns `Ok`;
/// always empty for a null request. A check that depends on an earlier one that failed (the
/// kind of a control pipe that is missing) is not reported separately.
pub fn explain(request: &Request, facts: &HostFacts) -> Vec<Finding> {
    if request.mode.is_none() {
        return Vec::new();
    }
    match assess::explicit(request, facts, Wanted::All) {
        Ok(_) => Vec::new(),
        Err(Unmet { first, rest }) => std::iter::once(first).chain(rest).collect(),
    }
}
