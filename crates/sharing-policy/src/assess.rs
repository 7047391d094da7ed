//! The ordered checks of an explicit request. `validate` reports the first finding, `explain`
//! all of them; both come from this one walk, so they cannot disagree. `validate` stops the
//! walk at its first finding ([`Wanted::First`]), so a rejection builds one message.

use gpu_uuid::GpuUuid;

use crate::daemon::{self, DaemonStatus};
use crate::device::{DeviceError, parse_cuda_index};
use crate::gpu::{self, Failure};
use crate::text::repr;
use crate::{
    Code, EnvFacts, Evidence, FileKind, Finding, HostFacts, OsText, PipeFacts, Request, SCHEMA,
    start,
};

/// The prefix of every explicit-request message, as in the seed.
const MPS: &str = "training.cuda_process_sharing='mps'";
/// The prefix of the learner-identity messages (the seed drops `='mps'` there).
const SHARING: &str = "training.cuda_process_sharing";
/// The longest path an `AF_UNIX` socket accepts (`sun_path` is 108 bytes with the terminator).
pub(crate) const MAX_SOCKET_PATH: usize = 107;

/// Which of the two processes a device belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Learner,
    Collector,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Learner => "learner",
            Self::Collector => "collector",
        }
    }
}

/// Whether `mode` is the explicit request (`mps`, any ASCII case, surrounding whitespace).
pub(crate) fn is_mps(mode: &str) -> bool {
    mode.trim().eq_ignore_ascii_case("mps")
}

/// The normalised backend name (the seed's `strip().lower()`).
fn normalise_backend(backend: &str) -> String {
    backend.trim().to_lowercase()
}

/// Whether two backend names are equal once normalised; allocates only for non-ASCII names.
fn same_backend(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.to_lowercase() == b.to_lowercase()
    }
}

/// How many findings the caller of [`explicit`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// The first one (`validate`): the walk stops there.
    First,
    /// Every one (`explain`).
    All,
}

/// The unmet prerequisites of a request: at least one.
pub(crate) struct Unmet {
    /// The first, in the seed's order: what `validate` rejects with.
    pub(crate) first: Finding,
    /// The others, in order (none when only the first was wanted).
    pub(crate) rest: Vec<Finding>,
}

/// The findings of one walk, built only while the caller still needs them.
struct Findings {
    wanted: Wanted,
    first: Option<Finding>,
    rest: Vec<Finding>,
}

impl Findings {
    fn new(wanted: Wanted) -> Self {
        Self {
            wanted,
            first: None,
            rest: Vec::new(),
        }
    }

    /// Whether the caller has every finding it wants, so the rest of the walk can be skipped.
    fn settled(&self) -> bool {
        self.wanted == Wanted::First && self.first.is_some()
    }

    /// Records a finding; `finding` is not called when the caller has what it wants.
    fn push(&mut self, finding: impl FnOnce() -> Finding) {
        if self.first.is_none() {
            self.first = Some(finding());
        } else if self.wanted == Wanted::All {
            self.rest.push(finding());
        }
    }

    /// `Ok` when nothing is unmet.
    #[expect(
        clippy::result_large_err,
        reason = "once per walk, and the evidence on the Ok side is larger still"
    )]
    fn into_unmet(self) -> Result<(), Unmet> {
        match self.first {
            Some(first) => Err(Unmet {
                first,
                rest: self.rest,
            }),
            None => Ok(()),
        }
    }
}

/// What the identity checks established.
#[derive(Default)]
struct Identity {
    learner: Option<GpuUuid>,
    collector: Option<GpuUuid>,
}

impl Identity {
    /// The GPU a suggested daemon should be pinned to: the one both sides agree on, or the
    /// only one known.
    fn pin(&self) -> Option<GpuUuid> {
        match (self.learner, self.collector) {
            (Some(l), Some(c)) if l != c => None,
            (Some(uuid), _) | (None, Some(uuid)) => Some(uuid),
            (None, None) => None,
        }
    }
}

