//! Whom a finding is about: the request's settings, the node, or the work already on it. A
//! fleet's Prolog drains a node only for a node fault; a workload conflict fails the one job
//! and leaves the node in service (docs/fleet.md).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Code;

/// The class of a [`Code`] ([`Code::class`]). The kebab-case spelling ([`CodeClass::as_str`])
/// is stable: the fleet recipes match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CodeClass {
    /// About what was asked (the mode, the devices, the backend, the rank, the pipe
    /// directory's spelling, the snapshot's schema, the job's own environment and container:
    /// its `CUDA_DEVICE_MAX_CONNECTIONS`, a private `/dev/shm`, a pipe directory whose modes keep
    /// the job's user out): fixing it means changing the
    /// request or the settings that made it, not the node.
    Setting,
    /// About the node: its daemon, GPUs, control pipe, scope, compute mode, or what could not
    /// be verified on it. Another job on the same node would meet it too.
    NodeFault,
    /// About the work already on the node: another user's live MPS server, or a server whose
    /// live clients hold it in `FAULT`. It ends when that job ends; the node is not at fault.
    WorkloadConflict,
}

impl CodeClass {
    /// Every class.
    pub const ALL: [Self; 3] = [Self::Setting, Self::NodeFault, Self::WorkloadConflict];

    /// The stable kebab-case name: `setting`, `node-fault`, `workload-conflict`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Setting => "setting",
            Self::NodeFault => "node-fault",
            Self::WorkloadConflict => "workload-conflict",
        }
    }
}

impl fmt::Display for CodeClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Code {
    /// Whom a finding of this code is about ([`CodeClass`]). Every code has exactly one
    /// class; a new code must be given one here (the match has no catch-all).
    pub fn class(self) -> CodeClass {
        match self {
            Self::UnsupportedMode
            | Self::UnsupportedSnapshotSchema
            | Self::UnsupportedBackend
            | Self::InvalidRank
            | Self::MissingCollector
            | Self::NotCudaDevice
            | Self::InvalidCudaDevice
            | Self::NonUtf8PipeDirectory
            | Self::ControlPathTooLong
            | Self::ShmNotShared
            | Self::PipeDirectoryUnreachable
            | Self::DeviceMaxConnectionsHigh => CodeClass::Setting,
            Self::ServerOfAnotherUser
            | Self::ServerFault
            | Self::ServerFatalErrorLogged
            | Self::DaemonLogPendingClient
            | Self::ServerHasClients
            | Self::GpuHeldByComputeProcess
            | Self::ServerClientLimitReached
            | Self::ServerClientLimitUnverified => CodeClass::WorkloadConflict,
            Self::UnsupportedOs
            | Self::CudaUnavailable
            | Self::DeviceOutOfRange
            | Self::MigVisibilityUnsupported
            | Self::AmbiguousDeviceOrder
            | Self::LearnerUuidUnresolved
            | Self::DifferentGpus
            | Self::CollectorUuidUnresolved
            | Self::InconsistentSnapshot
            | Self::ControlPipeMissing
            | Self::NotAControlPipe
            | Self::ControlPipeInaccessible
            | Self::DaemonUnreachable
            | Self::DaemonTimedOut
            | Self::DaemonAnswerUnrecognized
            | Self::GpuOutsideDaemonScope
            | Self::DaemonIndexRemap
            | Self::DaemonIdentityUnverified
            | Self::DaemonPidFileDisagrees
            | Self::DaemonOfAnotherUser
            | Self::DaemonScopeUnverified
            | Self::ServerOwnerUnverified
            | Self::GpuNeedsRecovery
            | Self::GpuHealthUnverified
            | Self::ComputeModeForbidsSharing
            | Self::ComputeModeUnverified
            | Self::ComputeAppsUnverified
            | Self::PersistenceModeDisabled
            | Self::ServerStatusUnverified
            | Self::ActiveThreadPercentageBelowRequirement
            | Self::PinnedMemBelowRequirement
            | Self::PinnedMemLimitUnverified
            | Self::ServerCrashLoop
            | Self::DaemonLogUnverified
            | Self::DaemonLogClientPidZero
            | Self::DaemonLogServerFailedToStart
            | Self::StaleServerClient
            | Self::ServerClientsUnverified
            | Self::ServerLimitsUnverified
            | Self::ShmUnverified
            | Self::PipeAccessUnverified
            | Self::ShmBelowRequirement
            | Self::DaemonOpenFilesLow => CodeClass::NodeFault,
        }
    }
}
