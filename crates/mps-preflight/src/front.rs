//! The one front end of the command line and the Python package.
//!
//! As ripgrep parses argv into `LowArgs` and converts them once into `HiArgs`, both the
//! command line's clap arguments (`args.rs`) and the Python package's keyword arguments
//! (`mps-preflight-py`'s `spec.rs`) fill one [`LowArgs`], which [`LowArgs::to_high`] converts
//! into the policy's [`Request`] and mps-host's [`ProbeOptions`]: there is no other conversion.
//! The value parsers of the options both front ends take as text ([`parse_percentage`],
//! [`parse_mem_size`], [`parse_user`], …) are here too, worded for the caller ([`Wording`]).
//!
//! The native entry points return structured results, never a command line's text:
//! [`diagnose`] (`doctor`: the findings, the warnings and the evidence of one verdict),
//! [`visibility()`] and [`attest()`] (a [`Refused`] carries its code as data). The command line
//! renders them (`visibility.rs`, `attest.rs`, `commands/doctor.rs`); the Python binding hands
//! them to Python as they are.
//!
//! # Examples
//!
//! ```
//! use mps_preflight::front::{LowArgs, Snapshot, Wording, diagnose, snapshot_facts};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/hosts/healthy-socket-with-server.json");
//! let low = LowArgs::new(Some("mps"), "cuda:0", Some("cuda:0"), Some("mjwarp"), Wording::Python);
//! let high = low.to_high();
//! let facts = snapshot_facts(Snapshot::Path(std::path::Path::new(path)), None)?;
//! let diagnosis = diagnose(&high.request, &facts);
//! assert!(diagnosis.findings.is_empty());
//! assert_eq!(diagnosis.evidence.and_then(|e| e.server_pid), Some(4428));
//! # Ok::<(), String>(())
//! ```

use std::path::Path;
use std::time::Duration;

use mps_host::ProbeOptions;
use sharing_policy::{Evidence, Finding, HostFacts, MemSize, Percentage, Request, Vocabulary};

mod attest;
mod visibility;

pub use attest::{
    AttestSpec, attest, attest_words, judge_attest, observe_attest, pid, wait, worth_waiting,
};
pub(crate) use attest::{pipe_directory, record, two_processes};
pub use visibility::{VISIBILITY_CODE, Visible, visibility};

/// Who asks, and so which words its messages use. Only the words differ: every answer, code
/// and piece of evidence is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Wording {
    /// The command line: its flags (`--request mps`, `--devices`, `--wait-ms 30000`).
    Cli,
    /// The Python package's native API: a request's messages are the command line's, word for
    /// word (its keywords are the flags' names), and its own parameters are its keywords
    /// (`mask=`, `wait=30`, `learner_pid`).
    Python,
    /// The reference module's drop-in (`mps_preflight.compat`): the reference's words exactly.
    Reference,
}

impl Wording {
    /// The policy's vocabulary for a request's messages.
    pub fn vocabulary(self) -> Vocabulary {
        match self {
            Self::Cli | Self::Python => Vocabulary::Cli,
            Self::Reference => Vocabulary::Reference,
        }
    }

    /// The name of one of the caller's options.
    pub fn name(self, option: Param) -> &'static str {
        let python = !matches!(self, Self::Cli);
        match (option, python) {
            (Param::MinActiveThreadPercentage, false) => "--min-active-thread-percentage",
            (Param::MinActiveThreadPercentage, true) => "min_active_thread_percentage",
            (Param::MinPinnedMem, false) => "--min-pinned-mem",
            (Param::MinPinnedMem, true) => "min_pinned_mem",
            (Param::MinShm, false) => "--min-shm",
            (Param::MinShm, true) => "min_shm",
            (Param::AsUser, false) => "--as-user",
            (Param::AsUser, true) => "as_user",
            (Param::Devices, false) => "--devices",
            (Param::Devices, true) => "mask=",
            (Param::LearnerPid, false) => "--learner-pid",
            (Param::LearnerPid, true) => "learner_pid",
            (Param::CollectorPid, false) => "--collector-pid",
            (Param::CollectorPid, true) => "collector_pid",
            (Param::Wait, false) => "--wait-ms",
            (Param::Wait, true) => "wait",
        }
    }
}

/// An option whose name a message gives ([`Wording::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Param {
    /// `--min-active-thread-percentage`, `min_active_thread_percentage=`.
    MinActiveThreadPercentage,
    /// `--min-pinned-mem`, `min_pinned_mem=`.
    MinPinnedMem,
    /// `--min-shm`, `min_shm=`.
    MinShm,
    /// `--as-user`, `as_user=`.
    AsUser,
    /// `visibility --devices`, `visibility(mask=)`.
    Devices,
    /// `attest --learner-pid`, `attest(learner_pid)`.
    LearnerPid,
    /// `attest --collector-pid`, `attest(collector_pid)`.
    CollectorPid,
    /// `attest --wait-ms`, `attest(wait=)`.
    Wait,
}