/// Walks the prerequisites of an explicit request in the seed's order: evidence when every one
/// is proven, else the unmet ones (only the first when that is all the caller wants).
#[expect(
    clippy::result_large_err,
    reason = "once per walk, and the evidence on the Ok side is larger still"
)]
pub(crate) fn explicit(
    request: &Request,
    facts: &HostFacts,
    wanted: Wanted,
) -> Result<Evidence, Unmet> {
    let mut findings = Findings::new(wanted);
    let mode = request.mode.as_deref().unwrap_or_default();
    if !is_mps(mode) {
        findings.push(|| Finding::new(
            Code::UnsupportedMode,
            format!(
                "Unsupported training.cuda_process_sharing={}; expected null or 'mps'. An explicit 'mps' request never falls back to multi-context CUDA execution.",
                repr(mode)
            ),
            format!("mode {}", repr(mode)),
            "set training.cuda_process_sharing to null or 'mps'".to_owned(),
        ));
    }
    let schema_ok = facts.schema == SCHEMA;
    if !schema_ok {
        findings.push(|| Finding::new(
            Code::UnsupportedSnapshotSchema,
            format!(
                "{MPS} cannot use this host snapshot: its schema is {}, and this validator reads only {}. Capture the host again with this version of mps-preflight.",
                repr(&facts.schema),
                repr(SCHEMA)
            ),
            format!("schema {}", repr(&facts.schema)),
            "capture the host again with this version of mps-preflight".to_owned(),
        ));
    }
    check_backend(request, &mut findings);
    if schema_ok && facts.os != "linux" {
        findings.push(|| Finding::new(
            Code::UnsupportedOs,
            format!(
                "{MPS} requires Linux; got os={}. CUDA MPS exists only on Linux: set training.cuda_process_sharing to null on this host.",
                repr(&facts.os)
            ),
            format!("os {}", repr(&facts.os)),
            "run on Linux, or set training.cuda_process_sharing to null".to_owned(),
        ));
    }
    if request.rank < 0 || request.world_size < 1 || request.rank >= request.world_size {
        findings.push(|| Finding::new(
            Code::InvalidRank,
            format!(
                "{MPS} requires a valid rank in [0, world_size); got rank={}, world_size={}. Pass this process's data-parallel rank and the number of ranks.",
                request.rank, request.world_size
            ),
            format!("rank={}, world_size={}", request.rank, request.world_size),
            "pass a rank in [0, world_size) and a world_size of at least 1".to_owned(),
        ));
    }
    if request.collector_device.is_none() {
        findings.push(|| {
            let backend = normalise_backend(&request.backend);
            Finding::new(
                Code::MissingCollector,
                format!(
                    "{MPS} requires a CUDA collector process device; the {backend} learner/collector rank-local binding did not produce one. Configure a CUDA collector device (for example cuda:0) or set training.cuda_process_sharing to null."
                ),
                "no collector device".to_owned(),
                "configure a CUDA collector device, for example cuda:0".to_owned(),
            )
        });
    }
    let learner_index = device_index(Role::Learner, &request.learner_device, &mut findings);
    let collector_index = request
        .collector_device
        .as_deref()
        .and_then(|device| device_index(Role::Collector, device, &mut findings));

    let host = if schema_ok {
        check_host(facts, learner_index, collector_index, &mut findings)
    } else {
        HostChecks::default()
    };
    findings.into_unmet()?;

    let (pipe_directory, control_pipe, control_pipe_kind) = PipeEvidence::fields(host.pipe);
    Ok(Evidence {
        configured: Some("mps".to_owned()),
        effective: Some("mps".to_owned()),
        validated: true,
        rank: request.rank,
        world_size: request.world_size,
        learner_device: learner_index.map(cuda_device),
        collector_device: collector_index.map(cuda_device),
        learner_gpu_uuid: host.identity.learner.map(|u| u.canonical_token()),
        collector_gpu_uuid: host.identity.collector.map(|u| u.canonical_token()),
        pipe_directory_env: facts
            .env
            .cuda_mps_pipe_directory
            .as_ref()
            .map(crate::OsText::to_string_lossy),
        pipe_directory,
        control_pipe,
        control_pipe_kind,
        server_pid: host.server_pid,
        ambient_server: false,
        daemon_pid: host.daemon_pid,
        host_name: facts.host_name.as_ref().map(crate::OsText::to_string_lossy),
    })
}

