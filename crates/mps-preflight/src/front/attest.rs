//! `attest`: after both processes started, whether they are clients of one MPS server, for the
//! command line's `attest` (and `doctor --learner-pid`) and Python's `attest()`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mps_host::AttestOptions;
use sharing_policy::{AttestFacts, AttestWords, Attestation, OsText, Pid, PipeDirectorySource};

use super::{Param, Refused, Wording};

/// What one attestation asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttestSpec {
    /// The learner.
    pub learner: Pid,
    /// The collector.
    pub collector: Pid,
    /// How long to keep asking until both are attached (clients attach at CUDA init).
    pub wait: Duration,
    /// Each daemon query's deadline.
    pub timeout: Duration,
    /// The run's manifest: its validated evidence names the pipe directory asked, and the
    /// attestation is recorded in it.
    pub manifest: Option<PathBuf>,
}

/// How attest's messages name the caller's wait option.
pub fn attest_words(wording: Wording) -> AttestWords {
    match wording {
        Wording::Cli => AttestWords::CLI,
        _ => AttestWords {
            wait: "wait=",
            wait_30s: "wait=30",
        },
    }
}

/// A PID given as a number (`None`: not an integer at all); `shown` is the value as the caller
/// wrote it.
///
/// # Errors
/// Anything but `1..=2147483647`, named after the caller's parameter.
pub fn pid(value: Option<i64>, shown: &str, param: Param, wording: Wording) -> Result<Pid, String> {
    value.and_then(Pid::new).ok_or_else(|| {
        format!(
            "{} must be a positive integer PID, got {shown}",
            wording.name(param)
        )
    })
}

/// How long to wait, given in seconds (rounded to whole milliseconds); `shown` is the value as
/// the caller wrote it.
///
/// # Errors
/// A negative number, or one that is not a number of seconds.
pub fn wait(seconds: f64, shown: &str, wording: Wording) -> Result<Duration, String> {
    let millis = (seconds * 1000.0).round_ties_even();
    if !(seconds >= 0.0 && millis.is_finite()) {
        return Err(format!(
            "{} must be at least 0 seconds, got {shown}",
            wording.name(Param::Wait)
        ));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "finite, at least 0"
    )]
    Ok(Duration::from_millis(millis as u64))
}

/// The usage error of one PID given for both processes.
pub(crate) fn two_processes(same: &str, wording: Wording) -> String {
    format!(
        "{} and {} must name two processes: {same}",
        wording.name(Param::LearnerPid),
        wording.name(Param::CollectorPid)
    )
}

/// The validated pipe directory: the manifest's validated evidence's, else this environment's.
/// A manifest that exists but cannot be read is an input error; one without validated
/// evidence (or none at all) leaves the environment's.
pub(crate) fn pipe_directory(
    manifest: Option<&Path>,
) -> Result<(OsText, PipeDirectorySource), String> {
    let from_env = (
        mps_host::read_env().effective_pipe_directory(),
        PipeDirectorySource::Environment,
    );
    let Some(path) = manifest.filter(|path| path.symlink_metadata().is_ok()) else {
        return Ok(from_env);
    };
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    Ok(match sharing_manifest::evidence_from_json(&value) {
        Ok(evidence) if evidence.validated => match evidence.pipe_directory {
            Some(dir) => (OsText::from(dir.as_str()), PipeDirectorySource::Manifest),
            None => from_env,
        },
        _ => from_env,
    })
}

/// Observes the two processes on the validated pipe directory (rounds until attached or
/// `spec.wait` has passed).
///
/// # Errors
/// A usage error or an input that cannot be read (exit 2 on the command line): one PID for
/// both processes, or a manifest that cannot be read.
pub fn observe_attest(spec: &AttestSpec, wording: Wording) -> Result<AttestFacts, String> {
    sharing_policy::distinct_pids(spec.learner.get(), spec.collector.get())
        .map_err(|same| two_processes(&same, wording))?;
    let (pipe_directory, source) = pipe_directory(spec.manifest.as_deref())?;
    let options = AttestOptions {
        pipe_directory_source: source,
        timeout: spec.timeout,
        wait: spec.wait,
        ..AttestOptions::new(spec.learner, spec.collector, pipe_directory)
    };
    Ok(mps_host::observe_attest(&options, &worth_waiting))
}

/// Whether another round of observation may change the verdict on `facts`: the policy's
/// judgement, which the front end hands to `mps_host`'s rounds (the host layer never judges).
pub fn worth_waiting(facts: &AttestFacts) -> bool {
    sharing_policy::attest(facts).worth_waiting()
}

/// Judges what was observed, in the caller's words (`sharing_policy::attest_worded`).
pub fn judge_attest(facts: &AttestFacts, wording: Wording) -> Attestation {
    sharing_policy::attest_worded(facts, attest_words(wording))
}

/// Records an attested attestation in `manifest`, under `cuda_process_sharing.attestation`.
///
/// # Errors
/// The manifest cannot be written (it is left unchanged).
pub(crate) fn record(attestation: &Attestation, manifest: &Path) -> Result<(), String> {
    sharing_manifest::record_attestation(manifest, attestation).map_err(|err| {
        format!(
            "both processes are attested, but the attestation could not be recorded: {err} (the manifest was left unchanged)"
        )
    })
}

/// Observe, judge and record: the attestation when both processes are attached.
///
/// # Errors
/// [`Refused::Rejected`] with one `(code, message)` per process that is not attached
/// ([`Attestation::errors`]); [`Refused::Input`] for one PID given twice, or a manifest that
/// cannot be read or written.
pub fn attest(spec: &AttestSpec, wording: Wording) -> Result<Attestation, Refused> {
    let facts = observe_attest(spec, wording).map_err(Refused::Input)?;
    let attestation = judge_attest(&facts, wording);
    if !attestation.attested {
        return Err(Refused::Rejected(attestation.errors()));
    }
    if let Some(manifest) = &spec.manifest {
        record(&attestation, manifest).map_err(Refused::Input)?;
    }
    Ok(attestation)
}
