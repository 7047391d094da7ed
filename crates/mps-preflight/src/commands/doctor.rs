//! `doctor`: every unmet prerequisite at once, for people or machines (and, given PIDs,
//! the attestation).
//! Its arguments, help texts and run: one module per subcommand.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;
use sharing_policy::{Evidence, Finding, Request};

use super::load_snapshot;
use crate::args::{Format, RequestArgs, paragraphs};
use crate::brief;
use crate::front::{Diagnosis, HiArgs};
use crate::output::{Output, Status, json_text, one_line};
use crate::report::DoctorReport;

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
List every unmet prerequisite of the request at once, not only the first: what was found, why
it matters, and the command that fixes it. Observes this host, or reads --snapshot.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    String::from(
        "Examples:
  mps-preflight doctor --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp
  mps-preflight doctor --snapshot host.json --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp \\
      --format json

Exit status:
  0  nothing blocks the request; the report (\"ok: …\") is on stdout
  1  a finding blocks the request; the report is on stdout, and stderr says
     `error: N unmet prerequisites block the request (the report is on stdout)`
  2  usage error, or a snapshot that cannot be read (missing file, not JSON, a
     snapshot of another schema version)",
    )
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    pub(crate) request: RequestArgs,

    /// Read the host from this snapshot instead of observing this host; `-` reads standard input
    #[arg(long, value_name = "FILE")]
    pub(crate) snapshot: Option<PathBuf>,

    /// The report's format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub(crate) format: Format,

    /// After start: also attest that this learner PID is an MPS client (with --collector-pid)
    #[arg(long, value_name = "PID", value_parser = crate::args::parse_pid, requires = "collector_pid")]
    pub(crate) learner_pid: Option<sharing_policy::Pid>,

    /// After start: also attest that this collector PID is an MPS client (with --learner-pid)
    #[arg(long, value_name = "PID", value_parser = crate::args::parse_pid, requires = "learner_pid")]
    pub(crate) collector_pid: Option<sharing_policy::Pid>,
}

/// `doctor`: every finding, for people or machines; exit 1 when any blocks the request.
pub(crate) fn run(args: &DoctorArgs) -> Output {
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
    let HiArgs { request, probe } = args.request.low().to_high();
    let facts = match &args.snapshot {
        Some(path) => match load_snapshot(path, &args.request) {
            Ok(facts) => facts,
            Err(output) if args.format == Format::Brief => return brief::apply(output, ""),
            Err(output) => return output,
        },
        None => mps_host::capture(&probe),
    };
    let Diagnosis {
        findings,
        warnings,
        evidence,
    } = crate::front::diagnose(&request, &facts);
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
    let output = Output {
        status: Status::Rejected,
        stdout,
        errors,
        ..Output::default()
    };
    if args.format == Format::Brief {
        brief::unknown_without_tools(output, &sharing_policy::tools_not_started(&facts))
    } else {
        output
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