/// What a caller asks of `probe`, `check` and `doctor`, as its front end parsed it: the
/// low-level arguments, filled by the command line's clap arguments or by Python's keywords.
#[derive(Debug, Clone, PartialEq)]
pub struct LowArgs {
    /// The sharing mode as given; `None` or `null` (any case, whitespace around it ignored) is
    /// a null request; any other text is passed on for the policy to judge.
    pub mode: Option<String>,
    /// The learner's device, e.g. `cuda:0`.
    pub learner_device: String,
    /// The collector's device, when there is one.
    pub collector_device: Option<String>,
    /// The simulation backend (the command line's is optional; Python's is always given).
    pub backend: Option<String>,
    /// This rank.
    pub rank: i64,
    /// The number of ranks.
    pub world_size: i64,
    /// Backends that support process sharing.
    pub supported_backends: Vec<String>,
    /// The learner's GPU UUID as its own CUDA runtime reports it.
    pub learner_uuid: Option<String>,
    /// The deadline of each host query.
    pub timeout: Duration,
    /// Reject what could not be verified.
    pub require_verified: bool,
    /// The least default active-thread percentage.
    pub min_active_thread_percentage: Option<Percentage>,
    /// The least default pinned-memory limit.
    pub min_pinned_mem: Option<MemSize>,
    /// The UID the request is judged for (resolved by [`parse_user`]).
    pub as_user: Option<u32>,
    /// The least free space of `/dev/shm`.
    pub min_shm: Option<MemSize>,
    /// Whose words the messages use.
    pub wording: Wording,
}

/// What [`LowArgs`] convert into: the request as the policy reads it, and what a probe
/// observes for it.
#[derive(Debug, Clone, PartialEq)]
pub struct HiArgs {
    /// The request.
    pub request: Request,
    /// What `probe` (and `doctor` without a snapshot) observes.
    pub probe: ProbeOptions,
}

impl LowArgs {
    /// A request of rank 0 of 1, the default supported backend and deadline, nothing else set.
    pub fn new(
        mode: Option<&str>,
        learner_device: &str,
        collector_device: Option<&str>,
        backend: Option<&str>,
        wording: Wording,
    ) -> Self {
        Self {
            mode: mode.map(str::to_owned),
            learner_device: learner_device.to_owned(),
            collector_device: collector_device.map(str::to_owned),
            backend: backend.map(str::to_owned),
            rank: 0,
            world_size: 1,
            supported_backends: vec![sharing_policy::DEFAULT_SUPPORTED_BACKEND.to_owned()],
            learner_uuid: None,
            timeout: mps_host::DEFAULT_TIMEOUT,
            require_verified: false,
            min_active_thread_percentage: None,
            min_pinned_mem: None,
            as_user: None,
            min_shm: None,
            wording,
        }
    }

    /// The one conversion: the request (null for `null` in any case) in the caller's
    /// vocabulary, and what `probe` observes for it (nothing but the environment when the
    /// policy looks at nothing else: `sharing_policy::observes_host`).
    pub fn to_high(&self) -> HiArgs {
        let mode = self
            .mode
            .as_deref()
            .filter(|mode| !mode.trim().eq_ignore_ascii_case("null"));
        let request = Request {
            backend: self.backend.clone(),
            rank: self.rank,
            world_size: self.world_size,
            supported_backends: self.supported_backends.clone(),
            require_verified: self.require_verified,
            vocabulary: self.wording.vocabulary(),
            min_active_thread_percentage: self.min_active_thread_percentage,
            min_pinned_mem: self.min_pinned_mem,
            as_user: self.as_user,
            min_shm: self.min_shm,
            ..Request::new(
                mode,
                &self.learner_device,
                self.collector_device.as_deref(),
                self.backend.as_deref().unwrap_or_default(),
            )
        };
        let probe = ProbeOptions {
            timeout: self.timeout,
            learner_uuid: self.learner_uuid.clone(),
            observe_cuda: sharing_policy::observes_host(&request),
            // The judged user's groups are recorded for the pipe directory's reach.
            as_user: request.as_user,
            ..ProbeOptions::default()
        };
        HiArgs { request, probe }
    }
}

/// `--min-active-thread-percentage` / `min_active_thread_percentage=`: above 0, at most 100,
/// at most one decimal.
///
/// # Errors
/// The caller's message for any other text.
pub fn parse_percentage(text: &str, wording: Wording) -> Result<Percentage, String> {
    const WHAT: &str = "above 0 and at most 100 with at most one decimal (50, 12.5)";
    Percentage::parse_arg(text).ok_or_else(|| match wording {
        Wording::Cli => format!("expected a percentage {WHAT}, got {text:?}"),
        _ => format!(
            "{} must be {WHAT}, got {text:?}",
            wording.name(Param::MinActiveThreadPercentage)
        ),
    })
}

