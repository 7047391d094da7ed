//! The attestation's verdict: each process's code, state and likely cause, and the whole
//! attestation as it is written on stdout and in the manifest. Judged in `mod.rs`, worded in
//! `message.rs` (which also says why one is not attested: [`Attestation::errors`]).

use serde::{Deserialize, Serialize};

use super::{PipeDirectorySource, ServerSettings};

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
