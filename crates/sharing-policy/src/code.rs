//! Stable, kebab-case codes: one per kind of unmet prerequisite.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Vocabulary;

mod shared;

/// What kind of prerequisite was not met. The kebab-case spelling ([`Code::as_str`]) is stable:
/// scripts and dashboards may match on it. Variants are listed in the validator's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Code {
    /// The requested mode is neither null nor `mps`.
    UnsupportedMode,
    /// The snapshot's `schema` is not [`crate::SCHEMA`].
    UnsupportedSnapshotSchema,
    /// The simulation backend is not one of the supported backends.
    UnsupportedBackend,
    /// The host is not Linux.
    UnsupportedOs,
    /// `rank` is not in `[0, world_size)`.
    InvalidRank,
    /// No collector device was given.
    MissingCollector,
    /// A device string is not `cuda` or `cuda:<index>`.
    NotCudaDevice,
    /// A `cuda:` device has an index that is not a plain decimal number.
    InvalidCudaDevice,
    /// No GPU can be seen: no host GPU table, or the mask hides every GPU.
    CudaUnavailable,
    /// The learner's index is not below the number of visible GPUs.
    DeviceOutOfRange,
    /// `CUDA_VISIBLE_DEVICES` names MIG devices, which this validator does not map.
    MigVisibilityUnsupported,
    /// Indices would be mapped through `nvidia-smi` on a host where CUDA's order may differ.
    AmbiguousDeviceOrder,
    /// The caller-supplied learner UUID is not a GPU UUID.
    LearnerUuidUnresolved,
    /// The learner and the collector resolve to different physical GPUs.
    DifferentGpus,
    /// The collector's GPU UUID could not be proven.
    CollectorUuidUnresolved,
    /// The snapshot's records disagree with each other or with the request's environment.
    InconsistentSnapshot,
    /// The effective pipe directory is not valid UTF-8.
    NonUtf8PipeDirectory,
    /// `<pipe directory>/control` is longer than a Unix socket path allows.
    ControlPathTooLong,
    /// Nothing is at `<pipe directory>/control`.
    ControlPipeMissing,
    /// `<pipe directory>/control` is neither a socket nor a FIFO.
    NotAControlPipe,
    /// The probing user cannot reach or use the control pipe.
    ControlPipeInaccessible,
    /// The control daemon did not answer (absent, unreachable, or not queried).
    DaemonUnreachable,
    /// The control daemon query did not finish within its deadline.
    DaemonTimedOut,
    /// The control daemon query exited 0 but printed something this validator does not know.
    DaemonAnswerUnrecognized,
    /// The daemon's `CUDA_VISIBLE_DEVICES` (its GPU scope) does not include the GPU.
    GpuOutsideDaemonScope,
    /// The client's mask is a non-zero index, which a scoped daemon renumbers (T5).
    DaemonIndexRemap,
    /// Which process is the control daemon is not proven: no process visible here holds its
    /// lock, or the holder runs as neither root nor the pipe directory's owner. Unverified: a
    /// rejection only with `--require-verified`.
    DaemonIdentityUnverified,
    /// The pid file names another process than the one holding the daemon's lock (a stale or
    /// planted pid file; it is not used). Unverified: a rejection only with
    /// `--require-verified`.
    DaemonPidFileDisagrees,
    /// The proven control daemon runs as neither root nor the user the request is judged for:
    /// a daemon not run by root can start servers only for its own user (docs/mps-daemon.md,
    /// C7), so this job's clients would never be served.
    DaemonOfAnotherUser,
    /// The daemon's GPU scope could not be read (its environment, or the daemon itself, was
    /// not observable). Unverified: a rejection only with `--require-verified`.
    DaemonScopeUnverified,
    /// A listed MPS server runs as another user, and the daemon is not in multi-user mode.
    ServerOfAnotherUser,
    /// A listed server's owner could not be read. Unverified: a rejection only with
    /// `--require-verified`.
    ServerOwnerUnverified,
    /// The GPU needs a recovery action (`gpu_recovery_action` other than `None`, a pending
    /// retired page or row remap, a failed row remap): under MPS one fault takes every client
    /// of the GPU down.
    GpuNeedsRecovery,
    /// The GPU's health columns were not recorded (an older driver rejected them) or not
    /// reported. Unverified: a rejection only with `--require-verified`.
    GpuHealthUnverified,
    /// The GPU's compute mode (`Prohibited`, `Exclusive_Thread`) forbids two clients.
    ComputeModeForbidsSharing,
    /// The GPU's compute mode was not recorded or not reported. Unverified: a rejection only
    /// with `--require-verified`.
    ComputeModeUnverified,
    /// A compute process that is not an MPS client already holds the GPU in
    /// `Exclusive_Process` with no server started: the MPS server cannot start.
    GpuHeldByComputeProcess,
    /// The compute processes of a GPU in `Exclusive_Process` with no server started could not
    /// be read. Unverified: a rejection only with `--require-verified`.
    ComputeAppsUnverified,
    /// Persistence mode is `Disabled`: the compute mode read is only a snapshot (it is lost
    /// when the GPU deinitialises), and a new server's initialisation is slow. Unverified: a
    /// warning, a rejection only with `--require-verified`.
    PersistenceModeDisabled,
    /// The server the clients would join is in `FAULT`: it rejects every new client (550+).
    ServerFault,
    /// A listed server's state could not be read (`get_server_status` is 550+). Unverified: a
    /// rejection only with `--require-verified`.
    ServerStatusUnverified,
    /// A client the server the job would join lists is dead or a zombie: a client killed
    /// without synchronising leaves its server in an undefined state, which NVIDIA says must
    /// be restarted with all its clients.
    StaleServerClient,
    /// The clients of a listed server, or their `/proc` state, could not be read. Unverified:
    /// a rejection only with `--require-verified`.
    ServerClientsUnverified,
    /// The listed clients and the two to come exceed the per-device client limit (48 on
    /// Volta and newer).
    ServerClientLimitReached,
    /// The listed clients and the two to come exceed the per-device client limit, but the
    /// daemon serves several GPUs (or its scope is not known) and the client lists do not say
    /// which GPU each client uses. Unverified: a rejection only with `--require-verified`.
    ServerClientLimitUnverified,
    /// The server the job would join already has live clients (another job may share it on
    /// purpose). Advisory ([`Code::ADVISORY`]): a warning only, never a rejection, even with
    /// `--require-verified`.
    ServerHasClients,
    /// The daemon's default active-thread percentage is below the request's minimum.
    ActiveThreadPercentageBelowRequirement,
    /// The daemon's default pinned-memory limit for the GPU is below the request's minimum.
    PinnedMemBelowRequirement,
    /// The request states a minimum pinned-memory limit, and the daemon's limit for the GPU
    /// could not be read. Unverified: a rejection only with `--require-verified`.
    PinnedMemLimitUnverified,
    /// The request states a minimum, and the running server's own active-thread percentage
    /// or pinned-memory limit (which it applies instead of the daemon's defaults) could not
    /// be read. Unverified: a rejection only with `--require-verified`.
    ServerLimitsUnverified,
    /// The daemon's log shows two or more server crashes since its last ready server: every
    /// new server dies (a crash loop).
    ServerCrashLoop,
    /// The daemon's log shows a server handling a fatal GPU error and no server context
    /// created since (the `FAULT` a daemon before 550 cannot report).
    ServerFatalErrorLogged,
    /// The daemon's log could not be read (its directory unknown, the file absent, rotated
    /// away, unreadable, a FIFO or a link). Unverified: a rejection only with
    /// `--require-verified`.
    DaemonLogUnverified,
    /// Advisory ([`Code::ADVISORY`]): the log shows a client of another user pending, waiting
    /// for a server of its own.
    DaemonLogPendingClient,
    /// Advisory: the log shows `NEW CLIENT 0`, a client whose PID the daemon cannot see (a
    /// PID-namespace split).
    DaemonLogClientPidZero,
    /// Advisory: the log shows a server that failed to start.
    DaemonLogServerFailedToStart,
    /// The probing process's `/dev/shm` is another filesystem than the control daemon's (and
    /// so its servers'): a container's own `/dev/shm`.
    ShmNotShared,
    /// Whether the probing process shares the daemon's `/dev/shm`, or how much room it has
    /// when a minimum is stated, could not be read. Unverified: a rejection only with
    /// `--require-verified`.
    ShmUnverified,
    /// The free space of `/dev/shm` is below the request's minimum (`--min-shm`).
    ShmBelowRequirement,
    /// The caller's `CUDA_DEVICE_MAX_CONNECTIONS` is above 2. An advisory: never a rejection,
    /// not even with `--require-verified` ([`Code::ADVISORY`]).
    DeviceMaxConnectionsHigh,
    /// The control daemon's open-files soft limit is below 16384. An advisory: never a
    /// rejection, not even with `--require-verified` ([`Code::ADVISORY`]).
    DaemonOpenFilesLow,
    /// The judged user's MPS server cannot reach the pipe directory: a directory on the way
    /// denies it search, or `<pipe>/control` or `<pipe>/log` denies it write (notes row 6).
    PipeDirectoryUnreachable,
    /// Whether the judged user can reach the pipe directory could not be told (a POSIX ACL, a
    /// symbolic link, `SELinux` enforcing, the user's groups or a path unread). Unverified: a
    /// rejection only with `--require-verified`.
    PipeAccessUnverified,
}

