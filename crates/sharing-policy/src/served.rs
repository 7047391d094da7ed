//! Interpreting schema v2's process facts (docs/mps-daemon.md §5, "the two processes will share one GPU
//! through it"): the listed servers' owners, the control daemon's process, its GPU scope and
//! whether it runs in multi-user mode. Pure: everything comes from the snapshot.

use gpu_uuid::{GpuTableView, GpuUuid, ResolveError, VisibleDevices, VisibleEntry};

use crate::daemon::{self, DaemonStatus};
use crate::gpu::{HealthRejected, ReadError, TableText};
use crate::proc_text::FileUnread;
pub(crate) use crate::proc_text::effective_uid;
use crate::{
    DAEMON_QUERY_PROGRAM, DEFAULT_PIPE_DIRECTORY, DaemonSearch, DaemonSearchMethod, HostFacts,
    OsText, PidFileFacts, ProcessFacts, QueryRecord, parse_pid,
};

/// The server PIDs a live daemon's answer lists, in order (none when the daemon did not answer
/// live, or answered with an idle server list). `mps-host` calls this to know which `/proc`
/// entries to record; the decision of what the answer means stays here.
///
/// ```
/// use std::collections::BTreeMap;
/// use sharing_policy::{listed_server_pids, probe_stdin, CapturedText, OsText, QueryOutcome, QueryRecord, DAEMON_PROBE};
///
/// let record = QueryRecord {
///     program: "nvidia-cuda-mps-control".into(),
///     args: vec![],
///     stdin: probe_stdin(&DAEMON_PROBE),
///     env: BTreeMap::new(),
///     env_removed: vec![],
///     timeout_ms: 5000,
///     elapsed_ms: 3,
///     outcome: QueryOutcome::Exited {
///         code: Some(0),
///         signal: None,
///         stdout: CapturedText::from_bytes(b"100.0\n4428\n4511\n", false),
///         stderr: CapturedText::default(),
///     },
///     earlier_attempts: vec![],
/// };
/// assert_eq!(listed_server_pids(&record, &OsText::from("/tmp/nvidia-mps")), [4428, 4511]);
/// ```
pub fn listed_server_pids(record: &QueryRecord, pipe_directory: &OsText) -> Vec<i64> {
    server_pids(Some(record), pipe_directory.as_bytes())
}

