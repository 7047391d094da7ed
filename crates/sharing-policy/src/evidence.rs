use serde::{Deserialize, Serialize};

/// Per-rank evidence: the seed's `to_dict` keys, in its order, plus `daemon_pid`.
///
/// Field order is the JSON key order; keep it.
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
    /// The control daemon's PID from its pid file, when that process is alive.
    pub daemon_pid: Option<i64>,
}
