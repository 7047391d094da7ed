//! [`Code::why`]: why each prerequisite matters, in the reference's words or the command
//! line's; the checks beyond the control pipe are in `shared.rs`.

use super::Code;
use crate::Vocabulary;

impl Code {
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
