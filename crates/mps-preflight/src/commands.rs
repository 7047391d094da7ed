//! probe, capture, check, doctor and merge: facts in, policy applied, output out.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use mps_host::ProbeOptions;
use serde_json::Value;
use sharing_manifest::{FileState, WriteOptions};
use sharing_policy::{Evidence, Finding, HostFacts, Rejection, Request};

use crate::args::{Format, RequestArgs, VerdictFormat};
use crate::cli::{CaptureArgs, CheckArgs, DoctorArgs, MergeArgs, ProbeArgs};
use crate::output::{Output, Status, json_text, one_line};
use crate::report::DoctorReport;
use crate::{brief, prom, snapshot};

/// `probe`: `capture` then `check`, in memory, then the textfile and the manifest. The request
/// is judged once (`sharing_policy::judge`); every output renders that one verdict.
pub(crate) fn probe(args: &ProbeArgs) -> Output {
    let started = Instant::now();
    let request = args.request.to_request();
    let facts = mps_host::capture(&probe_options(&args.request, &request));
    let verdict = sharing_policy::judge(&request, &facts);
    let duration = started.elapsed();
    let unobserved = if sharing_policy::observes_host(&request) {
        sharing_policy::nothing_observed(&facts, sharing_policy::Vocabulary::Cli)
    } else {
        None
    };
    let textfile_error = args
        .prom_textfile
        .as_deref()
        .and_then(|path| prom::write_probe(path, &verdict, unobserved.is_none(), duration).err());
    let mut output = match (&verdict.result, &args.manifest) {
        (Ok(evidence), Some(manifest)) => {
            // Judged before the write: afterwards the failed write has decided nothing.
            let state = FileState::before_writing(manifest);
            match sharing_manifest::record_in_manifest(manifest, evidence) {
                Ok(()) => evidence_output(&verdict.result),
                Err(err) => Output::input(manifest_failure(&request, manifest, state, &err)),
            }
        }
        _ => evidence_output(&verdict.result),
    };
    if request.mode.is_none() {
        output = output.with_note(unobserved.map(|what| {
            format!(
                "nothing about MPS could be observed on this host: {what}; every host field of the evidence is null"
            )
        }));
    }
    if let Some(err) = textfile_error {
        output.status = Status::Input;
        output.stdout.clear();
        output.errors.insert(0, err);
    }
    brief::in_format(args.format, output, &request, &verdict)
}

/// What a failed `--manifest` write says: what was asked, what failed, the file's state.
fn manifest_failure(
    request: &sharing_policy::Request,
    manifest: &Path,
    state: FileState,
    err: &sharing_manifest::ManifestError,
) -> String {
    let asked = if request.mode.is_some() {
        "the request was validated"
    } else {
        "the null request's evidence was collected"
    };
    format!(
        "{asked}, but recording it in --manifest {} failed: {err}; {state}, and the evidence is not printed, so the run has no record of it",
        sharing_manifest::quote_path(manifest)
    )
}

/// `check`: the same validation as `probe`, over a snapshot.
pub(crate) fn check(args: &CheckArgs) -> Output {
    let facts = match load_snapshot(&args.snapshot, &args.request) {
        Ok(facts) => facts,
        Err(output) if args.format == VerdictFormat::Brief => return brief::apply(output, ""),
        Err(output) => return output,
    };
    let request = args.request.to_request();
    let verdict = sharing_policy::judge(&request, &facts);
    let output = evidence_output(&verdict.result);
    brief::in_format(args.format, output, &request, &verdict)
}

/// `capture`: the snapshot, pretty JSON, on stdout or into `--output`.
pub(crate) fn capture(args: &CaptureArgs) -> Output {
    let options = ProbeOptions {
        timeout: Duration::from_millis(args.timeout_ms),
        learner_uuid: args.learner_uuid.clone(),
        observe_cuda: true,
        ..ProbeOptions::default()
    };
    let facts = mps_host::capture(&options);
    let note = unobserved_note(&facts, "the snapshot records what each query met");
    let text = match serde_json::to_value(&facts) {
        Ok(value) => json_text(&value),
        Err(err) => return Output::input(format!("cannot encode the snapshot as JSON: {err}")),
    };
    match &args.output {
        None => Output::data(text).with_note(note),
        // Parents are created, as CI users expect of an output path (issue 21 part 5).
        Some(path) => match sharing_manifest::write_file(
            path,
            text.as_bytes(),
            "the snapshot to --output",
            WriteOptions::new().create_parents(true),
        ) {
            Ok(()) => Output::data(String::new()).with_note(note),
            Err(err) => Output::input(err.to_string()),
        },
    }
}