/// What the host checks established, for the evidence.
#[derive(Default)]
struct HostChecks {
    identity: Identity,
    pipe: Option<PipeEvidence>,
    server_pid: Option<i64>,
    daemon_pid: Option<i64>,
}

/// The checks of a snapshot's host facts, in order: the GPUs, the control pipe, the daemon.
/// Each is skipped once the caller has the findings it wants.
fn check_host(
    facts: &HostFacts,
    learner_index: Option<u32>,
    collector_index: Option<u32>,
    findings: &mut Findings,
) -> HostChecks {
    let mut host = HostChecks::default();
    if findings.settled() {
        return host;
    }
    host.identity = check_identity(facts, learner_index, collector_index, findings);
    if findings.settled() {
        return host;
    }
    let (pin, directory) = (host.identity.pin(), facts.env.pipe_directory());
    host.pipe = check_pipe(facts, &directory, pin, findings);
    if findings.settled() {
        return host;
    }
    host.server_pid = check_daemon(facts, &directory, pin, findings);
    host.daemon_pid = daemon::daemon_pid(facts.pid_file.as_ref());
    host
}

/// `cuda:<index>`, for the evidence; the usual one-digit indices without `format!`.
fn cuda_device(index: u32) -> String {
    const ONE_DIGIT: [&str; 10] = [
        "cuda:0", "cuda:1", "cuda:2", "cuda:3", "cuda:4", "cuda:5", "cuda:6", "cuda:7", "cuda:8",
        "cuda:9",
    ];
    usize::try_from(index)
        .ok()
        .and_then(|i| ONE_DIGIT.get(i))
        .map_or_else(|| format!("cuda:{index}"), |device| (*device).to_owned())
}

fn check_backend(request: &Request, findings: &mut Findings) {
    if request
        .supported_backends
        .iter()
        .any(|b| same_backend(b, &request.backend))
    {
        return;
    }
    findings.push(|| backend_finding(request));
}

/// The finding for a backend that is not supported.
fn backend_finding(request: &Request) -> Finding {
    let supported: Vec<String> = request
        .supported_backends
        .iter()
        .map(|b| normalise_backend(b))
        .collect();
    let is_default = supported.len() == 1
        && supported.first().map(String::as_str) == Some(crate::DEFAULT_SUPPORTED_BACKEND);
    let (message, fix) = if is_default {
        (
            format!(
                "{MPS} supports only the mjwarp backend in this release; got training.sim_backend={}. Use training.sim_backend='mjwarp', or set training.cuda_process_sharing to null.",
                repr(&request.backend)
            ),
            "use training.sim_backend='mjwarp', or set training.cuda_process_sharing to null"
                .to_owned(),
        )
    } else if supported.is_empty() {
        (
            format!(
                "{MPS} supports only the configured backends, and none is configured; got training.sim_backend={}. Configure the supported backends, or set training.cuda_process_sharing to null.",
                repr(&request.backend)
            ),
            "configure the supported backends, or set training.cuda_process_sharing to null"
                .to_owned(),
        )
    } else {
        let list = supported
            .iter()
            .map(|b| repr(b))
            .collect::<Vec<_>>()
            .join(", ");
        (
            format!(
                "{MPS} supports only the configured backends {list}; got training.sim_backend={}. Use one of them, or set training.cuda_process_sharing to null.",
                repr(&request.backend)
            ),
            format!("use one of the backends {list}, or set training.cuda_process_sharing to null"),
        )
    };
    Finding::new(
        Code::UnsupportedBackend,
        message,
        format!("backend {}", repr(&request.backend)),
        fix,
    )
}