impl Code {
    /// Every code, in the validator's order.
    pub const ALL: [Self; 63] = [
        Self::UnsupportedMode,
        Self::UnsupportedSnapshotSchema,
        Self::UnsupportedBackend,
        Self::UnsupportedOs,
        Self::InvalidRank,
        Self::MissingCollector,
        Self::NotCudaDevice,
        Self::InvalidCudaDevice,
        Self::CudaUnavailable,
        Self::DeviceOutOfRange,
        Self::MigVisibilityUnsupported,
        Self::AmbiguousDeviceOrder,
        Self::LearnerUuidUnresolved,
        Self::DifferentGpus,
        Self::CollectorUuidUnresolved,
        Self::InconsistentSnapshot,
        Self::NonUtf8PipeDirectory,
        Self::ControlPathTooLong,
        Self::ControlPipeMissing,
        Self::NotAControlPipe,
        Self::ControlPipeInaccessible,
        Self::DaemonUnreachable,
        Self::DaemonTimedOut,
        Self::DaemonAnswerUnrecognized,
        Self::GpuOutsideDaemonScope,
        Self::DaemonIndexRemap,
        Self::DaemonIdentityUnverified,
        Self::DaemonPidFileDisagrees,
        Self::DaemonOfAnotherUser,
        Self::DaemonScopeUnverified,
        Self::ServerOfAnotherUser,
        Self::ServerOwnerUnverified,
        Self::GpuNeedsRecovery,
        Self::GpuHealthUnverified,
        Self::ComputeModeForbidsSharing,
        Self::ComputeModeUnverified,
        Self::GpuHeldByComputeProcess,
        Self::ComputeAppsUnverified,
        Self::PersistenceModeDisabled,
        Self::ServerFault,
        Self::ServerStatusUnverified,
        Self::StaleServerClient,
        Self::ServerClientsUnverified,
        Self::ServerClientLimitReached,
        Self::ServerClientLimitUnverified,
        Self::ServerHasClients,
        Self::ActiveThreadPercentageBelowRequirement,
        Self::PinnedMemBelowRequirement,
        Self::PinnedMemLimitUnverified,
        Self::ServerLimitsUnverified,
        Self::ServerCrashLoop,
        Self::ServerFatalErrorLogged,
        Self::DaemonLogUnverified,
        Self::DaemonLogPendingClient,
        Self::DaemonLogClientPidZero,
        Self::DaemonLogServerFailedToStart,
        Self::ShmNotShared,
        Self::ShmUnverified,
        Self::ShmBelowRequirement,
        Self::PipeDirectoryUnreachable,
        Self::PipeAccessUnverified,
        Self::DeviceMaxConnectionsHigh,
        Self::DaemonOpenFilesLow,
    ];

