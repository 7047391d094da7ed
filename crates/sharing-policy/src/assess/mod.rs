//! The ordered checks of an explicit request. `validate` reports the first finding, `explain`
//! all of them; both come from this one walk, so they cannot disagree. `validate` stops the
//! walk at its first finding ([`Wanted::First`]), so a rejection builds one message.
//!
//! Each family of prerequisites has its own module, in the order of the walk: the request
//! (`request`), the GPU identity (`identity`), the control pipe (`pipe`), the daemon's answer
//! (`liveness`), then what "served" needs: the daemon's identity (`daemon_identity`), its GPU
//! scope (`scope`), the servers'
//! owner (`owner`), the GPU's health (`health`), its compute mode (`compute`), the compute
//! processes holding it in `Exclusive_Process` (`apps`) and persistence mode (`health`); last, what the processes will be served with (`limits`: the server's
//! state, the daemon's defaults against stated minimums), what the daemon's own log says of
//! its servers (`log`), whether the clients share the daemon's `/dev/shm` and it has room
//! (`shm`), whether the judged user's server can reach the pipe directory (`reach`), and the
//! capacity advisories (`capacity`), which never reject.

mod answers;
mod apps;
mod capacity;
mod clients;
mod compute;
mod daemon_identity;
mod health;
mod identity;
mod limits;
mod liveness;
mod log;
mod message;
mod owner;
mod pipe;
mod reach;
mod request;
mod scope;
mod server_limits;
mod shm;

use gpu_uuid::{GpuTableView, GpuUuid};

use crate::gpu;
use crate::served::{self, DaemonProcess, ServedFacts};
use crate::{Code, Evidence, Finding, HostFacts, OsText, Request, Vocabulary};
use pipe::PipeEvidence;

use message::{control_path, inconsistent, start_command};
pub(crate) use pipe::MAX_SOCKET_PATH;

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
    /// The words of every message of this walk (the request's).
    words: Vocabulary,
    first: Option<Finding>,
    rest: Vec<Finding>,
}

impl Findings {
    fn new(wanted: Wanted, words: Vocabulary) -> Self {
        Self {
            wanted,
            words,
            first: None,
            rest: Vec::new(),
        }
    }

    /// Whether any prerequisite is unmet so far.
    fn any(&self) -> bool {
        self.first.is_some()
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

/// Walks the prerequisites of an explicit request in the seed's order: the evidence and the
/// warnings (what could not be verified) when every one is proven, else the unmet ones (only
/// the first when that is all the caller wants).
#[expect(
    clippy::result_large_err,
    reason = "once per walk, and the evidence on the Ok side is larger still"
)]
pub(crate) fn explicit(
    request: &Request,
    facts: &HostFacts,
    wanted: Wanted,
) -> Result<(Evidence, Vec<Finding>), Unmet> {
    let mut findings = Findings::new(wanted, request.vocabulary);
    let checked = request::check(request, facts, &mut findings);
    let host = if checked.schema_ok {
        check_host(request, facts, &checked, &mut findings)
    } else {
        HostChecks::default()
    };
    findings.into_unmet()?;

    let (pipe_directory, control_pipe, control_pipe_kind) = PipeEvidence::fields(host.pipe);
    let served = host.served;
    let evidence = Evidence {
        configured: Some("mps".to_owned()),
        effective: Some("mps".to_owned()),
        validated: true,
        rank: request.rank,
        world_size: request.world_size,
        learner_device: checked.learner_index.map(cuda_device),
        collector_device: checked.collector_index.map(cuda_device),
        learner_gpu_uuid: host.identity.learner.map(|u| u.canonical_token()),
        collector_gpu_uuid: host.identity.collector.map(|u| u.canonical_token()),
        pipe_directory_env: facts
            .env
            .cuda_mps_pipe_directory
            .as_ref()
            .map(OsText::to_string_lossy),
        pipe_directory,
        control_pipe,
        control_pipe_kind,
        server_pid: host.server_pid,
        ambient_server: false,
        daemon_pid: host.daemon_pid.or(served.facts.daemon_pid),
        caller_uid: served.facts.caller_uid,
        judged_for_uid: request.judged_for_uid(facts),
        server_uids: served.facts.server_uids,
        daemon_visible_devices: served.facts.daemon_visible_devices,
        daemon_multiuser: served.facts.daemon_multiuser,
        compute_mode: served.facts.compute_mode,
        driver_version: served.facts.driver_version,
        unverified: served.unverified,
        host_name: facts.host_name.as_ref().map(OsText::to_string_lossy),
        default_active_thread_percentage: mps_protocol::default_percentage(
            facts.daemon_query.as_ref(),
        ),
        default_pinned_mem_limit: host.limits.pinned_mem_limit,
        server_status: host.limits.server_status,
        daemon_log: host.log.path,
        last_server_ready: host.log.last_ready,
        server_clients: host.limits.client_pids.as_ref().map(Vec::len),
        server_client_pids: host.limits.client_pids,
        server_active_thread_percentage: host.limits.server_percentage,
        server_pinned_mem_limit: host.limits.server_pinned_mem_limit,
        shm_free_bytes: host.shm.free_bytes,
        shm_total_bytes: host.shm.total_bytes,
        advisories: served.advisories,
        gpu_compute_processes: host.compute_apps,
        server_client_limit: host.limits.client_limit,
        pipe_access: host.reach.map(str::to_owned),
    };
    Ok((evidence, served.warnings))
}

