#![doc = include_str!("../README.md")]

mod access;
mod access_facts;
mod ambient;
mod assess;
mod attest;
mod class;
mod code;
mod compute_apps;
mod daemon;
mod daemon_identity;
mod daemon_log;
mod device;
mod evidence;
mod facts;
mod finding;
mod gpu;
mod host_extra;
mod lock;
mod log_facts;
mod message;
mod namespace;
mod proc_text;
mod process;
mod request;
mod served;
mod session;
mod start;
mod text;
mod unobserved;
mod verdict;
mod vocabulary;

pub use access::{Blocked, Class, Need, PathUnknown, Reach, ReachUnknown, pipe_reach};
pub use access_facts::{
    EntryKind, LOG_FIFO_NAME, POSIX_ACL_XATTR, PathEntry, PipeAccessFacts, SELINUX_ENFORCE_PATH,
    UserGroups, path_prefixes,
};
use assess::{Unmet, Wanted};
pub use attest::{
    ATTEST_DEVICE, ATTEST_SCHEMA, AttestCode, AttestFacts, AttestWords, Attestation,
    CLIENT_ENVIRON_VARS, LikelyCause, PipeDirectorySource, ProcessAttestation, Role, ServerFacts,
    ServerSettings, attest, attest_settings_commands, attest_worded, distinct_pids,
    parse_client_list, same_process, stat_start_time,
};
pub use class::CodeClass;
pub use code::Code;
pub use compute_apps::{COMPUTE_APPS_QUERY_ARGS, compute_apps_wanted};
pub use daemon::reference::REFERENCE_DAEMON_STDIN;
pub use device::cuda_index;
pub use evidence::Evidence;
pub use facts::{
    AccessFacts, CONTROL_PIPE_NAME, DEFAULT_PIPE_DIRECTORY, EnvFacts, FileFacts, FileKind,
    HostFacts, PID_FILE_NAME, PidFileFacts, PipeFacts, SCHEMA, SCHEMA_V1, SCHEMA_V2, SCHEMA_V3,
    SCHEMAS_READ, V2_ONLY_FIELDS, V3_ONLY_FIELDS, V4_ONLY_FIELDS, parse_pid, schema_field_error,
};
pub use finding::{Finding, Rejection};
pub use gpu::{
    BASE_GPU_QUERY_ARGS, GPU_HEALTH_COLUMNS, GPU_QUERY_ARGS, HostTableError, MODELS_QUERY_ARGS,
    REFERENCE_GPU_QUERY_ARGS, field_rejected, host_gpu_table, index_order_trusted,
    needs_gpu_models, reference_gpu_table,
};
pub use host_extra::{
    CapacityFacts, MAX_CLIENTS_PER_DEVICE, ShmFacts, ShmView, client_limit, clients_fit,
    shm_mount_lines_wanted,
};
pub use lock::lock_holder_pid;
pub use log_facts::{DEFAULT_LOG_DIRECTORY, DaemonLogFacts, LOG_FILES, LOG_TAIL_CAP, LogFileFacts};
pub use message::daemon_log::daemon_log_directory;
pub use message::session::settings_answers;
pub use message::unobserved::nothing_observed;
pub use mps_protocol::{
    Attempt, CapturedText, DAEMON_PROBE, DAEMON_QUERY_PROGRAM, FIRST_SESSION_ORDINALS,
    GPU_QUERY_PROGRAM, MemSize, OsText, Percentage, Pid, QueryOutcome, QueryRecord,
    ReadOnlyCommand, client_query, first_session, probe_stdin, retry, separated,
};
pub use process::{
    CAP_SYS_PTRACE_BIT, CallerFacts, ClientFacts, DAEMON_COMM, DAEMON_ENVIRON_VARS,
    DaemonLockFacts, DaemonSearch, DaemonSearchMethod, LockFileFacts, LockTestFacts, ProcessFacts,
};
pub use request::{DEFAULT_SUPPORTED_BACKEND, Request};
pub use served::{listed_server_pids, pid_file_daemon_pid, proven_daemon_pid};
pub use session::{MAX_LISTED_CLIENTS, listed_client_pids, settings_commands};
pub use start::start_command;
pub use text::{quote_name, shell_quote};
pub use unobserved::{ToolNotStarted, tools_not_started};
pub use verdict::{Verdict, judge};
pub use vocabulary::Vocabulary;

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
    assess::explicit(request, facts, Wanted::First)
        .map(|(evidence, _)| evidence)
        .map_err(|unmet| unmet.first.into())
}

/// What could not be verified for a request that [`validate`] accepts, as findings that say
/// how to verify each (for `doctor`'s warnings), then the advisory warnings ([`Code::ADVISORY`]:
/// what the daemon's log shows that may explain a later failure). The unverified ones' codes
/// are the evidence's `unverified` list, in order. Empty when the request is rejected and when
/// it is null; under `require_verified` only advisory warnings remain (each unverified one
/// would have been a rejection).
pub fn warnings(request: &Request, facts: &HostFacts) -> Vec<Finding> {
    if request.mode.is_none() {
        return Vec::new();
    }
    assess::explicit(request, facts, Wanted::All)
        .map_or_else(|_| Vec::new(), |(_, warnings)| warnings)
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