    /// The advisory codes: warnings (`doctor`, the verdict's warnings, the evidence's
    /// `advisories` key) that report a fact the job may want to know (another job shares the
    /// server, a capacity setting) or that explains a later failure; never a rejection, not
    /// even with `--require-verified`, and never in the evidence's `unverified` key.
    pub const ADVISORY: [Self; 6] = [
        Self::ServerHasClients,
        Self::DaemonLogPendingClient,
        Self::DaemonLogClientPidZero,
        Self::DaemonLogServerFailedToStart,
        Self::DeviceMaxConnectionsHigh,
        Self::DaemonOpenFilesLow,
    ];

    /// The codes that can be unverified (listed in the evidence's `unverified` key, and
    /// rejections only under `--require-verified`).
    pub const UNVERIFIABLE: [Self; 16] = [
        Self::DaemonIdentityUnverified,
        Self::DaemonPidFileDisagrees,
        Self::DaemonScopeUnverified,
        Self::ServerOwnerUnverified,
        Self::GpuHealthUnverified,
        Self::ComputeModeUnverified,
        Self::ComputeAppsUnverified,
        Self::PersistenceModeDisabled,
        Self::ServerStatusUnverified,
        Self::ServerClientsUnverified,
        Self::ServerClientLimitUnverified,
        Self::PinnedMemLimitUnverified,
        Self::ServerLimitsUnverified,
        Self::DaemonLogUnverified,
        Self::ShmUnverified,
        Self::PipeAccessUnverified,
    ];

