//! `attest`: after the learner and the collector have started, are both clients of one MPS
//! server, of their own user, on the validated pipe directory? Pure: every fact arrives in an
//! [`AttestFacts`] snapshot; each process gets a stable [`AttestCode`].

mod answers;
mod facts;
mod message;
mod settings;

use serde::{Deserialize, Serialize};

use answers::Unproven;
pub use answers::parse_client_list;
pub use facts::{
    ATTEST_SCHEMA, AttestFacts, CLIENT_ENVIRON_VARS, ClientFacts, PipeDirectorySource, ServerFacts,
};
pub use settings::{ATTEST_DEVICE, ServerSettings, attest_settings_commands};

use crate::served::effective_uid;
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
}

impl AttestCode {
    /// Every code, in the order the decision checks them.
    pub const ALL: [Self; 9] = [
        Self::Attached,
        Self::NotRunning,
        Self::ProcessUnobservable,
        Self::ClientOfAnotherServer,
        Self::NotAClient,
        Self::ServerOfAnotherUser,
        Self::UidUnproven,
        Self::DaemonDidNotAnswer,
        Self::AnswerUnrecognized,
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
    /// Its own `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, raw (issue 20; null when unset or unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_thread_percentage_env: Option<String>,
    /// Its own `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`, raw (issue 20; null when unset or unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_device_mem_limit_env: Option<String>,
    /// Why it is not attached and what to do (null when attached).
    pub message: Option<String>,
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
    /// Issue 20: what the server the learner is a client of serves with (its state, active
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

    /// One line per process that is not attached: `<code>: <message>`.
    pub fn error_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .problems()
            .map(|(role, p)| {
                format!(
                    "{}: {}",
                    p.code.as_str(),
                    p.message
                        .clone()
                        .unwrap_or_else(|| message::fallback(role, p.pid))
                )
            })
            .collect();
        if let Some(settings) = self.server_settings.as_ref().filter(|s| s.is_fault()) {
            lines.push(format!(
                "server-fault: MPS server {} that the learner is a client of is in FAULT: it rejects every new client with CUDA_ERROR_MPS_SERVER_NOT_READY, and its clients are not being served; restart the job once the daemon has started a new server",
                settings.pid
            ));
        }
        if !self.attested && lines.is_empty() {
            lines.push(format!(
                "{}: {}",
                AttestCode::ClientOfAnotherServer.as_str(),
                message::inconsistent()
            ));
        }
        lines
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

/// Where one process was found in the daemon's answers.
enum Seen {
    Listed(i64),
    NotListed,
    Unknown(Unproven),
}

/// Judges an attestation snapshot: attested when both PIDs are listed as clients of the same
/// server PID, whose UID is theirs, by the daemon on the snapshot's pipe directory.
pub fn attest(facts: &AttestFacts) -> Attestation {
    let dir = facts.pipe_directory.as_bytes();
    let servers = answers::servers(facts.server_query.as_ref(), dir);
    let listings: Vec<(i64, Result<Vec<i64>, Unproven>)> = match &servers {
        Ok(pids) => pids
            .iter()
            .map(|&pid| (pid, listing(facts, pid, dir)))
            .collect(),
        Err(_) => Vec::new(),
    };
    let seen = |pid| seen(pid, &servers, &listings);
    let (learner_seen, collector_seen) = (seen(facts.learner.pid), seen(facts.collector.pid));
    let context = Context {
        facts,
        servers: servers.as_deref().unwrap_or_default(),
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
    let attested = learner.code == AttestCode::Attached
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
        server_settings,
    }
}

fn listing(facts: &AttestFacts, server: i64, dir: &[u8]) -> Result<Vec<i64>, Unproven> {
    match facts.servers.iter().find(|s| s.pid == server) {
        Some(s) => answers::clients(&s.client_query, server, dir),
        None => Err(Unproven {
            code: AttestCode::DaemonDidNotAnswer,
            detail: format!("the clients of server {server} were not asked"),
        }),
    }
}

fn seen(
    pid: i64,
    servers: &Result<Vec<i64>, Unproven>,
    listings: &[(i64, Result<Vec<i64>, Unproven>)],
) -> Seen {
    if let Err(unproven) = servers {
        return Seen::Unknown(unproven.clone());
    }
    let listed: Vec<i64> = listings
        .iter()
        .filter(|(_, clients)| clients.as_ref().is_ok_and(|c| c.contains(&pid)))
        .map(|(server, _)| *server)
        .collect();
    match listed.as_slice() {
        [one] => Seen::Listed(*one),
        [] => match listings
            .iter()
            .find_map(|(_, clients)| clients.as_ref().err())
        {
            Some(unproven) => Seen::Unknown(unproven.clone()),
            None => Seen::NotListed,
        },
        many => Seen::Unknown(Unproven {
            code: AttestCode::AnswerUnrecognized,
            detail: format!(
                "PID {pid} is listed as a client of {} servers ({many:?})",
                many.len()
            ),
        }),
    }
}

/// The effective UID of a listed server, from its recorded process.
fn server_uid(facts: &AttestFacts, server: i64) -> Option<u32> {
    let process = &facts.servers.iter().find(|s| s.pid == server)?.process;
    effective_uid(process.status_uid.as_deref()?)
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
    servers: &'a [i64],
}

impl Context<'_> {
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
            return (code, None);
        }
        match seen {
            Seen::Unknown(unproven) => (unproven.code, None),
            Seen::Listed(server) => {
                verdict.server_pid = Some(*server);
                let code = match (verdict.uid, server_uid(self.facts, *server)) {
                    (Some(own), Some(theirs)) if own != theirs => AttestCode::ServerOfAnotherUser,
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
            (Some(uid), Some(owners)) if !owners.contains(&uid) => {
                Some(LikelyCause::UidDiffersFromServer)
            }
            _ => None,
        }
    }
}

/// `not-running` or `process-unobservable`, or `None` when the process runs.
fn liveness(client: &ClientFacts) -> Option<AttestCode> {
    match (client.exists, client.state.as_deref()) {
        (Some(false), _) => Some(AttestCode::NotRunning),
        (_, Some(state)) if state.starts_with(['Z', 'X']) => Some(AttestCode::NotRunning),
        (Some(true), Some(_)) => None,
        _ => Some(AttestCode::ProcessUnobservable),
    }
}