fn device_index(role: Role, device: &str, findings: &mut Findings) -> Option<u32> {
    match parse_cuda_index(device) {
        Ok(index) => Some(index),
        Err(error) => {
            findings.push(|| device_finding(role, device, error));
            None
        }
    }
}

/// The finding for a device string that is not a usable CUDA device.
fn device_finding(role: Role, device: &str, error: DeviceError) -> Finding {
    let field = format!("{}_device", role.name());
    match error {
        DeviceError::NotCuda => Finding::new(
            Code::NotCudaDevice,
            format!(
                "{MPS} requires CUDA learner and collector devices; got {field}={}. Use cuda or cuda:<index> for both.",
                repr(device)
            ),
            format!("{field}={}", repr(device)),
            format!("set {field} to cuda or cuda:<index>"),
        ),
        DeviceError::InvalidIndex => Finding::new(
            Code::InvalidCudaDevice,
            format!(
                "{MPS} received invalid CUDA device {} for {field}; a CUDA device is cuda or cuda:<index> with a plain decimal index.",
                repr(device)
            ),
            format!("{field}={}", repr(device)),
            format!("set {field} to cuda:<decimal index>, for example cuda:0"),
        ),
    }
}

/// Resolves both physical GPUs (deliberate change 1: the learner's from the caller-supplied
/// UUID or, like the collector's, from `CUDA_VISIBLE_DEVICES` and the host table; nothing
/// initialises CUDA) and checks they are one.
fn check_identity(
    facts: &HostFacts,
    learner_index: Option<u32>,
    collector_index: Option<u32>,
    findings: &mut Findings,
) -> Identity {
    let table = gpu::host_table(facts.gpu_query.as_ref());
    let visible = gpu::visible(&facts.env, &table);
    let resolve = |index| visible.as_ref().map_err(Clone::clone)?.uuid(index);
    let mut identity = Identity::default();
    let mut learner_failure = None;
    if let Some(index) = learner_index {
        match &facts.learner_uuid {
            Some(supplied) => match GpuUuid::parse(supplied) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(err) => findings.push(|| Finding::new(
                    Code::LearnerUuidUnresolved,
                    format!(
                        "{SHARING} could not resolve the learner CUDA device UUID: the supplied learner UUID {} is not a GPU UUID ({err}). Pass the UUID the learner's CUDA runtime reports (GPU-…), or none to resolve it from CUDA_VISIBLE_DEVICES.",
                        repr(supplied)
                    ),
                    format!("learner UUID {}", repr(supplied)),
                    "pass the learner's GPU UUID as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".to_owned(),
                )),
            },
            None => match resolve(index) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(failure) => {
                    findings.push(|| gpu_finding(Role::Learner, index, &failure));
                    learner_failure = Some(failure);
                }
            },
        }
    }
    if let Some(index) = collector_index {
        match resolve(index) {
            Ok(uuid) => identity.collector = Some(uuid),
            Err(failure) => {
                // One host-level problem (no table, a mask that hides every GPU, a MIG mask, an
                // untrusted order, an odd record) is one unmet prerequisite, even though both
                // devices hit it. An index out of range is about the device, so it is kept.
                let same_cause = learner_failure.as_ref() == Some(&failure)
                    && !matches!(failure, Failure::OutOfRange(_));
                if !same_cause {
                    findings.push(|| gpu_finding(Role::Collector, index, &failure));
                }
            }
        }
    }
    if let (Some(learner), Some(collector)) = (identity.learner, identity.collector)
        && learner != collector
    {
        findings.push(|| different_gpus(learner, collector));
    }
    identity
}

