//! `attest`: after the learner and the collector started, prove read-only that both
//! are clients of one MPS server of their user on the validated pipe directory, and record the
//! proof in the run's manifest. Live (`mps_host::observe_attest`) or replayed (`--snapshot`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use mps_host::AttestOptions;
use serde_json::Value;
use sharing_policy::{ATTEST_SCHEMA, AttestFacts, Attestation, Pid};

use crate::args::parse_pid;
use crate::front::{self, AttestSpec, Wording};
use crate::output::{Output, json_text};

/// The help page's description.
pub(crate) const LONG_ABOUT: &str = "\
After the learner and the collector have started (and initialised CUDA), prove read-only that
both are clients of the same MPS server, that the server runs as their user, and that its
daemon is the one on the validated pipe directory: the manifest's evidence's `pipe_directory`
with --manifest, else CUDA_MPS_PIPE_DIRECTORY (or /tmp/nvidia-mps). It asks the daemon
`get_server_list`, then `get_client_list <server pid>` for each server, and reads each
process's /proc entry (alive, UID, CUDA_MPS_PIPE_DIRECTORY and CUDA_VISIBLE_DEVICES).

On success stdout is the attestation, one JSON object; with --manifest it is also written
under `cuda_process_sharing.attestation`, every other key kept. Otherwise one `error: <code>:`
line per process that is not attached: not-running, process-unobservable,
client-of-another-server, not-a-client (with the likely cause), server-of-another-user,
uid-unproven, daemon-did-not-answer, answer-unrecognized (unproven, never attested).";

/// The help page's examples and exit codes.
pub(crate) const AFTER_HELP: &str = "\
Examples:
  mps-preflight attest --learner-pid 4267 --collector-pid 4281 \\
      --wait-ms 30000 --manifest run/manifest.json
  mps-preflight attest --learner-pid 4267 --collector-pid 4281 \\
      --save-snapshot attest.json
  mps-preflight attest --snapshot attest.json      # replay, touching nothing

Exit status:
  0  attested: the attestation is on stdout (and in the manifest)
  1  not attested: one `error: <code>: …` line per process that is not attached
  2  usage error, or a snapshot or manifest that cannot be read or written";

/// `attest`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct AttestArgs {
    /// The learner's PID (a positive integer)
    #[arg(long, value_name = "PID", value_parser = parse_pid, required_unless_present = "snapshot")]
    pub(crate) learner_pid: Option<Pid>,

    /// The collector's PID (a positive integer)
    #[arg(long, value_name = "PID", value_parser = parse_pid, required_unless_present = "snapshot")]
    pub(crate) collector_pid: Option<Pid>,

    /// Keep asking, with a bounded backoff, until both are attached or N ms have passed
    #[arg(long, value_name = "N", default_value = "0", value_parser = parse_millis, allow_negative_numbers = true)]
    pub(crate) wait_ms: u64,

    /// The deadline of each daemon query, in milliseconds (the whole run ends by wait + this)
    #[arg(long, value_name = "N", default_value = "5000", value_parser = crate::args::parse_timeout, allow_negative_numbers = true)]
    pub(crate) timeout_ms: u64,

    /// Record the attestation in this JSON manifest, under `cuda_process_sharing.attestation`
    #[arg(long, value_name = "FILE")]
    pub(crate) manifest: Option<PathBuf>,

    /// Judge this attest snapshot (from --save-snapshot) instead of observing this host
    #[arg(long, value_name = "FILE", conflicts_with = "save_snapshot")]
    pub(crate) snapshot: Option<PathBuf>,

    /// Also write what was observed, as an attest snapshot, to FILE (atomically)
    #[arg(long, value_name = "FILE")]
    pub(crate) save_snapshot: Option<PathBuf>,
}

/// `attest`: observe (or load), judge, then print and record.
pub(crate) fn attest(args: &AttestArgs) -> Output {
    let facts = match facts(args) {
        Ok(facts) => facts,
        Err(output) => return output,
    };
    if let Some(path) = &args.save_snapshot
        && let Err(output) = save(path, &facts)
    {
        return output;
    }
    verdict(
        &front::judge_attest(&facts, Wording::Cli),
        args.manifest.as_deref(),
    )
}

/// Exit 0 with the attestation (recorded in `manifest` when given), or exit 1 with one line
/// per process that is not attached.
pub(crate) fn verdict(attestation: &Attestation, manifest: Option<&Path>) -> Output {
    if !attestation.attested {
        return Output {
            status: crate::output::Status::Rejected,
            errors: attestation.error_lines(),
            ..Output::default()
        };
    }
    if let Some(path) = manifest
        && let Err(message) = front::record(attestation, path)
    {
        return Output::input(message);
    }
    match serde_json::to_value(attestation) {
        Ok(value) => Output::data(json_text(&value)),
        Err(err) => Output::input(format!("cannot encode the attestation as JSON: {err}")),
    }
}