/// `doctor`: every finding, for people or machines; exit 1 when any blocks the request.
pub(crate) fn doctor(args: &DoctorArgs) -> Output {
    if let (Some(learner), Some(collector)) = (args.learner_pid, args.collector_pid)
        && let Err(same) = sharing_policy::distinct_pids(learner.get(), collector.get())
    {
        let output = crate::attest::usage(&same);
        return if args.format == Format::Brief {
            brief::apply(output, "")
        } else {
            output
        };
    }
    let request = args.request.to_request();
    let facts = match &args.snapshot {
        Some(path) => match load_snapshot(path, &args.request) {
            Ok(facts) => facts,
            Err(output) if args.format == Format::Brief => return brief::apply(output, ""),
            Err(output) => return output,
        },
        None => mps_host::capture(&probe_options(&args.request, &request)),
    };
    let sharing_policy::Verdict {
        result,
        findings,
        warnings,
        ..
    } = sharing_policy::judge(&request, &facts);
    let evidence = result.ok();
    let attestation = crate::attest::for_doctor(
        args.learner_pid,
        args.collector_pid,
        args.request.timeout_ms,
    );
    let stdout = match args.format {
        Format::Human => {
            let mut text = doctor_human(&request, &findings, evidence.as_ref());
            text.push_str(&warnings_human(&warnings));
            text.push_str(&crate::attest::human(attestation.as_ref()));
            text
        }
        Format::Json => json_text(&doctor_json(
            &findings,
            &warnings,
            evidence.as_ref(),
            attestation.as_ref(),
        )),
        Format::Brief => brief::verdict(&request, &findings, evidence.as_ref()),
    };
    let mut errors = Vec::new();
    if !findings.is_empty() {
        let count = findings.len();
        let noun = if count == 1 {
            "prerequisite blocks"
        } else {
            "prerequisites block"
        };
        errors.push(format!(
            "{count} unmet {noun} the request (the report is on stdout)"
        ));
    }
    errors.extend(crate::attest::doctor_error(attestation.as_ref()));
    if errors.is_empty() {
        return Output::data(stdout);
    }
    Output {
        status: Status::Rejected,
        stdout,
        errors,
        ..Output::default()
    }
}

/// `merge`: every file read (exit 2, one line for each that cannot be), then the rank check.
pub(crate) fn merge(args: &MergeArgs) -> Output {
    let mut inputs = Vec::with_capacity(args.files.len());
    let mut unreadable = Vec::new();
    for path in &args.files {
        if let Some(pattern) = unmatched_glob(path) {
            unreadable.push(pattern);
            continue;
        }
        match sharing_manifest::read_json_file(path) {
            Ok(value) => inputs.push((path.to_string_lossy().into_owned(), value)),
            Err(err) => unreadable.push(err.to_string()),
        }
    }
    if !unreadable.is_empty() {
        return Output {
            status: Status::Input,
            errors: unreadable,
            ..Output::default()
        };
    }
    let report = sharing_manifest::merge(&inputs);
    if report.is_consistent() {
        // Straight to text: the same text as `json_text(&report.to_json())` (a sharing-manifest
        // test holds them equal) without the `Value` tree, a quarter of a large merge's work.
        return match serde_json::to_string_pretty(&report.summary()) {
            Ok(text) => Output::data(text + "\n"),
            Err(err) => Output::input(format!("cannot render the merged run: {err}")),
        };
    }
    Output {
        status: Status::Rejected,
        errors: report.findings.iter().map(ToString::to_string).collect(),
        ..Output::default()
    }
}

/// What to say for an argument that is a shell pattern the shell left as written because no
/// file matched it (`ranks/*/manifest.json` with no rank written yet): a path with `*`, `?` or
/// `[` that does not exist. `None` for anything else (a file that exists, or a plain name).
fn unmatched_glob(path: &Path) -> Option<String> {
    let text = path.to_string_lossy();
    let pattern = text.contains(['*', '?', '[']);
    (pattern && path.symlink_metadata().is_err()).then(|| {
        format!(
            "no rank file matched {}: the shell passes a pattern that matches nothing as it is written; check the path, or that the ranks wrote their manifests",
            sharing_manifest::quote_path(path)
        )
    })
}

/// The note for a host on which nothing about MPS was observed (`sharing_policy::nothing_observed`),
/// ending with what that means for what was printed (`consequence`).
fn unobserved_note(facts: &HostFacts, consequence: &str) -> Option<String> {
    sharing_policy::nothing_observed(facts, sharing_policy::Vocabulary::Cli).map(|what| {
        format!("nothing about MPS could be observed on this host: {what}; {consequence}")
    })
}

/// What `probe` and `doctor` observe: what `capture` observes, except when the policy looks at
/// nothing but the environment (`sharing_policy::observes_host` is false: a null request with
/// no CUDA device), when nothing is observed. The policy's own rule decides both, so the
/// evidence is the same as from a full capture by construction (the test
/// `probe_equals_check_of_capture` holds this).
fn probe_options(args: &RequestArgs, request: &Request) -> ProbeOptions {
    ProbeOptions {
        timeout: Duration::from_millis(args.timeout_ms),
        learner_uuid: args.learner_uuid.clone(),
        observe_cuda: sharing_policy::observes_host(request),
        ..ProbeOptions::default()
    }
}

/// The snapshot, with `--learner-uuid` (when given) replacing the recorded one, exactly as
/// `probe` puts it into a fresh capture.
fn load_snapshot(path: &Path, args: &RequestArgs) -> Result<HostFacts, Output> {
    let facts = snapshot::load(path).map_err(Output::input)?;
    Ok(with_learner_uuid(facts, args))
}