/// The finding for two devices that resolve to two physical GPUs.
fn different_gpus(learner: GpuUuid, collector: GpuUuid) -> Finding {
    let (l, c) = (learner.canonical_token(), collector.canonical_token());
    Finding::new(
        Code::DifferentGpus,
        format!(
            "{MPS} requires the learner and collector to share one physical GPU. Resolved UUIDs: learner={}, collector={}. Give both processes the same GPU, ideally as CUDA_VISIBLE_DEVICES={learner}.",
            repr(&l),
            repr(&c)
        ),
        format!("learner={learner}, collector={collector}"),
        format!(
            "run both processes on one GPU, e.g. with CUDA_VISIBLE_DEVICES={learner} and device cuda:0"
        ),
    )
}

/// `text` without a trailing period, so it can be followed by ". ".
fn clause(text: &str) -> &str {
    text.trim_end().trim_end_matches('.')
}

/// The finding for a device whose GPU could not be resolved.
fn gpu_finding(role: Role, index: u32, failure: &Failure) -> Finding {
    let device = format!("cuda:{index}");
    let code = failure.code(role);
    let mut found = failure.describe();
    if let (Role::Collector, Failure::OutOfRange(_)) = (role, failure) {
        found = format!("{device} is out of range; {found}");
    }
    let what = clause(&found);
    let (message, fix) = match (code, failure) {
        (Code::MigVisibilityUnsupported, _) => (
            format!(
                "{MPS} cannot map the {} device {device} to a physical GPU: {what}.",
                role.name()
            ),
            "set CUDA_VISIBLE_DEVICES to a full GPU UUID (GPU-…), or unset it".to_owned(),
        ),
        (Code::AmbiguousDeviceOrder, _) => (
            format!(
                "{MPS} cannot trust index-based device mapping for the {} device {device}: {what}, so CUDA's device order may differ from nvidia-smi's. Set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or export CUDA_DEVICE_ORDER=PCI_BUS_ID.",
                role.name()
            ),
            "set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or export CUDA_DEVICE_ORDER=PCI_BUS_ID".to_owned(),
        ),
        (Code::InconsistentSnapshot, _) => (
            format!("{MPS} cannot use this host snapshot: {what}. Capture the host again with mps-preflight."),
            "capture the host again with mps-preflight".to_owned(),
        ),
        (Code::CudaUnavailable, Failure::NoneVisible(_)) => (
            format!(
                "{SHARING} requires CUDA, but CUDA is unavailable for the learner device {device}: {what}. Set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…) or unset it."
            ),
            "set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or unset it".to_owned(),
        ),
        (Code::CudaUnavailable, _) => (
            format!(
                "{SHARING} requires CUDA, but CUDA is unavailable for the learner device {device}: {what}. Check the NVIDIA driver with `nvidia-smi`, or pass the learner's GPU UUID."
            ),
            "check the NVIDIA driver with `nvidia-smi`, or pass the learner's GPU UUID".to_owned(),
        ),
        (Code::DeviceOutOfRange, _) => (
            format!(
                "{SHARING} learner device {device} is out of range; {what}. Use a smaller index, or widen CUDA_VISIBLE_DEVICES."
            ),
            "use an index below the number of visible GPUs, or widen CUDA_VISIBLE_DEVICES".to_owned(),
        ),
        _ => (
            format!(
                "{MPS} could not resolve the collector CUDA UUID for '{device}' ({what}); run nvidia-smi --query-gpu=index,uuid --format=csv and verify the rank-local mask."
            ),
            "run nvidia-smi --query-gpu=index,uuid --format=csv and verify the rank-local CUDA_VISIBLE_DEVICES".to_owned(),
        ),
    };
    Finding::new(code, message, found, fix)
}

/// The pipe facts that made it into the evidence.
struct PipeEvidence {
    directory: String,
    path: String,
    kind: &'static str,
}

impl PipeEvidence {
    /// The evidence's `pipe_directory`, `control_pipe` and `control_pipe_kind`, moved out.
    fn fields(pipe: Option<Self>) -> (Option<String>, Option<String>, Option<String>) {
        match pipe {
            Some(Self {
                directory,
                path,
                kind,
            }) => (Some(directory), Some(path), Some(kind.to_owned())),
            None => (None, None, None),
        }
    }
}

