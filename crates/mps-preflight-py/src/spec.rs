//! What one Python call asks for, as Python's keyword arguments give it: they fill the front
//! end's low-level arguments ([`LowArgs`], shared with the command line's clap arguments),
//! which are converted once, by [`LowArgs::to_high`], into the request and the probe options.

use std::collections::BTreeMap;

use mps_preflight::front::{self, LowArgs, Param, Wording};

/// The arguments of `probe`, `check` and `doctor`, as the Python side passes them (a `dict`
/// with these keys).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "python", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct Spec {
    /// The sharing mode as given; `None` or `"null"` (any case) is a null request.
    pub mode: Option<String>,
    /// The learner's device, e.g. `cuda:0`.
    pub learner_device: String,
    /// The collector's device, when there is one.
    pub collector_device: Option<String>,
    /// The simulation backend.
    pub backend: String,
    /// This rank.
    pub rank: i64,
    /// The number of ranks.
    pub world_size: i64,
    /// Backends that support process sharing.
    pub supported_backends: Vec<String>,
    /// The learner's GPU UUID as its own CUDA runtime reports it.
    pub learner_uuid: Option<String>,
    /// What this process's CUDA runtime reports per device index (`cuda:N` → UUID): the
    /// drop-in's `torch_module`, asked for the learner's and the collector's indices. Empty for
    /// the native API.
    pub cuda_device_uuids: BTreeMap<u32, String>,
    /// The deadline of each host query, in seconds.
    pub timeout: f64,
    /// Reject what could not be verified instead of listing it in the evidence's `unverified`
    /// key (the CLI's `--require-verified`).
    pub require_verified: bool,
    /// Whether the reference module's drop-in (`mps_preflight.compat`) asks: its messages are
    /// then the reference's wording ([`Wording::Reference`]).
    pub compat: bool,
    /// `min_active_thread_percentage=` as text (`"50"`, `"12.5"`), as the CLI's
    /// `--min-active-thread-percentage` reads it; `None` states no minimum.
    pub min_active_thread_percentage: Option<String>,
    /// `min_pinned_mem=` as text (`"512M"`, `"10G"`), as the CLI's `--min-pinned-mem`.
    pub min_pinned_mem: Option<String>,
    /// `as_user=` as text (a UID, or a user name in /etc/passwd), as the CLI's `--as-user`
    /// reads it; `None` judges for the calling process.
    pub as_user: Option<String>,
    /// `min_shm=` as text (`"512M"`, `"2G"`), as the CLI's `--min-shm`.
    pub min_shm: Option<String>,
}

impl Spec {
    /// A request of rank 0 of 1, the default supported backend and deadline, no learner UUID.
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
            backend: backend.to_owned(),
            rank: 0,
            world_size: 1,
            supported_backends: vec![sharing_policy::DEFAULT_SUPPORTED_BACKEND.to_owned()],
            learner_uuid: None,
            cuda_device_uuids: BTreeMap::new(),
            timeout: mps_host::DEFAULT_TIMEOUT.as_secs_f64(),
            require_verified: false,
            compat: false,
            min_active_thread_percentage: None,
            min_pinned_mem: None,
            as_user: None,
            min_shm: None,
        }
    }

    /// Whose words the messages use: the reference's for the drop-in, else the native API's.
    pub fn wording(&self) -> Wording {
        if self.compat {
            Wording::Reference
        } else {
            Wording::Python
        }
    }

    /// The front end's low-level arguments: the keywords' text read by the same parsers as the
    /// command line's flags ([`front::parse_percentage`], …), named as Python names them. The
    /// backend is always named, as the reference requires.
    ///
    /// # Errors
    /// A stated minimum that is not a percentage or an amount of memory (a requirement is never
    /// dropped: Python raises `ValueError`), an `as_user` that names no user, or a timeout that
    /// is not a positive number of seconds.
    pub fn low(&self) -> Result<LowArgs, String> {
        let wording = self.wording();
        let memory = |text: &Option<String>, param| {
            text.as_deref()
                .map(|text| front::parse_mem_size(text, param, wording))
                .transpose()
        };
        Ok(LowArgs {
            mode: self.mode.clone(),
            learner_device: self.learner_device.clone(),
            collector_device: self.collector_device.clone(),
            backend: Some(self.backend.clone()),
            rank: self.rank,
            world_size: self.world_size,
            supported_backends: self.supported_backends.clone(),
            learner_uuid: self.learner_uuid.clone(),
            timeout: front::deadline(self.timeout)?,
            require_verified: self.require_verified,
            min_active_thread_percentage: self
                .min_active_thread_percentage
                .as_deref()
                .map(|text| front::parse_percentage(text, wording))
                .transpose()?,
            min_pinned_mem: memory(&self.min_pinned_mem, Param::MinPinnedMem)?,
            as_user: self
                .as_user
                .as_deref()
                .map(|user| front::parse_user(user, wording))
                .transpose()?,
            min_shm: memory(&self.min_shm, Param::MinShm)?,
            wording,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sharing_policy::Vocabulary;

    #[test]
    fn require_verified_reaches_the_request() {
        let mut spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        assert!(!spec.low().unwrap().to_high().request.require_verified);
        spec.require_verified = true;
        assert!(spec.low().unwrap().to_high().request.require_verified);
    }

    #[test]
    fn as_user_is_resolved_as_the_cli_resolves_it() {
        let mut spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        assert_eq!(spec.low().unwrap().as_user, None);
        spec.as_user = Some("1001".to_owned());
        assert_eq!(spec.low().unwrap().as_user, Some(1001));
        spec.as_user = Some("root".to_owned());
        assert_eq!(spec.low().unwrap().as_user, Some(0));
        spec.as_user = Some("no-such-user-mps-preflight".to_owned());
        let error = spec.low().unwrap_err();
        assert!(error.starts_with("as_user: no user named"), "{error}");
    }

    #[test]
    fn a_bad_minimum_or_timeout_is_named_as_python_passes_it() {
        let mut spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        spec.min_shm = Some("2T".to_owned());
        assert!(
            spec.low()
                .unwrap_err()
                .starts_with("min_shm must be digits")
        );
        spec.min_shm = None;
        spec.timeout = 0.0;
        assert!(
            spec.low()
                .unwrap_err()
                .starts_with("timeout must be a number of seconds")
        );
    }

    #[test]
    fn compat_speaks_the_reference_s_words_and_the_native_api_the_cli_s() {
        let mut spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        let native = spec.low().unwrap().to_high().request;
        assert_eq!(native.vocabulary, Vocabulary::Cli);
        spec.compat = true;
        let compat = spec.low().unwrap().to_high().request;
        assert_eq!(compat.vocabulary, Vocabulary::Reference);
    }
}