/// `facts` with `--learner-uuid` (when given) replacing the recorded learner UUID.
pub(crate) fn with_learner_uuid(mut facts: HostFacts, args: &RequestArgs) -> HostFacts {
    if let Some(uuid) = &args.learner_uuid {
        facts.learner_uuid = Some(uuid.clone());
    }
    facts
}

/// Exit 0 with the evidence as one JSON object, or exit 1 with the rejection.
fn evidence_output(result: &Result<Evidence, Rejection>) -> Output {
    match result {
        Ok(evidence) => Output::data(json_text(&sharing_manifest::evidence_to_json(evidence))),
        Err(rejection) => Output::rejected(rejection.to_string()),
    }
}

/// `{"ok", "findings": [{code, message, found, why, fix}], "warnings": [same], "evidence": {…} | null}`.
fn doctor_json(
    findings: &[Finding],
    warnings: &[Finding],
    evidence: Option<&Evidence>,
    attestation: Option<&sharing_policy::Attestation>,
) -> Value {
    let report = DoctorReport {
        ok: findings.is_empty() && attestation.is_none_or(|a| a.attested),
        findings,
        warnings,
        evidence: evidence.map(sharing_manifest::evidence_to_json),
        attestation,
    };
    // Strings, booleans and evidence objects only: serialising cannot fail.
    serde_json::to_value(report).unwrap_or(Value::Null)
}

fn doctor_human(request: &Request, findings: &[Finding], evidence: Option<&Evidence>) -> String {
    let mode = request
        .mode
        .as_deref()
        .map_or_else(|| "null".to_owned(), |mode| format!("{mode:?}"));
    if findings.is_empty() {
        let Some(evidence) = evidence else {
            return format!("ok: nothing blocks the {mode} request\n");
        };
        if request.mode.is_none() {
            let daemon = if evidence.ambient_server {
                "an MPS control daemon answered on this host's pipe directory"
            } else {
                "no MPS control daemon answered (or none was looked for)"
            };
            return format!(
                "ok: a null request asks for nothing, so nothing can block it; {daemon}.\n\
                 Pass --request mps to check that the learner and collector really share one GPU through MPS.\n"
            );
        }
        let gpu = evidence.learner_gpu_uuid.as_deref().unwrap_or("?");
        let pipe = evidence.control_pipe.as_deref().unwrap_or("?");
        if !evidence.unverified.is_empty() {
            let count = evidence.unverified.len();
            let noun = if count == 1 {
                "prerequisite"
            } else {
                "prerequisites"
            };
            return format!(
                "ok: nothing blocks the {mode} request: learner and collector share GPU {gpu}, and the control daemon at {pipe} answered; {count} {noun} could not be verified (warnings below; --require-verified rejects them).\n"
            );
        }
        return format!(
            "ok: every prerequisite of the {mode} request is met: learner and collector share GPU {gpu}, and the control daemon at {pipe} answered.\n"
        );
    }
    let count = findings.len();
    let noun = if count == 1 {
        "prerequisite"
    } else {
        "prerequisites"
    };
    let mut text = format!("The {mode} request is blocked by {count} unmet {noun}:\n");
    for (number, finding) in findings.iter().enumerate() {
        let _ = write!(
            text,
            "\n{}. [{}] {}\n",
            number + 1,
            finding.code.as_str(),
            one_line(&finding.message)
        );
        push_details(&mut text, finding, ["found:", "why:  ", "fix:  "]);
    }
    text
}

/// The `found`, `why` and `fix` lines of `finding` under its message, with `labels`. The
/// message usually says what was found and the fix word for word already: a line that would
/// repeat it is left out, so each piece is read once (`why` is never in the message).
fn push_details(text: &mut String, finding: &Finding, [found, why, fix]: [&str; 3]) {
    if !repeats(&finding.message, &finding.found) {
        let _ = writeln!(text, "   {found} {}", one_line(&finding.found));
    }
    let _ = writeln!(text, "   {why} {}", one_line(&finding.why));
    if !repeats(&finding.message, &finding.fix) {
        let _ = writeln!(text, "   {fix} {}", one_line(&finding.fix));
    }
}

/// Whether `message` already holds `part` word for word (its first letter in either case, as
/// a fix opens a sentence of the message).
fn repeats(message: &str, part: &str) -> bool {
    let mut chars = part.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    let rest = chars.as_str();
    first
        .to_uppercase()
        .chain(first.to_lowercase())
        .any(|letter| message.contains(&format!("{letter}{rest}")))
}

/// Each unverified prerequisite as a warning, with how to verify it (nothing when none).
fn warnings_human(warnings: &[Finding]) -> String {
    let mut text = String::new();
    for warning in warnings {
        let _ = write!(
            text,
            "\nwarning: [{}] {}\n",
            warning.code.as_str(),
            one_line(&warning.message)
        );
        push_details(&mut text, warning, ["found: ", "why:   ", "verify:"]);
    }
    text
}
