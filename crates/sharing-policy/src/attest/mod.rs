//! `attest`: after the learner and the collector have started, are both clients of one MPS
//! server, of their own user, on the validated pipe directory? Pure: every fact arrives in an
//! [`AttestFacts`] snapshot; each process gets a stable [`AttestCode`].

mod answers;
mod facts;
mod message;
mod seen;
mod settings;

use serde::{Deserialize, Serialize};

use crate::ClientFacts;
use answers::Unproven;
pub use answers::parse_client_list;
pub use facts::{
    ATTEST_SCHEMA, AttestFacts, CLIENT_ENVIRON_VARS, PipeDirectorySource, ServerFacts,
    stat_start_time,
};
pub use message::AttestWords;
use seen::{Seen, listing, seen};
pub use settings::{ATTEST_DEVICE, ServerSettings, attest_settings_commands};

use crate::namespace;
use crate::served::{self, effective_uid};
use crate::{DEFAULT_PIPE_DIRECTORY, OsText};

/// One process's state. The kebab-case spelling ([`AttestCode::as_str`]) is stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AttestCode {
    /// Listed as a client of the server that also lists the other process (or of the only
    /// server listing it), and that server runs as its user.
    Attached,
    /// No such process, or it has exited (a zombie).
    NotRunning,
    /// Its `/proc` entry could not be read, so whether it runs is unknown.
    ProcessUnobservable,
    /// A client of one server while the other process is a client of another.
    ClientOfAnotherServer,
    /// Listed by no server; see the likely cause.
    NotAClient,
    /// Listed by a server that runs as another user.
    ServerOfAnotherUser,
    /// Listed, but its UID or its server's could not be read.
    UidUnproven,
    /// The control daemon did not answer (not started, exit non-zero, deadline).
    DaemonDidNotAnswer,
    /// The daemon answered in a format this version does not recognise: unproven.
    AnswerUnrecognized,
    /// It runs in another PID namespace than the control daemon, and its PID as the daemon
    /// sees it cannot be told from the attester's namespace (or the daemon lists a client it
    /// cannot see, as PID 0).
    PidNamespaceDiffers,
}

impl AttestCode {
    /// Every code, in the order the decision checks them.
    pub const ALL: [Self; 10] = [
        Self::Attached,
        Self::NotRunning,
        Self::ProcessUnobservable,
        Self::ClientOfAnotherServer,
        Self::NotAClient,
        Self::ServerOfAnotherUser,
        Self::UidUnproven,
        Self::DaemonDidNotAnswer,
        Self::AnswerUnrecognized,
        Self::PidNamespaceDiffers,
    ];

    /// The stable kebab-case spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Attached => "attached",
            Self::NotRunning => "not-running",
            Self::ProcessUnobservable => "process-unobservable",
            Self::ClientOfAnotherServer => "client-of-another-server",
            Self::NotAClient => "not-a-client",
            Self::ServerOfAnotherUser => "server-of-another-user",
            Self::UidUnproven => "uid-unproven",
            Self::DaemonDidNotAnswer => "daemon-did-not-answer",
            Self::AnswerUnrecognized => "answer-unrecognized",
            Self::PidNamespaceDiffers => "pid-namespace-differs",
        }
    }
}

/// Why a process that runs is listed by no server, where the facts show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LikelyCause {
    /// Its environment names another pipe directory.
    OtherPipeDirectory,
    /// No server is running at all: it has not initialised CUDA yet, or it ran without MPS.
    NoServerRunning,
    /// Its UID differs from every running server's.
    UidDiffersFromServer,
}

/// Which of the two processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The learner.
    Learner,
    /// The collector.
    Collector,
}

impl Role {
    /// `learner` or `collector`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Learner => "learner",
            Self::Collector => "collector",
        }
    }
}

