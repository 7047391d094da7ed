//! What one Python call asks for: the request, and how patiently to observe the host.

use std::collections::BTreeMap;
use std::time::Duration;

use mps_host::ProbeOptions;
use sharing_policy::{MemSize, Percentage, Request};

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
    /// then the reference's wording ([`crate::policy::vocabulary`]).
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

    /// The request as the policy reads it; `null` in any case is no mode, as on the command
    /// line (`--request null`). Built on [`Request::new`], so a request field the policy adds
    /// later starts at its default here too; the backend is always named, as the reference
    /// requires. The vocabulary is [`crate::policy::vocabulary`]'s for this API.
    ///
    /// # Errors
    /// A stated minimum that is not a percentage or an amount of memory as the CLI reads them
    /// (a requirement is never dropped: Python raises `ValueError`), or an `as_user` that names
    /// no user.
    pub fn request(&self) -> Result<Request, String> {
        let mode = self
            .mode
            .as_deref()
            .filter(|mode| !mode.trim().eq_ignore_ascii_case("null"));
        let percentage = self
            .min_active_thread_percentage
            .as_deref()
            .map(|text| {
                Percentage::parse_arg(text).ok_or_else(|| {
                    format!("min_active_thread_percentage must be above 0 and at most 100 with at most one decimal (50, 12.5), got {text:?}")
                })
            })
            .transpose()?;
        let pinned = self
            .min_pinned_mem
            .as_deref()
            .map(|text| {
                MemSize::parse_arg(text).ok_or_else(|| {
                    format!("min_pinned_mem must be digits then M or G (512M, 10G), got {text:?}")
                })
            })
            .transpose()?;
        let shm = self
            .min_shm
            .as_deref()
            .map(|text| {
                MemSize::parse_arg(text).ok_or_else(|| {
                    format!("min_shm must be digits then M or G (512M, 2G), got {text:?}")
                })
            })
            .transpose()?;
        let as_user = self
            .as_user
            .as_deref()
            .map(|user| mps_host::resolve_user(user).map_err(|why| format!("as_user: {why}")))
            .transpose()?;
        Ok(Request {
            rank: self.rank,
            world_size: self.world_size,
            supported_backends: self.supported_backends.clone(),
            require_verified: self.require_verified,
            vocabulary: crate::policy::vocabulary(self.compat),
            min_active_thread_percentage: percentage,
            min_pinned_mem: pinned,
            as_user,
            min_shm: shm,
            ..Request::new(
                mode,
                &self.learner_device,
                self.collector_device.as_deref(),
                &self.backend,
            )
        })
    }

    /// What `probe` observes for `request`: what the CLI's `probe` observes.
    ///
    /// # Errors
    /// The message of [`deadline`] for a timeout that is not a positive number of seconds.
    pub fn probe_options(&self, request: &Request) -> Result<ProbeOptions, String> {
        Ok(ProbeOptions {
            timeout: deadline(self.timeout)?,
            learner_uuid: self.learner_uuid.clone(),
            observe_cuda: sharing_policy::observes_host(request),
            as_user: request.as_user,
            ..ProbeOptions::default()
        })
    }
}

/// `timeout` seconds as a deadline: positive and finite, at least 1 ms as on the command line
/// (`--timeout-ms 1`).
///
/// # Errors
/// A message naming the value, for anything else.
pub fn deadline(timeout: f64) -> Result<Duration, String> {
    match Duration::try_from_secs_f64(timeout) {
        Ok(duration) if duration >= Duration::from_millis(1) => Ok(duration),
        _ => Err(format!(
            "timeout must be a number of seconds of at least 0.001, got {timeout}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_in_any_case_is_no_mode_and_anything_else_is_passed_on() {
        for null in [None, Some("null"), Some(" NULL ")] {
            let spec = Spec::new(null, "cuda:0", None, "mjwarp");
            assert_eq!(spec.request().unwrap().mode, None, "{null:?}");
        }
        for other in ["mps", "", "none"] {
            let spec = Spec::new(Some(other), "cuda:0", None, "mjwarp");
            assert_eq!(spec.request().unwrap().mode.as_deref(), Some(other));
        }
    }

    #[test]
    fn require_verified_reaches_the_request() {
        let mut spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        assert!(!spec.request().unwrap().require_verified);
        spec.require_verified = true;
        assert!(spec.request().unwrap().require_verified);
    }

    #[test]
    fn as_user_is_resolved_as_the_cli_resolves_it() {
        let mut spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        assert_eq!(spec.request().unwrap().as_user, None);
        spec.as_user = Some("1001".to_owned());
        assert_eq!(spec.request().unwrap().as_user, Some(1001));
        spec.as_user = Some("root".to_owned());
        assert_eq!(spec.request().unwrap().as_user, Some(0));
        spec.as_user = Some("no-such-user-mps-preflight".to_owned());
        let error = spec.request().unwrap_err();
        assert!(error.starts_with("as_user: no user named"), "{error}");
    }

    #[test]
    fn a_deadline_is_at_least_a_millisecond_and_finite() {
        assert_eq!(deadline(5.0), Ok(Duration::from_secs(5)));
        assert_eq!(deadline(0.001), Ok(Duration::from_millis(1)));
        for bad in [0.0, 0.0005, -1.0, f64::NAN, f64::INFINITY] {
            assert!(deadline(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_null_request_on_a_cpu_learner_observes_nothing() {
        let spec = Spec::new(None, "cpu", None, "mjwarp");
        let options = spec.probe_options(&spec.request().unwrap()).unwrap();
        assert!(!options.observe_cuda);
        let spec = Spec::new(Some("mps"), "cpu", None, "mjwarp");
        assert!(
            spec.probe_options(&spec.request().unwrap())
                .unwrap()
                .observe_cuda
        );
    }
}