pub(crate) fn server_pids(record: Option<&QueryRecord>, pipe_directory: &[u8]) -> Vec<i64> {
    let Some(record) = record else {
        return Vec::new();
    };
    if !matches!(
        daemon::status(Some(record), pipe_directory),
        DaemonStatus::Live { .. }
    ) {
        return Vec::new();
    }
    if let Some(answers) = daemon::session_answers(record) {
        return answers
            .into_iter()
            .find(|(command, _)| *command == crate::ReadOnlyCommand::GetServerList)
            .map_or_else(Vec::new, |(_, lines)| {
                lines.into_iter().filter_map(parse_pid).collect()
            });
    }
    match &record.outcome {
        crate::QueryOutcome::Exited { stdout, .. } => {
            // The reference's query has no liveness line before the PIDs.
            let skipped = usize::from(!crate::daemon::reference::is_reference(record));
            stdout
                .text
                .lines()
                .skip(skipped)
                .filter_map(parse_pid)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The control daemon's PID from its pid file, when that names a live control daemon (the
/// rule [`validate`](crate::validate) applies for `daemon_pid`). `mps-host` calls this to
/// decide whether a `/proc` scan is needed.
pub fn pid_file_daemon_pid(pid_file: &PidFileFacts) -> Option<i64> {
    daemon::daemon_pid(Some(pid_file))
}

/// The PID of the control daemon the lock proves (the identified daemon, with a lock
/// observed), for `mps-host` to read that process's `/dev/shm` and limits; `None` when no
/// daemon is proven by its lock (a pid file or a scan proves nothing here).
pub fn proven_daemon_pid(facts: &HostFacts) -> Option<i64> {
    let locked = facts
        .daemon_process
        .as_ref()
        .is_some_and(|search| search.lock.is_some());
    let directory = facts.env.effective_pipe_directory();
    match (locked, identify(facts, directory.as_bytes())) {
        (true, DaemonProcess::Found(process)) => Some(process.pid),
        _ => None,
    }
}

/// The daemon PID the evidence may take from the pid file alone: none once the lock was
/// observed (then only the process the lock proves is the daemon, and [`served_facts`] names
/// it), the pid file's live control daemon in a snapshot recorded before that.
pub(crate) fn pid_file_claim(facts: &HostFacts) -> Option<i64> {
    let locked = facts
        .daemon_process
        .as_ref()
        .is_some_and(|search| search.lock.is_some());
    if locked {
        None
    } else {
        daemon::daemon_pid(facts.pid_file.as_ref())
    }
}

/// The pid file, as a corroboration of a live idle daemon for the reference's query: as
/// recorded in a snapshot from before the lock was observed; once it was, only when the lock
/// proves the process the pid file names (a pid file any user can write proves nothing alone).
pub(crate) fn corroborating_pid_file(facts: &HostFacts) -> Option<&PidFileFacts> {
    let pid_file = facts.pid_file.as_ref()?;
    let Some(lock) = facts.daemon_process.as_ref().and_then(|s| s.lock.as_ref()) else {
        return Some(pid_file);
    };
    let named = daemon::daemon_pid(Some(pid_file))?;
    (crate::lock_holder_pid(lock) == Some(named)).then_some(pid_file)
}

/// The owner of one listed server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Its effective UID.
    Uid(u32),
    /// Why it is not known.
    Unknown(OwnerUnknown),
}

/// Why a listed server's owner is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OwnerUnknown {
    /// Its process was not observed.
    NotObserved,
    /// Another process runs under that number.
    NotAServer(crate::namespace::NotAServer),
    /// Its `/proc` status `Uid:` line, as recorded, does not parse.
    UidUnparsed(String),
    /// Its `/proc` status was not read.
    StatusUnread(FileUnread),
}

/// The owner of each listed server PID, in order.
pub(crate) fn server_owners(facts: &HostFacts, pids: &[i64]) -> Vec<(i64, Owner)> {
    pids.iter()
        .map(|&pid| {
            let process = facts
                .server_processes
                .as_ref()
                .and_then(|all| all.iter().find(|process| process.pid == pid));
            let owner = process.map_or(Owner::Unknown(OwnerUnknown::NotObserved), owner_of);
            (pid, owner)
        })
        .collect()
}

/// The owner of a listed server's recorded process.
fn owner_of(process: &ProcessFacts) -> Owner {
    // Another process under that number: its owner proves nothing.
    if let Some(why) = crate::namespace::not_a_server(process) {
        return Owner::Unknown(OwnerUnknown::NotAServer(why));
    }
    match process.status_uid.as_deref().map(effective_uid) {
        Some(Some(uid)) => Owner::Uid(uid),
        Some(None) => Owner::Unknown(OwnerUnknown::UidUnparsed(
            process.status_uid.clone().unwrap_or_default(),
        )),
        None => Owner::Unknown(OwnerUnknown::StatusUnread(FileUnread::of(
            process, "status",
        ))),
    }
}

/// The control daemon's process, or why it is not identified.
pub(crate) enum DaemonProcess<'a> {
    Found(&'a ProcessFacts),
    Unknown(NotIdentified<'a>),
}

/// Why the control daemon's process is not identified.
pub(crate) enum NotIdentified<'a> {
    /// The snapshot holds no observation of the daemon's process.
    NotObserved,
    /// The lock does not prove it.
    NotByLock(crate::daemon_identity::NotByLock),
    /// The pid file names this process, whose command line is not the control program (a
    /// stale pid file whose PID was reused).
    ReusedPid(&'a ProcessFacts),
    /// The pid file's daemon process was not observed.
    PidFileProcessNotObserved,
    /// What the scan of `/proc` recorded in `search` found.
    Scan {
        search: &'a DaemonSearch,
        found: ScanFound<'a>,
    },
}

/// What a scan of `/proc` found that leaves the daemon unidentified.
pub(crate) enum ScanFound<'a> {
    /// No control daemon serving this pipe directory.
    None,
    /// Control daemons whose environment was not read.
    Unreadable(Vec<&'a ProcessFacts>),
    /// Several control daemons serving this pipe directory.
    Several(Vec<&'a ProcessFacts>),
}

/// Whether `cmdline` is the control daemon run as a daemon, as one known version's option
/// parser reads it ([`mps_protocol::daemon_args`]: `-d`, `-f`, `--daemon`, `-dM`, …).
fn is_control_daemon(cmdline: &[OsText]) -> bool {
    mps_protocol::daemon_args::read(cmdline).is_some()
}

/// Whether the identified daemon's command line proves multi-user mode (`Some(true)`), proves
/// its absence (`Some(false)`), or leaves it unknown.
pub(crate) fn daemon_multiuser(daemon: &DaemonProcess<'_>) -> Option<bool> {
    match daemon {
        DaemonProcess::Found(process) => multiuser_of(process),
        DaemonProcess::Unknown(_) => None,
    }
}

/// Whether the daemon's process runs in multi-user mode: its command line says so and it runs
/// as root. The real 535 and 550 daemons started with `-d -M` by another user exit 1 at once
/// (docs/mps-daemon.md, "Identity"), so a non-root process whose argv reads `-M` is not a
/// multi-user daemon; an unreadable owner leaves it unknown.
pub(crate) fn multiuser_of(process: &ProcessFacts) -> Option<bool> {
    if !process.cmdline.as_deref().and_then(is_multiuser)? {
        return Some(false);
    }
    match process.status_uid.as_deref().map(effective_uid) {
        Some(Some(0)) => Some(true),
        Some(Some(_)) => Some(false),
        _ => None,
    }
}

/// Whether `cmdline` shows multi-user mode (`-M`, `-multiuser-server`, `--multiuser-server`,
/// 580's unique prefixes such as `-m`, combined `-dM`): `None` when no known parser reads it
/// as a control daemon, or when they disagree.
pub(crate) fn is_multiuser(cmdline: &[OsText]) -> Option<bool> {
    mps_protocol::daemon_args::read(cmdline).and_then(|daemon| daemon.multiuser)
}

/// Whether `cmdline`'s program is the control program (not a server, whose `comm` is the
/// same `nvidia-cuda-mps`).
pub(crate) fn is_control_program(cmdline: &[OsText]) -> bool {
    cmdline.first().is_some_and(|program| {
        program.as_bytes().rsplit(|b| *b == b'/').next() == Some(DAEMON_QUERY_PROGRAM.as_bytes())
    })
}

/// The pipe directory a process with this environment uses: a non-empty
/// `CUDA_MPS_PIPE_DIRECTORY`, else the default.
fn environ_pipe_directory(process: &ProcessFacts) -> Option<&[u8]> {
    let environ = process.environ.as_ref()?;
    Some(match environ.get("CUDA_MPS_PIPE_DIRECTORY") {
        Some(dir) if !dir.as_bytes().is_empty() => dir.as_bytes(),
        _ => DEFAULT_PIPE_DIRECTORY.as_bytes(),
    })
}

/// Identifies the control daemon serving `pipe_directory`: the pid file's live control daemon
/// (550+), else the one `/proc` process whose command line is the control daemon and whose
/// environment resolves to `pipe_directory`. Unreadable environments, several matches, or none
/// leave it unknown, with the reason.
pub(crate) fn identify<'a>(facts: &'a HostFacts, pipe_directory: &[u8]) -> DaemonProcess<'a> {
    identify_in(
        facts.daemon_process.as_ref(),
        facts.pid_file.as_ref(),
        pipe_directory,
    )
}

/// [`identify`] from the search and the pid file alone (`attest` records both too).
pub(crate) fn identify_in<'a>(
    search: Option<&'a DaemonSearch>,
    pid_file: Option<&PidFileFacts>,
    pipe_directory: &[u8],
) -> DaemonProcess<'a> {
    let Some(search) = search else {
        return DaemonProcess::Unknown(NotIdentified::NotObserved);
    };
    if let Some(lock) = &search.lock {
        return match crate::daemon_identity::by_lock(search, lock, pid_file) {
            Ok(process) => DaemonProcess::Found(process),
            Err(why) => DaemonProcess::Unknown(NotIdentified::NotByLock(why)),
        };
    }
    // A snapshot recorded before the lock was observed: judged by its witnesses, as then.
    if search.method == DaemonSearchMethod::PidFile {
        let pid = daemon::daemon_pid(pid_file);
        return match search.processes.iter().find(|p| Some(p.pid) == pid) {
            // A stale pid file can name a reused PID: an MPS server has the same comm.
            Some(process)
                if process
                    .cmdline
                    .as_deref()
                    .is_some_and(|c| !is_control_program(c)) =>
            {
                DaemonProcess::Unknown(NotIdentified::ReusedPid(process))
            }
            Some(process) => DaemonProcess::Found(process),
            None => DaemonProcess::Unknown(NotIdentified::PidFileProcessNotObserved),
        };
    }
    let daemons: Vec<&ProcessFacts> = search
        .processes
        .iter()
        .filter(|p| p.cmdline.as_deref().is_some_and(is_control_daemon))
        .collect();
    let ours: Vec<&ProcessFacts> = daemons
        .iter()
        .copied()
        .filter(|p| environ_pipe_directory(p) == Some(pipe_directory))
        .collect();
    let unreadable: Vec<&ProcessFacts> = daemons
        .iter()
        .copied()
        .filter(|p| p.environ.is_none())
        .collect();
    let found = match (ours.as_slice(), unreadable.is_empty()) {
        ([one], true) => return DaemonProcess::Found(one),
        ([], true) => ScanFound::None,
        (_, false) => ScanFound::Unreadable(unreadable),
        (_, true) => ScanFound::Several(ours),
    };
    DaemonProcess::Unknown(NotIdentified::Scan { search, found })
}