/// The verdict on one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ProcessAttestation {
    /// Its PID.
    pub pid: i64,
    /// Its state.
    pub code: AttestCode,
    /// For `not-a-client`: the likely cause, when the facts show one.
    pub likely_cause: Option<LikelyCause>,
    /// The server that lists it as a client.
    pub server_pid: Option<i64>,
    /// Its effective UID.
    pub uid: Option<u32>,
    /// Its `CUDA_MPS_PIPE_DIRECTORY`, raw (null when unset or unreadable).
    pub pipe_directory_env: Option<String>,
    /// Its `CUDA_VISIBLE_DEVICES`, raw (null when unset or unreadable).
    pub cuda_visible_devices: Option<String>,
    /// Whether its environment could be read.
    pub environ_read: bool,
    /// Its own `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, raw (null when unset or unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_thread_percentage_env: Option<String>,
    /// Its own `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, raw (null when unset or unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_device_mem_limit_env: Option<String>,
    /// Why it is not attached and what to do (null when attached).
    pub message: Option<String>,
    /// Its start time pinned at the first observation (field 22 of `/proc/<pid>/stat`, clock
    /// ticks after boot): with the PID, the process's identity (null: not read).
    #[serde(default)]
    pub start_time: Option<u64>,
}

/// The attestation: written on stdout and under `cuda_process_sharing.attestation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Attestation {
    /// True only when both processes are clients of one server of their user.
    pub attested: bool,
    /// The pipe directory whose daemon was asked.
    pub pipe_directory: String,
    /// Where that pipe directory came from.
    pub pipe_directory_source: PipeDirectorySource,
    /// The server both are clients of, when attested.
    pub server_pid: Option<i64>,
    /// That server's effective UID, when attested.
    pub server_uid: Option<u32>,
    /// Every server PID the daemon listed.
    pub servers: Vec<i64>,
    /// The learner.
    pub learner: ProcessAttestation,
    /// The collector.
    pub collector: ProcessAttestation,
    /// How many rounds of observation ran.
    pub rounds: u32,
    /// How long the observation took, in milliseconds.
    pub elapsed_ms: u64,
    /// The host's name.
    pub host_name: Option<String>,
    /// Whether the control daemon runs in multi-user mode, as its command line shows (null:
    /// not proven either way). In multi-user mode the root server serves every user's clients.
    #[serde(default)]
    pub daemon_multiuser: Option<bool>,
    /// What the server the learner is a client of serves with (its state, active
    /// thread percentage, pinned-memory limit), when its settings were asked. A server in
    /// `FAULT` is never attested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_settings: Option<ServerSettings>,
}

impl Attestation {
    /// Each process that is not attached, with its role, in order (learner first).
    pub fn problems(&self) -> impl Iterator<Item = (Role, &ProcessAttestation)> {
        [
            (Role::Learner, &self.learner),
            (Role::Collector, &self.collector),
        ]
        .into_iter()
        .filter(|(_, process)| process.code != AttestCode::Attached)
    }

    /// One line per process that is not attached: `<code>: <message>` ([`Self::errors`]).
    pub fn error_lines(&self) -> Vec<String> {
        self.errors()
            .into_iter()
            .map(|(code, message)| format!("{code}: {message}"))
            .collect()
    }