fn facts(args: &AttestArgs) -> Result<AttestFacts, Output> {
    if let Some(path) = &args.snapshot {
        let facts = load(path).map_err(Output::input)?;
        return check_pids(facts, args).map_err(Output::input);
    }
    let (Some(learner), Some(collector)) = (args.learner_pid, args.collector_pid) else {
        return Err(Output::input(
            "give --learner-pid and --collector-pid, or --snapshot",
        ));
    };
    let spec = AttestSpec {
        learner,
        collector,
        wait: Duration::from_millis(args.wait_ms),
        timeout: Duration::from_millis(args.timeout_ms),
        manifest: args.manifest.clone(),
    };
    front::observe_attest(&spec, Wording::Cli).map_err(Output::input)
}

/// Reads an attest snapshot: capped, this schema, no unknown field.
fn load(path: &Path) -> Result<AttestFacts, String> {
    let shown = sharing_manifest::quote_path(path);
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    match value.get("schema") {
        Some(Value::String(schema)) if schema == ATTEST_SCHEMA => {}
        Some(Value::String(schema)) => {
            return Err(format!(
                "{shown}: attest snapshot schema {schema:?} is not supported; this mps-preflight reads {ATTEST_SCHEMA:?}: attest again with --save-snapshot"
            ));
        }
        _ => {
            return Err(format!(
                "{shown}: not an attest snapshot (expected a JSON object with \"schema\": {ATTEST_SCHEMA:?}, as `attest --save-snapshot` writes)"
            ));
        }
    }
    serde_json::from_value(value)
        .map_err(|err| format!("{shown}: not a valid {ATTEST_SCHEMA} snapshot: {err}"))
}

/// The usage error of one PID given for both processes: exit 2.
pub(crate) fn usage(same: &str) -> Output {
    Output::input(front::two_processes(same, Wording::Cli))
}

/// PIDs given with --snapshot must be the snapshot's, and the snapshot's two PIDs distinct.
fn check_pids(facts: AttestFacts, args: &AttestArgs) -> Result<AttestFacts, String> {
    sharing_policy::distinct_pids(facts.learner.pid, facts.collector.pid).map_err(|same| {
        format!(
            "the snapshot's learner and collector must be two processes: {same} (a snapshot this tool never writes)"
        )
    })?;
    for (role, given, recorded) in [
        ("learner", args.learner_pid, facts.learner.pid),
        ("collector", args.collector_pid, facts.collector.pid),
    ] {
        if let Some(given) = given
            && given.get() != recorded
        {
            return Err(format!(
                "--{role}-pid {given} is not the snapshot's {role} (PID {recorded}); drop it, or attest that process"
            ));
        }
    }
    Ok(facts)
}

fn save(path: &Path, facts: &AttestFacts) -> Result<(), Output> {
    let text = serde_json::to_value(facts)
        .map(|value| json_text(&value))
        .map_err(|err| Output::input(format!("cannot encode the attest snapshot: {err}")))?;
    sharing_manifest::write_file(
        path,
        text.as_bytes(),
        "the attest snapshot to --save-snapshot",
        sharing_manifest::WriteOptions::new(),
    )
    .map_err(|err| Output::input(err.to_string()))
}

/// A wait of zero or more milliseconds; a negative one is named as such.
fn parse_millis(text: &str) -> Result<u64, String> {
    text.parse::<u64>().map_err(|_| {
        let what = if text.starts_with('-') {
            "cannot be negative"
        } else {
            "is not a number"
        };
        format!("the wait {what}, got {text:?}: give a whole number of milliseconds (0: no wait)")
    })
}

/// `doctor --learner-pid P --collector-pid Q`: the attestation of the two processes on this
/// environment's pipe directory, one round, each query bounded by the request's deadline.
pub(crate) fn for_doctor(
    learner: Option<Pid>,
    collector: Option<Pid>,
    timeout_ms: u64,
) -> Option<Attestation> {
    let (learner, collector) = (learner?, collector?);
    let (pipe_directory, source) = front::pipe_directory(None).ok()?;
    let options = AttestOptions {
        pipe_directory_source: source,
        timeout: Duration::from_millis(timeout_ms),
        ..AttestOptions::new(learner, collector, pipe_directory)
    };
    Some(front::judge_attest(
        &mps_host::observe_attest(&options, &front::worth_waiting),
        Wording::Cli,
    ))
}

/// The report's "after start" section: every process that is not attached, with its code.
pub(crate) fn human(attestation: Option<&Attestation>) -> String {
    let Some(attestation) = attestation else {
        return String::new();
    };
    if attestation.attested {
        return format!(
            "\nafter start: the learner (PID {}) and the collector (PID {}) are clients of MPS server {}.\n",
            attestation.learner.pid,
            attestation.collector.pid,
            attestation.server_pid.unwrap_or_default()
        );
    }
    let mut text = "\nafter start, not attested:\n".to_owned();
    for line in attestation.error_lines() {
        text.push_str("\n- ");
        text.push_str(&crate::output::one_line(&line));
        text.push('\n');
    }
    text
}

/// doctor's stderr line when the processes are not attested.
pub(crate) fn doctor_error(attestation: Option<&Attestation>) -> Option<String> {
    let attestation = attestation.filter(|a| !a.attested)?;
    let count = attestation.problems().count().max(1);
    let noun = if count == 1 {
        "process is"
    } else {
        "processes are"
    };
    Some(format!(
        "{count} {noun} not attached to one MPS server (the report is on stdout)"
    ))
}
