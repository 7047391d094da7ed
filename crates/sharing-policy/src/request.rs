use serde::{Deserialize, Serialize};

use crate::{MemSize, Percentage, Vocabulary};

/// The backend supported when a caller configures none.
pub const DEFAULT_SUPPORTED_BACKEND: &str = "mjwarp";

/// What a launcher asks for, exactly as configured (nothing normalised yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The requested sharing mode as given: `None` for null, otherwise the raw string
    /// (`"mps"` in any case and surrounding whitespace is the only explicit mode).
    pub mode: Option<String>,
    /// The learner's device string, e.g. `cuda:0`.
    pub learner_device: String,
    /// The collector's device string, when the backend binds one.
    pub collector_device: Option<String>,
    /// The simulation backend the run uses; `None` checks nothing about backends (the
    /// command line's `--backend` is optional; the reference always names one).
    pub backend: Option<String>,
    /// This rank (signed, so a negative value is a rejection rather than a parse error).
    pub rank: i64,
    /// The number of ranks.
    pub world_size: i64,
    /// Backends that support process sharing (default: `mjwarp`).
    pub supported_backends: Vec<String>,
    /// Whether a prerequisite that could not be observed is a rejection (`--require-verified`)
    /// rather than an entry in the evidence's `unverified` list.
    #[serde(default)]
    pub require_verified: bool,
    /// The words of the messages: the reference module's configuration (the default) or the
    /// command line's flags.
    #[serde(default)]
    pub vocabulary: Vocabulary,
    /// The least default active-thread percentage the daemon must give each new server
    /// (`--min-active-thread-percentage`); `None` states no minimum.
    #[serde(default)]
    pub min_active_thread_percentage: Option<Percentage>,
    /// The least default pinned-memory limit the daemon may set for the GPU
    /// (`--min-pinned-mem`; no limit at all meets any minimum); `None` states no minimum.
    #[serde(default)]
    pub min_pinned_mem: Option<MemSize>,
    /// The user whose job is judged (`--as-user`): the owner checks compare the MPS servers'
    /// owners with this UID instead of the probing process's. `None` judges for the probing
    /// process itself (the snapshot's `caller`). A root Prolog passes the job's user here, so
    /// that the job user's own live server is not "another user's".
    #[serde(default)]
    pub as_user: Option<u32>,
    /// The least free space the probing process's `/dev/shm` must have (`--min-shm`);
    /// `None` states no minimum.
    #[serde(default)]
    pub min_shm: Option<MemSize>,
}

impl Request {
    /// A request with rank 0 of 1, the backend `backend`, the default supported backend and
    /// the reference's vocabulary.
    pub fn new(
        mode: Option<&str>,
        learner_device: &str,
        collector_device: Option<&str>,
        backend: &str,
    ) -> Self {
        Self {
            mode: mode.map(str::to_owned),
            learner_device: learner_device.to_owned(),
            collector_device: collector_device.map(str::to_owned),
            backend: Some(backend.to_owned()),
            rank: 0,
            world_size: 1,
            supported_backends: vec![DEFAULT_SUPPORTED_BACKEND.to_owned()],
            require_verified: false,
            vocabulary: Vocabulary::Reference,
            min_active_thread_percentage: None,
            min_pinned_mem: None,
            as_user: None,
            min_shm: None,
        }
    }

    /// The UID the request is judged for: [`Request::as_user`], else the probing process's
    /// effective UID as the snapshot recorded it (`None` when neither is known).
    pub fn judged_for_uid(&self, facts: &crate::HostFacts) -> Option<u32> {
        self.as_user
            .or_else(|| facts.caller.as_ref().map(|caller| caller.euid))
    }
}
