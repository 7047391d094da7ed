use serde::{Deserialize, Serialize};

use crate::Code;

/// Per-rank evidence: the seed's `to_dict` keys, in its order, plus `daemon_pid`, then what
/// "served" needs (schema v2): who asked, who owns the servers, the daemon's GPU scope and
/// mode, the GPU's compute mode and driver, and what could not be verified; then the host
/// the rank ran on (`host_name`), which `merge` groups by; last, what the processes
/// will be served with: the daemon's default active-thread percentage and pinned-memory limit
/// for the GPU, and the server's state.
///
/// Field order is the JSON key order; keep it. The keys after `daemon_pid` read as their
/// defaults when absent, so older evidence still reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// The configured mode (`"mps"` or null).
    pub configured: Option<String>,
    /// The mode in effect; equals `configured` when validated.
    pub effective: Option<String>,
    /// True only when every prerequisite of an explicit request was proven.
    pub validated: bool,
    /// This rank.
    pub rank: i64,
    /// The number of ranks.
    pub world_size: i64,
    /// The learner's device (normalised to `cuda:N` for an explicit request).
    pub learner_device: Option<String>,
    /// The collector's device (normalised to `cuda:N` for an explicit request).
    pub collector_device: Option<String>,
    /// The learner GPU's comparison token (upper case, no `GPU-`, no dashes).
    pub learner_gpu_uuid: Option<String>,
    /// The collector GPU's comparison token.
    pub collector_gpu_uuid: Option<String>,
    /// The raw `CUDA_MPS_PIPE_DIRECTORY` (null when unset).
    pub pipe_directory_env: Option<String>,
    /// The effective pipe directory.
    pub pipe_directory: Option<String>,
    /// `<pipe_directory>/control`.
    pub control_pipe: Option<String>,
    /// `unix_socket`, `fifo` or null.
    pub control_pipe_kind: Option<String>,
    /// The first MPS server PID that `get_server_list` printed (null for an idle daemon).
    pub server_pid: Option<i64>,
    /// True only for an unconfigured run whose control daemon answered.
    pub ambient_server: bool,
    /// The control daemon's PID from its pid file, when that process is alive, or from a
    /// `/proc` scan that identified it.
    pub daemon_pid: Option<i64>,
    /// The probing process's effective UID (null when not recorded).
    #[serde(default)]
    pub caller_uid: Option<u32>,
    /// The UID the request was judged for: the request's `as_user` (`--as-user`), else
    /// `caller_uid`. The owner checks compare the servers' owners with it (null when neither
    /// is known).
    #[serde(default)]
    pub judged_for_uid: Option<u32>,
    /// The effective UID of each listed MPS server whose owner was read, in order.
    #[serde(default)]
    pub server_uids: Vec<u32>,
    /// The daemon's `CUDA_VISIBLE_DEVICES`, raw (null when unknown, or unset: see
    /// `unverified`).
    #[serde(default)]
    pub daemon_visible_devices: Option<String>,
    /// Whether the daemon's command line shows multi-user mode (`-m`); null when unknown.
    #[serde(default)]
    pub daemon_multiuser: Option<bool>,
    /// The GPU's compute mode as `nvidia-smi` printed it (null when not recorded).
    #[serde(default)]
    pub compute_mode: Option<String>,
    /// The NVIDIA driver version as `nvidia-smi` printed it (null when not recorded).
    #[serde(default)]
    pub driver_version: Option<String>,
    /// Every prerequisite that could not be observed, by code ([`Code::UNVERIFIABLE`]); empty
    /// when all were proven (and always empty for a null request, which claims nothing).
    #[serde(default)]
    pub unverified: Vec<Code>,
    /// The host the rank ran on ([`crate::HostFacts::host_name`], lossy UTF-8; null when not
    /// recorded). `merge` groups its per-host checks by it.
    #[serde(default)]
    pub host_name: Option<String>,
    /// The daemon's default active-thread percentage, from the liveness line
    /// (`get_default_active_thread_percentage`, `%.1f`); null when not read.
    #[serde(default)]
    pub default_active_thread_percentage: Option<crate::Percentage>,
    /// The daemon's default pinned-memory limit for the validated GPU's device ordinal, as
    /// the daemon printed it (`10G`, `512M`: whole GiB are rounded down); null when no limit
    /// is set or when it was not read (`unverified` says which, when a requirement asked).
    #[serde(default)]
    pub default_pinned_mem_limit: Option<String>,
    /// The state of the first listed MPS server (`ACTIVE`, `INITIALIZING`, `FAULT`; 550+
    /// `get_server_status`); null when no server is listed or its state was not read.
    #[serde(default)]
    pub server_status: Option<String>,
    /// The control daemon's log read (`<log directory>/control.log`, lossy UTF-8); null when
    /// it was not read.
    #[serde(default)]
    pub daemon_log: Option<String>,
    /// The PID of the last `NEW SERVER <pid>: Ready` line of the daemon's log: the last server
    /// the daemon saw become ready; null when the log was not read or shows none.
    #[serde(default)]
    pub last_server_ready: Option<i64>,
    /// How many live clients the listed MPS servers already serve (`get_client_list`, each
    /// client's `/proc` state); null when no server is listed or a client list or client was
    /// not read. A dead or zombie client is a rejection (`stale-server-client`), not counted.
    #[serde(default)]
    pub server_clients: Option<usize>,
    /// The PIDs of those live clients, as the daemon printed them; null as for
    /// `server_clients`.
    #[serde(default)]
    pub server_client_pids: Option<Vec<i64>>,
    /// The lowest active-thread percentage a listed server applies
    /// (`get_active_thread_percentage <s>`, `%.1f`): what a new client gets while that server
    /// runs, instead of `default_active_thread_percentage`; null when no server is listed or
    /// it was not read.
    #[serde(default)]
    pub server_active_thread_percentage: Option<crate::Percentage>,
    /// The lowest pinned-memory limit for the validated GPU a listed server applies
    /// (`get_device_pinned_mem_limit <s> <dev>`), as printed; null when no server is listed,
    /// none is set, or it was not read.
    #[serde(default)]
    pub server_pinned_mem_limit: Option<String>,
    /// The free bytes of the probing process's `/dev/shm` (`statvfs`: `f_bavail * f_frsize`);
    /// null when not read.
    #[serde(default)]
    pub shm_free_bytes: Option<u64>,
    /// The size in bytes of the probing process's `/dev/shm` (`f_blocks * f_frsize`); null
    /// when not read.
    #[serde(default)]
    pub shm_total_bytes: Option<u64>,
    /// The advisories found ([`Code::ADVISORY`]): what lowers capacity without stopping a
    /// client; never a rejection, not even with `--require-verified`. Empty when none.
    #[serde(default)]
    pub advisories: Vec<Code>,
    /// How many compute processes `nvidia-smi --query-compute-apps` found on the GPU, asked
    /// only when it is in `Exclusive_Process` and no MPS server runs yet (any is a rejection,
    /// `gpu-held-by-compute-process`, so validated evidence holds 0); null when not asked.
    #[serde(default)]
    pub gpu_compute_processes: Option<usize>,
    /// The per-device client limit the listed clients and the two to come were checked
    /// against (48 on Volta and newer); null when no server is listed or its clients were
    /// not read.
    #[serde(default)]
    pub server_client_limit: Option<u32>,
    /// How the judged user's reach of the pipe directory was proven (notes row 6): `root`
    /// (UID 0: no permission is checked) or `modes` (every directory on the way grants
    /// search, `control` and `log` grant write, by the recorded modes, owners and groups);
    /// null when it was not proven (then `pipe-access-unverified` is in `unverified`) or not
    /// judged.
    #[serde(default)]
    pub pipe_access: Option<String>,
}