/// What the host checks established, for the evidence.
#[derive(Default)]
struct HostChecks {
    identity: Identity,
    pipe: Option<PipeEvidence>,
    server_pid: Option<i64>,
    daemon_pid: Option<i64>,
    served: Served,
    limits: limits::LimitsEvidence,
    log: log::LogEvidence,
    shm: shm::ShmEvidence,
    /// The compute processes found on the GPU, when the compute-apps query was needed and read.
    compute_apps: Option<usize>,
    /// How the judged user's reach of the pipe directory was proven, if it was.
    reach: Option<&'static str>,
}

/// What the "served" families established: the facts, and what could not be verified.
#[derive(Default)]
struct Served {
    facts: ServedFacts,
    /// The codes of the unverified prerequisites, in order.
    unverified: Vec<Code>,
    /// The same, as findings that say how to verify each (`doctor`'s warnings), and the
    /// advisories.
    warnings: Vec<Finding>,
    /// The codes of the advisories ([`Code::ADVISORY`]), in order.
    advisories: Vec<Code>,
}

impl Served {
    /// Records an unverified prerequisite: a warning, or a rejection under
    /// `--require-verified`.
    fn unverified(&mut self, request: &Request, findings: &mut Findings, finding: Finding) {
        if request.require_verified {
            findings.push(|| finding);
        } else {
            self.unverified.push(finding.code);
            self.warnings.push(finding);
        }
    }

    /// Records an advisory warning ([`Code::ADVISORY`]) read from the daemon's log: what may
    /// explain a later failure.
    fn note(&mut self, finding: Finding) {
        self.advise(finding);
    }

    /// Records an advisory ([`Code::ADVISORY`]): a warning and an entry of the evidence's
    /// `advisories`, never a rejection, not even under `--require-verified`.
    fn advise(&mut self, finding: Finding) {
        self.advisories.push(finding.code);
        self.warnings.push(finding);
    }
}

/// What the "served" families look at: the proven GPU and the daemon that answered.
struct Context<'a> {
    request: &'a Request,
    facts: &'a HostFacts,
    table: &'a GpuTableView<'a>,
    gpu: GpuUuid,
    directory: &'a OsText,
    daemon: DaemonProcess<'a>,
}

impl Context<'_> {
    /// The words of the messages.
    fn words(&self) -> Vocabulary {
        self.request.vocabulary
    }

    /// `<directory>/control`, for messages.
    fn control_path(&self) -> String {
        control_path(&self.directory.to_string_lossy())
    }

    /// The command that starts a daemon for this GPU on this pipe directory.
    fn start(&self) -> String {
        start_command(
            &self.directory.to_string_lossy(),
            &self.facts.env,
            Some(self.gpu),
        )
    }
}

/// The checks of a snapshot's host facts, in order: the GPUs, the control pipe, the daemon,
/// then whether that daemon will serve both processes on that GPU (scope, servers' owner,
/// compute mode). Each is skipped once the caller has the findings it wants; the served
/// checks run only once everything before them is proven, since they depend on it.
fn check_host(
    request: &Request,
    facts: &HostFacts,
    checked: &request::Checked,
    findings: &mut Findings,
) -> HostChecks {
    let mut host = HostChecks::default();
    if findings.settled() {
        return host;
    }
    let text = gpu::host_text(facts);
    let table = gpu::parse_table(&text);
    host.identity = identity::check(
        facts,
        &text,
        &table,
        checked.learner_index,
        checked.collector_index,
        findings,
    );
    if findings.settled() {
        return host;
    }
    let (pin, directory) = (host.identity.pin(), facts.env.pipe_directory());
    host.pipe = pipe::check(facts, &directory, pin, findings);
    if findings.settled() {
        return host;
    }
    host.server_pid = liveness::check(facts, &directory, pin, findings);
    host.daemon_pid = served::pid_file_claim(facts);
    let (Some(gpu), Ok(table), false) = (pin, &table, findings.any()) else {
        return host;
    };
    host.served.facts = served::served_facts(facts, &text, pin, directory.as_bytes());
    let context = Context {
        request,
        facts,
        table,
        gpu,
        directory: &directory,
        daemon: served::identify(facts, directory.as_bytes()),
    };
    daemon_identity::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    scope::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    owner::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    health::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    compute::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    host.compute_apps = apps::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    health::persistence(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    host.limits = limits::check(&context, &mut host.served, findings);
    if findings.settled() {
        return host;
    }
    host.log = log::check(&context, &mut host.served, findings);
    host.shm = shm::check(&context, &mut host.served, findings);
    if !findings.settled() {
        host.reach = reach::check(&context, &mut host.served, findings);
    }
    capacity::check(&context, &mut host.served);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_device_writes_any_index() {
        for index in [0, 1, 7, 9, 10, 42, 100, u32::MAX] {
            assert_eq!(cuda_device(index), format!("cuda:{index}"));
        }
    }
}