/// What the daemon's `CUDA_VISIBLE_DEVICES` says about one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The daemon was started without a mask: it serves every GPU.
    Unscoped,
    /// The mask (raw) includes the GPU, among `gpus` GPUs it serves.
    Covers { mask: String, gpus: usize },
    /// The mask (raw) does not include the GPU; the GPUs it serves.
    Excludes { mask: String, served: Vec<GpuUuid> },
    /// Not known, and why.
    Unknown(ScopeUnknown),
}

/// Why the daemon's GPU scope is not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScopeUnknown {
    /// The daemon's environment was not read.
    EnvironUnread(FileUnread),
    /// The daemon's `CUDA_VISIBLE_DEVICES` (shown lossily) is not UTF-8.
    NotUtf8(String),
    /// The daemon's mask cannot be placed on the host table.
    Unplaceable(ResolveError),
    /// The daemon's mask (shown) is made of indices, on a mixed-model host whose order the
    /// daemon's environment does not fix.
    IndicesOnMixedHost(String),
}

/// The daemon's GPU scope for `gpu`, from its recorded environment and the host table. An
/// index mask is mapped through the table only when the daemon's `CUDA_DEVICE_ORDER` is
/// `PCI_BUS_ID` or every GPU is the same model (the rule of the client's own mask).
pub(crate) fn scope(daemon: &ProcessFacts, table: &GpuTableView<'_>, gpu: GpuUuid) -> Scope {
    let Some(environ) = &daemon.environ else {
        let unread = FileUnread::of(daemon, "environ");
        return Scope::Unknown(ScopeUnknown::EnvironUnread(unread));
    };
    let Some(mask) = environ.get("CUDA_VISIBLE_DEVICES") else {
        return Scope::Unscoped;
    };
    let shown = mask.to_string_lossy();
    if mask.as_str().is_none() {
        return Scope::Unknown(ScopeUnknown::NotUtf8(shown));
    }
    let placement = match gpu_uuid::place(Some(mask.as_bytes()), table) {
        Ok(placement) => placement,
        Err(err) => return Scope::Unknown(ScopeUnknown::Unplaceable(err)),
    };
    let pci = environ
        .get("CUDA_DEVICE_ORDER")
        .is_some_and(|order| order.as_bytes() == b"PCI_BUS_ID");
    if placement.relies_on_index_order() && !pci && !table.is_homogeneous() {
        return Scope::Unknown(ScopeUnknown::IndicesOnMixedHost(shown));
    }
    let served: Vec<GpuUuid> = placement
        .host_indices()
        .iter()
        .filter_map(|&index| table.rows().get(usize::try_from(index).ok()?))
        .map(|row| row.uuid)
        .collect();
    if served.contains(&gpu) {
        Scope::Covers {
            mask: shown,
            gpus: served.len(),
        }
    } else {
        Scope::Excludes {
            mask: shown,
            served,
        }
    }
}