impl Evidence {
    /// The evidence of rank `rank` of `world_size` before anything was configured, looked at or
    /// validated: every fact `None`, every list empty, `validated` and `ambient_server` false.
    /// A null request's evidence starts from it, and a test or an offline tool builds other
    /// evidence from it with struct-update syntax (`Evidence { validated: true,
    /// ..Evidence::unobserved(0, 1) }`), so a new field is added here once.
    ///
    /// ```
    /// let evidence = sharing_policy::Evidence::unobserved(3, 8);
    /// assert_eq!((evidence.rank, evidence.world_size, evidence.validated), (3, 8, false));
    /// assert!(evidence.unverified.is_empty() && evidence.configured.is_none());
    /// ```
    pub fn unobserved(rank: i64, world_size: i64) -> Self {
        Self {
            configured: None,
            effective: None,
            validated: false,
            rank,
            world_size,
            learner_device: None,
            collector_device: None,
            learner_gpu_uuid: None,
            collector_gpu_uuid: None,
            pipe_directory_env: None,
            pipe_directory: None,
            control_pipe: None,
            control_pipe_kind: None,
            server_pid: None,
            ambient_server: false,
            daemon_pid: None,
            caller_uid: None,
            judged_for_uid: None,
            server_uids: Vec::new(),
            daemon_visible_devices: None,
            daemon_multiuser: None,
            compute_mode: None,
            driver_version: None,
            unverified: Vec::new(),
            host_name: None,
            default_active_thread_percentage: None,
            default_pinned_mem_limit: None,
            server_status: None,
            daemon_log: None,
            last_server_ready: None,
            server_clients: None,
            server_client_pids: None,
            server_active_thread_percentage: None,
            server_pinned_mem_limit: None,
            shm_free_bytes: None,
            shm_total_bytes: None,
            advisories: Vec::new(),
            gpu_compute_processes: None,
            server_client_limit: None,
            pipe_access: None,
        }
    }
}