/// `--min-pinned-mem`, `--min-shm` and their keywords: digits then `M` or `G`.
///
/// # Errors
/// The caller's message for any other text.
pub fn parse_mem_size(text: &str, param: Param, wording: Wording) -> Result<MemSize, String> {
    MemSize::parse_arg(text).ok_or_else(|| {
        if wording == Wording::Cli {
            return format!(
                "expected an amount of memory as digits then M or G (512M, 10G), got {text:?}"
            );
        }
        let example = if param == Param::MinShm {
            "512M, 2G"
        } else {
            "512M, 10G"
        };
        format!(
            "{} must be digits then M or G ({example}), got {text:?}",
            wording.name(param)
        )
    })
}

/// `--as-user` / `as_user=`: a UID, or a user name in /etc/passwd (mps-host's bounded read).
///
/// # Errors
/// A name that no line holds (named after the option for Python; clap names it for the CLI).
pub fn parse_user(text: &str, wording: Wording) -> Result<u32, String> {
    let name = wording.name(Param::AsUser);
    if wording != Wording::Cli
        && let Some(digits) = text.strip_prefix('-')
        && !digits.is_empty()
        && digits.bytes().all(|byte| byte.is_ascii_digit())
    {
        // Python's `as_user=-1`: an int, never a name.
        return Err(format!("{name} must be a UID of 0 or more, got {text}"));
    }
    mps_host::resolve_user(text).map_err(|why| {
        if wording == Wording::Cli {
            why
        } else {
            format!("{name}: {why}")
        }
    })
}

/// A query's deadline of `seconds` (Python's `timeout=`): positive and finite, at least 1 ms as
/// on the command line (`--timeout-ms 1`).
///
/// # Errors
/// A message naming the value, for anything else.
pub fn deadline(seconds: f64) -> Result<Duration, String> {
    match Duration::try_from_secs_f64(seconds) {
        Ok(duration) if duration >= Duration::from_millis(1) => Ok(duration),
        _ => Err(format!(
            "timeout must be a number of seconds of at least 0.001, got {seconds}"
        )),
    }
}

/// A query's deadline of `seconds` for `visibility` and `attest`, which round to whole
/// milliseconds and raise anything below one to one (as Python's `timeout=` always did).
///
/// # Errors
/// A number that is not finite.
pub fn rounded_deadline(seconds: f64) -> Result<Duration, String> {
    let millis = (seconds * 1000.0).round_ties_even();
    if !millis.is_finite() {
        return Err(format!(
            "timeout must be a finite number of seconds, got {seconds}"
        ));
    }
    // Finite, and clamped into u64's range by the saturating cast; at least 1 ms.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped"
    )]
    let millis = millis.max(1.0) as u64;
    Ok(Duration::from_millis(millis))
}

/// Where a snapshot comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshot<'a> {
    /// A file, read as `--snapshot FILE` (`-`: standard input).
    Path(&'a Path),
    /// JSON text (Python's `dict` is passed as its JSON text).
    Text(&'a str),
}

/// The snapshot's facts, with `learner_uuid` (when given) replacing the recorded one, exactly
/// as `probe` puts it into a fresh capture. The checks and messages are `--snapshot`'s.
///
/// # Errors
/// An unreadable file, text that is not JSON, a snapshot of another schema, or one whose
/// records do not have this schema's shape.
pub fn snapshot_facts(
    source: Snapshot<'_>,
    learner_uuid: Option<&str>,
) -> Result<HostFacts, String> {
    let mut facts = match source {
        Snapshot::Path(path) => crate::snapshot::load(path)?,
        Snapshot::Text(text) => {
            let value: serde_json::Value = serde_json::from_str(text)
                .map_err(|err| format!("snapshot: not valid JSON: {err}"))?;
            crate::snapshot::from_value(value, &"snapshot")?
        }
    };
    if let Some(uuid) = learner_uuid {
        facts.learner_uuid = Some(uuid.to_owned());
    }
    Ok(facts)
}

/// `doctor`'s answer: one verdict's findings, warnings and evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    /// Every unmet prerequisite (empty exactly when the request validates).
    pub findings: Vec<Finding>,
    /// What could not be verified and the advisories: they block nothing.
    pub warnings: Vec<Finding>,
    /// The evidence, when the request validates.
    pub evidence: Option<Evidence>,
}

/// Judges `request` on `facts` once (`sharing_policy::judge`) for `doctor`.
pub fn diagnose(request: &Request, facts: &HostFacts) -> Diagnosis {
    let sharing_policy::Verdict {
        result,
        findings,
        warnings,
        ..
    } = sharing_policy::judge(request, facts);
    Diagnosis {
        findings,
        warnings,
        evidence: result.ok(),
    }
}

/// Why a native entry point refused: its kind and its errors, each with its code as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Rejected (the command line's exit 1): each error's code and message, the first code
    /// the one a caller raises.
    Rejected(Vec<(&'static str, String)>),
    /// A usage error or an input that cannot be read or written (exit 2).
    Input(String),
}

impl Refused {
    /// One rejection with its code.
    pub(crate) fn rejected(code: &'static str, message: impl Into<String>) -> Self {
        Self::Rejected(vec![(code, message.into())])
    }
}

#[cfg(test)]
mod tests;