/// The "served" facts of a snapshot as the evidence records them (validated or ambient).
#[derive(Debug, Default)]
pub(crate) struct ServedFacts {
    pub(crate) caller_uid: Option<u32>,
    pub(crate) server_uids: Vec<u32>,
    /// The daemon's PID, when its process was identified.
    pub(crate) daemon_pid: Option<i64>,
    pub(crate) daemon_visible_devices: Option<String>,
    pub(crate) daemon_multiuser: Option<bool>,
    pub(crate) compute_mode: Option<String>,
    pub(crate) driver_version: Option<String>,
    /// The GPU's health columns as the GPU query recorded them.
    pub(crate) health: HealthRead,
}

/// The GPU's health columns ([`crate::GPU_HEALTH_COLUMNS`]) as the snapshot records them.
#[derive(Debug, Default)]
pub(crate) enum HealthRead {
    /// The query did not ask them: a snapshot recorded before they were asked.
    #[default]
    NotAsked,
    /// `nvidia-smi` rejected the query that asked them (an older driver).
    Rejected(HealthRejected),
    /// The query asked them, but it has no row for the GPU.
    NoRow,
    /// Each column's name and value, as printed.
    Columns([(&'static str, String); 5]),
}

/// Reads [`ServedFacts`] for the GPU `gpu` (when known) and the daemon of `pipe_directory`.
pub(crate) fn served_facts(
    facts: &HostFacts,
    text: &Result<TableText<'_>, ReadError>,
    gpu: Option<GpuUuid>,
    pipe_directory: &[u8],
) -> ServedFacts {
    let mut served = ServedFacts {
        caller_uid: facts.caller.map(|caller| caller.euid),
        ..ServedFacts::default()
    };
    let pids = server_pids(facts.daemon_query.as_ref(), pipe_directory);
    served.server_uids = server_owners(facts, &pids)
        .into_iter()
        .filter_map(|(_, owner)| match owner {
            Owner::Uid(uid) => Some(uid),
            Owner::Unknown(_) => None,
        })
        .collect();
    if let DaemonProcess::Found(daemon) = identify(facts, pipe_directory) {
        served.daemon_pid = Some(daemon.pid);
        served.daemon_multiuser = multiuser_of(daemon);
        served.daemon_visible_devices = daemon
            .environ
            .as_ref()
            .and_then(|environ| environ.get("CUDA_VISIBLE_DEVICES"))
            .map(OsText::to_string_lossy);
    }
    if let Ok(text) = text {
        let row = gpu.and_then(|gpu| text.extras_of(gpu));
        served.compute_mode = row.map(|row| row.compute_mode.to_owned());
        served.health = if let Some(why) = &text.health_rejected {
            HealthRead::Rejected(why.clone())
        } else if let Some(health) = row.and_then(|row| row.health) {
            HealthRead::Columns(
                health
                    .columns()
                    .map(|(name, value)| (name, value.to_owned())),
            )
        } else if text.extras.iter().any(|extras| extras.health.is_some()) {
            HealthRead::NoRow
        } else {
            HealthRead::NotAsked
        };
        served.driver_version = row
            .or(text.extras.first())
            .map(|row| row.driver_version.to_owned());
    }
    served
}

/// The first non-zero index in the client's own mask, which a scoped daemon renumbers (T5).
pub(crate) fn renumbered_index(client_mask: Option<&OsText>) -> Option<u32> {
    let raw = client_mask?;
    VisibleDevices::parse_bytes(Some(raw.as_bytes()))
        .entries()
        .iter()
        .find_map(|entry| match entry {
            VisibleEntry::Index(index) if *index != 0 => Some(*index),
            _ => None,
        })
}

#[cfg(test)]
mod tests;
