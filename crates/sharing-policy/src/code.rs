//! Stable, kebab-case codes: one per kind of unmet prerequisite.

use std::fmt;

use serde::{Deserialize, Serialize};

mod shared;
mod why;

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
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