fn inconsistent(what: String) -> Finding {
    Finding::new(
        Code::InconsistentSnapshot,
        format!(
            "{MPS} cannot use this host snapshot: {what}. Capture the host again with mps-preflight."
        ),
        what,
        "capture the host again with mps-preflight".to_owned(),
    )
}

fn describe_kind(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Socket => "a Unix socket",
        FileKind::Fifo => "a FIFO",
        FileKind::Regular => "a regular file",
        FileKind::Directory => "a directory",
        FileKind::Symlink => "a symbolic link",
        FileKind::CharDevice => "a character device",
        FileKind::BlockDevice => "a block device",
        FileKind::Missing => "missing",
        FileKind::Unknown => "unknown",
    }
}

fn describe_owner(pipe: &PipeFacts) -> String {
    let mode = pipe
        .stat
        .mode
        .or(pipe.lstat.mode)
        .map_or_else(|| "unknown".to_owned(), |m| format!("{m:04o}"));
    let owner = pipe
        .stat
        .uid
        .or(pipe.lstat.uid)
        .map_or_else(|| "unknown".to_owned(), |u| u.to_string());
    let user = pipe
        .access
        .uid
        .map_or_else(|| "unknown".to_owned(), |u| u.to_string());
    format!("mode {mode}, owner uid {owner}, probing uid {user}")
}

/// The finding for a pipe directory that is not UTF-8.
fn non_utf8_directory(directory_raw: &OsText) -> Finding {
    let lossy = directory_raw.to_string_lossy();
    Finding::new(
        Code::NonUtf8PipeDirectory,
        format!(
            "{MPS} cannot use CUDA_MPS_PIPE_DIRECTORY={}: it is not valid UTF-8. Use a UTF-8 path for the daemon's pipe directory.",
            repr(&lossy)
        ),
        format!("CUDA_MPS_PIPE_DIRECTORY={}", repr(&lossy)),
        "export CUDA_MPS_PIPE_DIRECTORY=<a UTF-8 path> for the daemon and both processes"
            .to_owned(),
    )
}

/// The command that starts a daemon on `directory` with `env`'s log directory, pinned to the
/// GPU when it is known (the control pipe's and the daemon's messages both suggest it).
fn start_command(directory: &str, env: &EnvFacts, pin: Option<GpuUuid>) -> String {
    let pin = pin.map(|uuid| {
        let mut text = String::with_capacity(40);
        uuid.push_to(&mut text);
        text
    });
    start::render(
        directory,
        env.cuda_mps_log_directory.as_ref(),
        pin.as_deref(),
    )
}

/// `<directory>/control` as text: `facts::join`, which adds a `/` unless there is one.
fn control_path(directory: &str) -> String {
    let name = crate::CONTROL_PIPE_NAME;
    let mut path = String::with_capacity(directory.len() + 1 + name.len());
    path.push_str(directory);
    if !path.ends_with('/') {
        path.push('/');
    }
    path.push_str(name);
    path
}