    /// The stable kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnsupportedMode => "unsupported-mode",
            Self::UnsupportedSnapshotSchema => "unsupported-snapshot-schema",
            Self::UnsupportedBackend => "unsupported-backend",
            Self::UnsupportedOs => "unsupported-os",
            Self::InvalidRank => "invalid-rank",
            Self::MissingCollector => "missing-collector",
            Self::NotCudaDevice => "not-cuda-device",
            Self::InvalidCudaDevice => "invalid-cuda-device",
            Self::CudaUnavailable => "cuda-unavailable",
            Self::DeviceOutOfRange => "device-out-of-range",
            Self::MigVisibilityUnsupported => "mig-visibility-unsupported",
            Self::AmbiguousDeviceOrder => "ambiguous-device-order",
            Self::LearnerUuidUnresolved => "learner-uuid-unresolved",
            Self::DifferentGpus => "different-gpus",
            Self::CollectorUuidUnresolved => "collector-uuid-unresolved",
            Self::InconsistentSnapshot => "inconsistent-snapshot",
            Self::NonUtf8PipeDirectory => "non-utf8-pipe-directory",
            Self::ControlPathTooLong => "control-path-too-long",
            Self::ControlPipeMissing => "control-pipe-missing",
            Self::NotAControlPipe => "not-a-control-pipe",
            Self::ControlPipeInaccessible => "control-pipe-inaccessible",
            Self::DaemonUnreachable => "daemon-unreachable",
            Self::DaemonTimedOut => "daemon-timed-out",
            Self::DaemonAnswerUnrecognized => "daemon-answer-unrecognized",
            Self::GpuOutsideDaemonScope => "gpu-outside-daemon-scope",
            Self::DaemonIndexRemap => "daemon-index-remap",
            Self::DaemonIdentityUnverified => "daemon-identity-unverified",
            Self::DaemonPidFileDisagrees => "daemon-pid-file-disagrees",
            Self::DaemonOfAnotherUser => "daemon-of-another-user",
            Self::DaemonScopeUnverified => "daemon-scope-unverified",
            Self::ServerOfAnotherUser => "server-of-another-user",
            Self::ServerOwnerUnverified => "server-owner-unverified",
            Self::GpuNeedsRecovery => "gpu-needs-recovery",
            Self::GpuHealthUnverified => "gpu-health-unverified",
            Self::ComputeModeForbidsSharing => "compute-mode-forbids-sharing",
            Self::ComputeModeUnverified => "compute-mode-unverified",
            Self::GpuHeldByComputeProcess => "gpu-held-by-compute-process",
            Self::ComputeAppsUnverified => "compute-apps-unverified",
            Self::PersistenceModeDisabled => "persistence-mode-disabled",
            Self::ServerFault => "server-fault",
            Self::ServerStatusUnverified => "server-status-unverified",
            Self::ActiveThreadPercentageBelowRequirement => {
                "active-thread-percentage-below-requirement"
            }
            Self::PinnedMemBelowRequirement => "pinned-mem-below-requirement",
            Self::PinnedMemLimitUnverified => "pinned-mem-limit-unverified",
            Self::StaleServerClient => "stale-server-client",
            Self::ServerClientsUnverified => "server-clients-unverified",
            Self::ServerClientLimitReached => "server-client-limit-reached",
            Self::ServerClientLimitUnverified => "server-client-limit-unverified",
            Self::ServerHasClients => "server-has-clients",
            Self::ServerLimitsUnverified => "server-limits-unverified",
            Self::ServerCrashLoop => "server-crash-loop",
            Self::ServerFatalErrorLogged => "server-fatal-error-logged",
            Self::DaemonLogUnverified => "daemon-log-unverified",
            Self::DaemonLogPendingClient => "daemon-log-pending-client",
            Self::DaemonLogClientPidZero => "daemon-log-client-pid-zero",
            Self::DaemonLogServerFailedToStart => "daemon-log-server-failed-to-start",
            Self::ShmNotShared => "shm-not-shared",
            Self::ShmUnverified => "shm-unverified",
            Self::ShmBelowRequirement => "shm-below-requirement",
            Self::DeviceMaxConnectionsHigh => "device-max-connections-high",
            Self::DaemonOpenFilesLow => "daemon-open-files-low",
            Self::PipeDirectoryUnreachable => "pipe-directory-unreachable",
            Self::PipeAccessUnverified => "pipe-access-unverified",
        }
    }

    /// Why this prerequisite matters, in one or two sentences (the same for every finding of
    /// this code), in the reference's vocabulary ([`Code::why_in`]).
    pub fn why(self) -> &'static str {
        self.why_in(Vocabulary::Reference)
    }

    /// [`Code::why`] in `vocabulary`: the command line's words differ only where the
    /// reference's explanation speaks its configuration's jargon.
    pub fn why_in(self, vocabulary: Vocabulary) -> &'static str {
        match vocabulary {
            Vocabulary::Cli => self.cli_why().unwrap_or_else(|| self.reference_why()),
            Vocabulary::Reference => self.reference_why(),
        }
    }

    /// Where the command line's explanation differs from the reference's.
    fn cli_why(self) -> Option<&'static str> {
        Some(match self {
            Self::UnsupportedMode => {
                "Only null (no sharing requested) and 'mps' have a meaning; an explicit request is proven or refused, never quietly run without MPS."
            }
            Self::UnsupportedBackend => {
                "Only the listed backends run the learner and the collector as two processes on one GPU; without --backend no backend is checked."
            }
            Self::InvalidRank => {
                "The evidence is recorded per rank; a --rank outside [0, --world-size) names no process of this run."
            }
            _ => return None,
        })
    }

    /// [`Code::why`].
    #[expect(
        clippy::too_many_lines,
        reason = "one arm per code, every code named so none is missed"
    )]
    fn reference_why(self) -> &'static str {
        match self {
            Self::UnsupportedMode => {
                "Only null (no sharing requested) and 'mps' have a meaning; an explicit request never falls back to multi-context CUDA execution."
            }
            Self::UnsupportedSnapshotSchema => {
                "A snapshot of another schema may record facts with other meanings; interpreting it could pass a host that was never proven."
            }
            Self::UnsupportedBackend => {
                "Only the listed backends run the learner and the collector as two processes bound to one rank-local GPU."
            }
            Self::UnsupportedOs => "CUDA MPS exists only on Linux.",
            Self::InvalidRank => {
                "The evidence is recorded per rank; a rank outside [0, world_size) names no process of this run."
            }
            Self::MissingCollector => {
                "MPS sharing is between the learner and a collector process; without a collector there is nothing to share."
            }
            Self::NotCudaDevice => {
                "Both processes must be CUDA clients of the same MPS daemon; other device families do not use MPS."
            }
            Self::InvalidCudaDevice => {
                "A device index must be a plain decimal number so that it names exactly one visible GPU."
            }
            Self::CudaUnavailable => {
                "Without a visible GPU (or a host GPU table to identify it) the learner's physical GPU cannot be proven."
            }
            Self::DeviceOutOfRange => {
                "CUDA numbers the visible GPUs 0..n-1; an index at or beyond n names no GPU."
            }
            Self::MigVisibilityUnsupported => {
                "A MIG instance is not a whole GPU, and MPS on MIG needs one daemon per instance; this validator cannot prove that topology."
            }
            Self::AmbiguousDeviceOrder => {
                "nvidia-smi numbers GPUs in PCI order, CUDA fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID; on a mixed-model host an index can name different GPUs in the two orders."
            }
            Self::LearnerUuidUnresolved => {
                "The learner's physical GPU is identified by its UUID; an unreadable UUID proves nothing."
            }
            Self::DifferentGpus => {
                "MPS shares one physical GPU between processes; on different GPUs there is nothing to share."
            }
            Self::CollectorUuidUnresolved => {
                "The collector's physical GPU must be proven equal to the learner's before sharing can be claimed."
            }
            Self::InconsistentSnapshot => {
                "The snapshot's records must describe the same pipe directory and the expected read-only queries; otherwise they prove nothing about this request."
            }
            Self::NonUtf8PipeDirectory => {
                "The pipe directory is recorded as text in the evidence and in the start command; a non-UTF-8 path cannot be recorded faithfully."
            }
            Self::ControlPathTooLong => {
                "The daemon listens on <pipe directory>/control, a Unix socket; its path must fit in 107 bytes or the daemon cannot create it and clients cannot connect."
            }
            Self::ControlPipeMissing => {
                "CUDA clients connect to the daemon through <pipe directory>/control; without it every process runs without MPS."
            }
            Self::NotAControlPipe => {
                "The control daemon creates a Unix socket there; anything else cannot be a live daemon's control pipe."
            }
            Self::ControlPipeInaccessible => {
                "A process that cannot reach and use the control pipe silently runs without MPS."
            }
            Self::DaemonUnreachable => {
                "A control socket can outlive its daemon; only an answer from the daemon proves it is live."
            }
            Self::DaemonTimedOut => {
                "A daemon that does not answer within the deadline (for example a stopped process) would hang every client's CUDA initialisation."
            }
            Self::DaemonAnswerUnrecognized => {
                "Only the known answer shape proves a live daemon of a known protocol; anything else is treated as unproven."
            }
            Self::GpuOutsideDaemonScope => {
                "The CUDA_VISIBLE_DEVICES the daemon started with defines the GPUs it serves; a client whose GPU is outside it sees no device (\"No CUDA GPUs are available\")."
            }
            Self::DaemonIndexRemap => {
                "A scoped daemon renumbers its GPUs from 0, so a client index other than 0 names a device that does not exist there (or another GPU); a UUID names the same GPU in both spaces."
            }
            Self::DaemonIdentityUnverified
            | Self::DaemonPidFileDisagrees
            | Self::DaemonOfAnotherUser => self.identity_why(),
            Self::DaemonScopeUnverified => {
                "Only the daemon's own environment shows which GPUs it serves; without it the scope is assumed, not proven."
            }
            Self::ServerOfAnotherUser => {
                "A daemon runs one server at a time: a server of another user is asked to exit once its clients finish, and this job's clients queue behind it (hang at CUDA init or run serialised), unless the daemon runs in multi-user mode."
            }
            Self::ServerOwnerUnverified => {
                "Only a server's /proc status shows its user; without it, a server of another user (which would make this job queue) cannot be ruled out."
            }
            Self::ComputeModeForbidsSharing => {
                "Prohibited allows no CUDA context, and Exclusive_Thread is a legacy mode that cannot host an MPS server for two processes; Default and Exclusive_Process work."
            }
            Self::ComputeModeUnverified => {
                "A GPU in Prohibited or Exclusive_Thread mode cannot be shared through MPS; without the recorded compute mode that is not ruled out."
            }
            Self::ServerCrashLoop
            | Self::ServerFatalErrorLogged
            | Self::DaemonLogUnverified
            | Self::DaemonLogPendingClient
            | Self::DaemonLogClientPidZero
            | Self::DaemonLogServerFailedToStart => self.log_why(),
            Self::GpuNeedsRecovery | Self::GpuHealthUnverified | Self::PersistenceModeDisabled => {
                self.health_why()
            }
            // The codes of what the processes will be served with.
            _ => self.settings_why(),
        }
    }

    /// [`Code::why`] of the codes read from the daemon's log.
    fn log_why(self) -> &'static str {
        match self {
            Self::ServerCrashLoop => {
                "A daemon whose servers keep crashing answers its queries while no client can be served; each client fails or hangs at CUDA initialisation."
            }
            Self::ServerFatalErrorLogged => {
                "A server handling a fatal GPU error rejects every new client until its clients exit and the daemon creates a new server context; drivers before 550 cannot report that state."
            }
            Self::DaemonLogUnverified => {
                "Only the daemon's log shows servers that crash or fault while the daemon still answers; without it a server that cannot live is not ruled out."
            }
            Self::DaemonLogPendingClient => {
                "A client of another user waits for a server of its own; once this job's server idles, the daemon hands the GPU to that user."
            }
            Self::DaemonLogClientPidZero => {
                "A client whose PID the daemon cannot see (PID 0) runs in another PID namespace; the daemon cannot track it, and client-list checks cannot match it."
            }
            Self::DaemonLogServerFailedToStart => {
                "A server that failed to start leaves its clients without MPS; a later attempt may fail the same way."
            }
            _ => "",
        }
    }

    /// [`Code::why`] of the daemon identity codes.
    fn identity_why(self) -> &'static str {
        match self {
            Self::DaemonPidFileDisagrees => {
                "The daemon's pid file is writable by every user (mode 0666) and outlives a killed daemon; one naming another process than the lock's holder is stale or planted, and a tool that trusts it would judge the wrong process."
            }
            Self::DaemonOfAnotherUser => {
                "Starting an MPS server for another user is root-only: a control daemon run by an ordinary user serves that user alone, so another user's clients are never served (and any user can start such a daemon in a world-writable pipe directory such as /tmp/nvidia-mps)."
            }
            _ => {
                "Only the lock the control daemon holds proves which process it is; a pid file, a process's name or its command line can be written by any local user, so the daemon's scope, user and multi-user mode are not proven."
            }
        }
    }

    /// [`Code::why`] of the GPU health codes.
    fn health_why(self) -> &'static str {
        match self {
            Self::GpuNeedsRecovery => {
                "A GPU whose driver asks for a reset, a reboot or a drain, or with a retired page or row remap pending, fails CUDA initialisation or faults soon; under MPS one fatal fault takes every client of the GPU down."
            }
            Self::GpuHealthUnverified => {
                "Only nvidia-smi's recovery action, pending retired pages and remapped rows show that the GPU needs no reset; without them a GPU that will fail every MPS client is not ruled out."
            }
            Self::PersistenceModeDisabled => {
                "Without persistence the driver deinitialises the GPU after its last client: the compute mode set for MPS is lost then (what was read is only a snapshot), and a new server's initialisation is slow enough to fail clients at job start."
            }
            // Only the codes above are routed here; every code's `why` is checked to be
            // non-empty by the tests.
            _ => "",
        }
    }

    /// [`Code::why`] of the codes of what the processes will be served with.
    fn settings_why(self) -> &'static str {
        match self {
            Self::ServerFault => {
                "A server in FAULT rejects every new client with CUDA_ERROR_MPS_SERVER_NOT_READY until its clients exit and the daemon starts a new one."
            }
            Self::ServerStatusUnverified => {
                "Only get_server_status (550+ drivers) shows whether the server the clients would join is ACTIVE or in FAULT; without it a faulted server is not ruled out."
            }
            Self::ActiveThreadPercentageBelowRequirement => {
                "Every new server, and so every client, gets at most the daemon's default share of the GPU's threads; a client cannot raise it above the daemon's value."
            }
            Self::PinnedMemBelowRequirement => {
                "Each client of a new server can pin at most the daemon's default limit of device memory; a job that needs more fails with out-of-memory errors under the cap."
            }
            Self::PinnedMemLimitUnverified => {
                "The daemon's default pinned-memory limit caps each client's device memory; without it the stated minimum is not proven."
            }
            Self::StaleServerClient => {
                "A client killed without synchronising its GPU work (Ctrl-C, an OOM kill, a job timeout) leaves its MPS server in an undefined state; NVIDIA says the server and all its clients must be restarted, and a new client of it hangs at CUDA init."
            }
            Self::ServerClientsUnverified => {
                "Only the server's client list and each client's /proc state show that no client of a killed run is left; without them a server in an undefined state is not ruled out."
            }
            Self::ServerClientLimitUnverified => {
                "A server takes at most 48 clients per GPU (Volta and newer), and a client beyond that fails at context creation; a client list does not say which GPU each client uses, so on a daemon serving several GPUs a count over the limit does not show that this GPU is full."
            }
            Self::ServerHasClients => {
                "The server already serves live clients: another job shares the GPU with this one, on purpose or not."
            }
            Self::ServerLimitsUnverified => {
                "A running server applies the active-thread percentage and pinned-memory limit it started with, not the daemon's defaults; without its own values the stated minimum is not proven."
            }
            // The rest: every code's `why` is checked to be non-empty by the tests.
            _ => self.shared_why(),
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