    /// Why it is not attested, as structured data: one `(code, message)` per process that is
    /// not attached (then a server in `FAULT`); empty when attested. The first code is the
    /// one a front end raises.
    pub fn errors(&self) -> Vec<(&'static str, String)> {
        let mut errors: Vec<(&'static str, String)> = self
            .problems()
            .map(|(role, p)| {
                let message = p
                    .message
                    .clone()
                    .unwrap_or_else(|| message::fallback(role, p.pid));
                (p.code.as_str(), message)
            })
            .collect();
        if let Some(settings) = self.server_settings.as_ref().filter(|s| s.is_fault()) {
            errors.push(("server-fault", format!(
                "MPS server {} that the learner is a client of is in FAULT: it rejects every new client with CUDA_ERROR_MPS_SERVER_NOT_READY, and its clients are not being served; restart the job once the daemon has started a new server",
                settings.pid
            )));
        }
        if !self.attested && errors.is_empty() && self.learner.pid == self.collector.pid {
            let code = AttestCode::AnswerUnrecognized.as_str();
            errors.push((code, same_process(self.learner.pid)));
        } else if !self.attested && errors.is_empty() {
            let code = AttestCode::ClientOfAnotherServer.as_str();
            errors.push((code, message::inconsistent()));
        }
        errors
    }

    /// Whether observing again may change the verdict: not attested, nothing has exited, and
    /// each process that is not attached is only not a client yet (clients attach at CUDA
    /// init). A launcher's `--wait-ms` polls while this holds.
    pub fn worth_waiting(&self) -> bool {
        !self.attested
            && !self
                .server_settings
                .as_ref()
                .is_some_and(ServerSettings::is_fault)
            && self
                .problems()
                .all(|(_, p)| p.code == AttestCode::NotAClient)
    }
}

/// The message when the learner and the collector are given the same PID:
/// one process proves nothing about two, so the front ends refuse it as a usage error.
pub fn same_process(pid: i64) -> String {
    format!(
        "the learner and the collector are the same process (PID {pid}): one process proves nothing about two sharing a GPU; give each process's own PID"
    )
}

/// `Err` with [`same_process`]'s message when the two PIDs are one: a usage error in every
/// front end (the CLI's `attest` and `doctor`, the Python `attest()`, a replayed snapshot).
///
/// # Errors
/// The two PIDs are equal.
pub fn distinct_pids(learner: i64, collector: i64) -> Result<(), String> {
    if learner == collector {
        Err(same_process(learner))
    } else {
        Ok(())
    }
}

/// Judges an attestation snapshot: attested when both PIDs are listed as clients of the same
/// server PID, whose UID is theirs, by the daemon on the snapshot's pipe directory. Its
/// messages name the command line's options ([`AttestWords::CLI`]).
pub fn attest(facts: &AttestFacts) -> Attestation {
    attest_worded(facts, AttestWords::CLI)
}

/// [`attest`], with messages that name the caller's options (`words`): the Python API's
/// keywords instead of the command line's flags, for example. Only the words differ.
pub fn attest_worded(facts: &AttestFacts, words: AttestWords) -> Attestation {
    let dir = facts.pipe_directory.as_bytes();
    let servers = answers::servers(facts.server_query.as_ref(), dir);
    let listings: Vec<(i64, Result<Vec<i64>, Unproven>)> = match &servers {
        Ok(pids) => pids
            .iter()
            .map(|&pid| (pid, listing(facts, pid, dir)))
            .collect(),
        Err(_) => Vec::new(),
    };
    let daemon = served::identify_in(facts.daemon_process.as_ref(), facts.pid_file.as_ref(), dir);
    let daemon_namespace = match &daemon {
        served::DaemonProcess::Found(process) => process.pid_namespace.as_deref(),
        served::DaemonProcess::Unknown(_) => None,
    };
    // The daemon answered, but its pid file's PID is not running here.
    let split = servers
        .is_ok()
        .then(|| {
            crate::daemon_identity::lock_split(facts.daemon_process.as_ref())
                .map(crate::message::daemon_identity::lock_split)
                .or_else(|| {
                    namespace::pid_file_split(facts.pid_file.as_ref())
                        .map(crate::message::namespace::pid_file_split)
                })
        })
        .flatten();
    let seen = |client: &ClientFacts| match namespace::in_daemon_namespace(
        client,
        daemon_namespace,
        facts.observer_pid_namespace.as_deref(),
    ) {
        // A PID given from the daemon's namespace need not exist in this one.
        Ok(pid) if client.exists == Some(false) && split.is_some() => Seen::Unknown(Unproven {
            code: AttestCode::PidNamespaceDiffers,
            detail: format!(
                "PID {pid} is not running in this PID namespace, and {}",
                split.as_deref().unwrap_or_default()
            ),
        }),
        Ok(pid) => match (seen(pid, &servers, &listings), &split) {
            (Seen::NotListed, Some(detail)) => Seen::Unknown(Unproven {
                code: AttestCode::PidNamespaceDiffers,
                detail: format!("PID {pid} is not listed, and {detail}"),
            }),
            (seen, _) => seen,
        },
        Err(why) => Seen::Unknown(Unproven {
            code: AttestCode::PidNamespaceDiffers,
            detail: crate::message::namespace::pid_untranslatable(&why),
        }),
    };
    let (learner_seen, collector_seen) = (seen(&facts.learner), seen(&facts.collector));
    let context = Context {
        facts,
        words,
        servers: servers.as_deref().unwrap_or_default(),
        multiuser: served::daemon_multiuser(&daemon) == Some(true),
    };
    let learner = context.judge(
        Role::Learner,
        &facts.learner,
        &learner_seen,
        &collector_seen,
    );
    let collector = context.judge(
        Role::Collector,
        &facts.collector,
        &collector_seen,
        &learner_seen,
    );
    let server_settings = learner
        .server_pid
        .and_then(|server| settings::read(facts, server));
    // Two roles on one PID prove nothing about two processes: never attested (the front ends
    // refuse it before observing; this keeps the rule in the policy too).
    let attested = facts.learner.pid != facts.collector.pid
        && learner.code == AttestCode::Attached
        && collector.code == AttestCode::Attached
        && learner.server_pid.is_some()
        && learner.server_pid == collector.server_pid
        && !server_settings
            .as_ref()
            .is_some_and(ServerSettings::is_fault);
    let server_pid = learner.server_pid.filter(|_| attested);
    Attestation {
        attested,
        pipe_directory: facts.pipe_directory.to_string_lossy(),
        pipe_directory_source: facts.pipe_directory_source,
        server_pid,
        server_uid: server_pid.and_then(|pid| server_uid(facts, pid)),
        servers: servers.unwrap_or_default(),
        learner,
        collector,
        rounds: facts.rounds,
        elapsed_ms: facts.elapsed_ms,
        host_name: facts.host_name.as_ref().map(OsText::to_string_lossy),
        daemon_multiuser: served::daemon_multiuser(&daemon),
        server_settings,
    }
}

/// The effective UID of a listed server, from its recorded process, when that process is
/// proven to be an MPS server (comm and `argv[0]`, where read).
fn server_uid(facts: &AttestFacts, server: i64) -> Option<u32> {
    let process = &facts.servers.iter().find(|s| s.pid == server)?.process;
    if namespace::not_a_server(process).is_some() {
        return None;
    }
    effective_uid(process.status_uid.as_deref()?)
}

/// Why a listed server's recorded process is not an MPS server, if it is not.
fn server_problem(facts: &AttestFacts, server: i64) -> Option<namespace::NotAServer> {
    let process = &facts.servers.iter().find(|s| s.pid == server)?.process;
    namespace::not_a_server(process)
}

/// A client's effective UID.
fn client_uid(client: &ClientFacts) -> Option<u32> {
    effective_uid(client.status_uid.as_deref()?)
}

/// The pipe directory a client's CUDA uses, when its environment was read.
fn client_pipe_directory(client: &ClientFacts) -> Option<&[u8]> {
    let environ = client.environ.as_ref()?;
    Some(match environ.get("CUDA_MPS_PIPE_DIRECTORY") {
        Some(dir) if !dir.as_bytes().is_empty() => dir.as_bytes(),
        _ => DEFAULT_PIPE_DIRECTORY.as_bytes(),
    })
}

struct Context<'a> {
    facts: &'a AttestFacts,
    words: AttestWords,
    servers: &'a [i64],
    /// The daemon's multi-user mode is proven: its root server serves every user.
    multiuser: bool,
}