/// The control pipe: path length (deliberate change 5), presence, kind, access.
fn check_pipe(
    facts: &HostFacts,
    directory_raw: &OsText,
    pin: Option<GpuUuid>,
    findings: &mut Findings,
) -> Option<PipeEvidence> {
    let env = &facts.env;
    let Some(directory) = directory_raw.as_str() else {
        findings.push(|| non_utf8_directory(directory_raw));
        return None;
    };
    let path = control_path(directory);
    let start = || start_command(directory, env, pin);
    let Some(pipe) = &facts.control_pipe else {
        findings.push(|| {
            let start = start();
            Finding::new(
                Code::ControlPipeMissing,
                [
                    MPS,
                    " found no control pipe at ",
                    &path,
                    ": the snapshot holds no observation of it. Capture the host again, or start a control daemon with: ",
                    &start,
                ]
                .concat(),
                "the control pipe was not observed".to_owned(),
                start,
            )
        });
        return None;
    };
    let same_path = matches!(&pipe.path, OsText::Text(recorded) if *recorded == path);
    if pipe.directory != *directory_raw || !same_path {
        findings.push(|| {
            inconsistent(format!(
                "its control pipe record is for {}, but the effective control pipe is {}",
                repr(&pipe.path.to_string_lossy()),
                repr(&path)
            ))
        });
        return None;
    }
    if path.len() > MAX_SOCKET_PATH {
        findings.push(|| Finding::new(
            Code::ControlPathTooLong,
            format!(
                "{MPS} cannot use control pipe {path}: the path is {} bytes, longer than a Unix socket path allows ({MAX_SOCKET_PATH} bytes), so no daemon can listen there. Use a shorter CUDA_MPS_PIPE_DIRECTORY (for example /tmp/nvidia-mps).",
                path.len()
            ),
            format!("a {}-byte control path", path.len()),
            "export CUDA_MPS_PIPE_DIRECTORY=<a directory whose control path fits in 107 bytes> for the daemon and both processes".to_owned(),
        ));
        if findings.settled() {
            return None;
        }
    }
    match examine(pipe, &path, &start) {
        Ok(kind) => Some(PipeEvidence {
            directory: directory.to_owned(),
            path,
            kind,
        }),
        Err(finding) => {
            findings.push(|| finding);
            None
        }
    }
}

/// Presence, kind and access of an observed control pipe: its kind for the evidence, or the
/// first problem.
fn examine(
    pipe: &PipeFacts,
    path: &str,
    start: &dyn Fn() -> String,
) -> Result<&'static str, Finding> {
    let kind = match (pipe.lstat.kind, pipe.stat.kind) {
        (FileKind::Missing, _) | (FileKind::Symlink, FileKind::Missing) => {
            let dangling = if pipe.lstat.kind == FileKind::Symlink {
                " (a dangling symbolic link)"
            } else {
                ""
            };
            let start = start();
            return Err(Finding::new(
                Code::ControlPipeMissing,
                [
                    MPS,
                    " found no control pipe at ",
                    path,
                    dangling,
                    ". Start a control daemon with: ",
                    &start,
                ]
                .concat(),
                ["nothing at ", path, dangling].concat(),
                start,
            ));
        }
        (FileKind::Unknown, _) | (_, FileKind::Unknown) => {
            let error = pipe
                .lstat
                .error
                .as_deref()
                .or(pipe.stat.error.as_deref())
                .unwrap_or("unknown error");
            return Err(access_finding(
                path,
                &format!("it could not be examined: {error}"),
                pipe,
            ));
        }
        (_, FileKind::Socket) => "unix_socket",
        (_, FileKind::Fifo) => "fifo",
        (_, other) => {
            let start = start();
            return Err(Finding::new(
                Code::NotAControlPipe,
                [
                    MPS,
                    " requires a live control socket or FIFO at ",
                    path,
                    "; that path is not a daemon control pipe (it is ",
                    describe_kind(other),
                    "). Move it aside and start a control daemon with: ",
                    &start,
                ]
                .concat(),
                [path, " is ", describe_kind(other)].concat(),
                ["move ", &crate::shell_quote(path), " aside, then: ", &start].concat(),
            ));
        }
    };
    let traversable = pipe.access.directory_traversable;
    let read_write = pipe.access.read_write;
    if traversable != Some(true) || read_write != Some(true) {
        let why = match (traversable, read_write) {
            (Some(false), _) => "its directory cannot be searched by the launching user".to_owned(),
            (_, Some(false)) => "the launching user cannot read and write it".to_owned(),
            _ => format!(
                "access was not established{}",
                pipe.access
                    .error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ),
        };
        return Err(access_finding(path, &why, pipe));
    }
    Ok(kind)
}

fn access_finding(path: &str, why: &str, pipe: &PipeFacts) -> Finding {
    let found = [why, "; ", &describe_owner(pipe)].concat();
    Finding::new(
        Code::ControlPipeInaccessible,
        [
            MPS,
            " cannot access control pipe ",
            path,
            "; the launching user must be able to read and write the daemon's explicitly owned pipe directory (",
            &found,
            "). Run as the daemon's user, or give the launching user access to the pipe directory.",
        ]
        .concat(),
        found,
        "run as the daemon's user, or give the launching user search access to the pipe directory and read-write access to its control socket".to_owned(),
    )
}

/// The daemon's answer (deliberate change 4: live = a read-only query exited 0 in time).
fn check_daemon(
    facts: &HostFacts,
    directory: &OsText,
    pin: Option<GpuUuid>,
    findings: &mut Findings,
) -> Option<i64> {
    let env = &facts.env;
    let status = daemon::status(facts.daemon_query.as_ref(), directory.as_bytes());
    if let DaemonStatus::Live { server_pid } = status {
        return server_pid;
    }
    // Only a daemon that did not answer needs the messages below. A lossy directory joins as
    // its bytes do (U+FFFD is never `/`).
    let directory = directory.to_string_lossy();
    let path = control_path(&directory);
    let start = start_command(&directory, env, pin);
    let verify = ["Verify the daemon and retry: ", &start].concat();
    let (code, reason, fix) = match status {
        DaemonStatus::Live { server_pid } => return server_pid,
        DaemonStatus::NotTheProbe(why) => {
            findings.push(|| inconsistent(why));
            return None;
        }
        DaemonStatus::NotQueried => (Code::DaemonUnreachable, "the snapshot holds no daemon query".to_owned(), verify),
        DaemonStatus::SpawnFailed(error) => (
            Code::DaemonUnreachable,
            format!("{} could not be started: {error}", crate::DAEMON_QUERY_PROGRAM),
            "Install the NVIDIA CUDA MPS tools so that nvidia-cuda-mps-control is on PATH, then retry.".to_owned(),
        ),
        DaemonStatus::NoAnswer(detail) => (Code::DaemonUnreachable, detail, verify),
        DaemonStatus::TimedOut { timeout_ms } => (
            Code::DaemonTimedOut,
            format!("the query did not answer within {timeout_ms} ms; the daemon may be stopped (SIGSTOP) or wedged"),
            format!(
                "Check the daemon process's state (ps -o pid,stat,cmd -C nvidia-cuda-mps-control); resume or restart it as its owner, then retry. To start a fresh one: {start}"
            ),
        ),
        DaemonStatus::Unrecognized(detail) => (
            Code::DaemonAnswerUnrecognized,
            format!("it answered in a way this validator does not recognise ({detail})"),
            format!(
                "Check the daemon by hand: printf 'get_default_active_thread_percentage\\n' | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control",
                crate::shell_quote(&directory)
            ),
        ),
    };
    findings.push(|| {
        // Text-only messages are joined with `concat` (one exact allocation), not `format!`.
        let message = [
            MPS,
            " could not reach the control daemon through ",
            &path,
            ": ",
            clause(&reason),
            ". ",
            &fix,
        ]
        .concat();
        Finding::new(code, message, reason, fix)
    });
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn control_path_joins_lossy_text_as_bytes_join(bytes in proptest::collection::vec(
            // `/`, ASCII, and bytes that start, continue or break a UTF-8 sequence.
            proptest::sample::select(vec![b'/', b'a', 0xc3, 0xa9, 0xe2, 0x82, 0xff]), 0..12)) {
            let directory = OsText::from_bytes(bytes);
            let joined = crate::facts::join(&directory, crate::CONTROL_PIPE_NAME);
            proptest::prop_assert_eq!(
                control_path(&directory.to_string_lossy()),
                joined.to_string_lossy()
            );
        }
    }

    #[test]
    fn cuda_device_writes_any_index() {
        for index in [0, 1, 7, 9, 10, 42, 100, u32::MAX] {
            assert_eq!(cuda_device(index), format!("cuda:{index}"));
        }
    }
}