impl Context<'_> {
    /// Whether a server of UID `server` serves a client of UID `client`: the same user, or the
    /// root server of a daemon whose multi-user mode is proven (shared notes gpu-truth.md §8).
    fn serves(&self, server: u32, client: u32) -> bool {
        server == client || (self.multiuser && server == 0)
    }

    fn judge(
        &self,
        role: Role,
        client: &ClientFacts,
        seen: &Seen,
        other: &Seen,
    ) -> ProcessAttestation {
        let env = |name: &str| {
            client
                .environ
                .as_ref()
                .and_then(|e| e.get(name))
                .map(OsText::to_string_lossy)
        };
        let mut verdict = ProcessAttestation {
            pid: client.pid,
            code: AttestCode::Attached,
            likely_cause: None,
            server_pid: None,
            uid: client_uid(client),
            pipe_directory_env: env("CUDA_MPS_PIPE_DIRECTORY"),
            cuda_visible_devices: env("CUDA_VISIBLE_DEVICES"),
            environ_read: client.environ.is_some(),
            message: None,
            start_time: client.first_start_time.or(client.start_time),
            active_thread_percentage_env: env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
            pinned_device_mem_limit_env: env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
        };
        let (code, cause) = self.decide(client, seen, other, &mut verdict);
        verdict.code = code;
        verdict.likely_cause = cause;
        if code != AttestCode::Attached {
            verdict.message = Some(message::render(&message::Subject {
                role,
                client,
                verdict: &verdict,
                facts: self.facts,
                words: self.words,
                seen_detail: match seen {
                    Seen::Unknown(unproven) => Some(unproven.detail.as_str()),
                    _ => None,
                },
                other_server: match other {
                    Seen::Listed(server) => Some(*server),
                    _ => None,
                },
            }));
        }
        verdict
    }

    fn decide(
        &self,
        client: &ClientFacts,
        seen: &Seen,
        other: &Seen,
        verdict: &mut ProcessAttestation,
    ) -> (AttestCode, Option<LikelyCause>) {
        if let Some(code) = liveness(client) {
            // Absent here while the daemon runs in another PID namespace: not known to have
            // ended, only not visible from this one.
            if let (true, Seen::Unknown(unproven)) = (client.exists == Some(false), seen)
                && unproven.code == AttestCode::PidNamespaceDiffers
            {
                return (unproven.code, None);
            }
            return (code, None);
        }
        match seen {
            Seen::Unknown(unproven) => (unproven.code, None),
            Seen::Listed(server) => {
                verdict.server_pid = Some(*server);
                let code = match (verdict.uid, server_uid(self.facts, *server)) {
                    (Some(own), Some(theirs)) if !self.serves(theirs, own) => {
                        AttestCode::ServerOfAnotherUser
                    }
                    (Some(_), Some(_)) => match other {
                        Seen::Listed(elsewhere) if elsewhere != server => {
                            AttestCode::ClientOfAnotherServer
                        }
                        _ => AttestCode::Attached,
                    },
                    _ => AttestCode::UidUnproven,
                };
                (code, None)
            }
            Seen::NotListed => (AttestCode::NotAClient, self.cause(client, verdict.uid)),
        }
    }

    fn cause(&self, client: &ClientFacts, uid: Option<u32>) -> Option<LikelyCause> {
        if client_pipe_directory(client)
            .is_some_and(|dir| dir != self.facts.pipe_directory.as_bytes())
        {
            return Some(LikelyCause::OtherPipeDirectory);
        }
        if self.servers.is_empty() {
            return Some(LikelyCause::NoServerRunning);
        }
        let owners: Option<Vec<u32>> = self
            .servers
            .iter()
            .map(|&s| server_uid(self.facts, s))
            .collect();
        match (uid, owners) {
            (Some(uid), Some(owners)) if !owners.iter().any(|&owner| self.serves(owner, uid)) => {
                Some(LikelyCause::UidDiffersFromServer)
            }
            _ => None,
        }
    }
}

/// `not-running` or `process-unobservable`, or `None` when the process runs. A PID whose start
/// time changed since it was pinned names another process: the one first observed has exited.
/// One whose start time can no longer be read is unproven.
fn liveness(client: &ClientFacts) -> Option<AttestCode> {
    if let Some(pinned) = client.first_start_time
        && client.exists != Some(false)
    {
        match client.start_time {
            Some(now) if now != pinned => return Some(AttestCode::NotRunning),
            Some(_) => {}
            None => return Some(AttestCode::ProcessUnobservable),
        }
    }
    match (client.exists, client.state.as_deref()) {
        (Some(false), _) => Some(AttestCode::NotRunning),
        (_, Some(state)) if state.starts_with(['Z', 'X']) => Some(AttestCode::NotRunning),
        (Some(true), Some(_)) => None,
        _ => Some(AttestCode::ProcessUnobservable),
    }
}
