//! `--format brief`: one line of at most 80 bytes, for node-problem-detector's custom plugins
//! (exit 0 OK, 1 `NonOK`, 2 Unknown; stdout is the message, cut at `max_output_length`, 80 by
//! default) and Slurm health checks (the first line becomes the drain `Reason=`).

use sharing_policy::{Evidence, Finding, Request, ToolNotStarted, Verdict};

use crate::args::VerdictFormat;
use crate::output::{Output, Status};

/// The longest line printed, in bytes: node-problem-detector's default `max_output_length`.
pub(crate) const MAX_LINE: usize = 80;

/// The verdict as one line: `OK: …` when nothing blocks the request (exit 0), else the first
/// unmet prerequisite's code and what was found (exit 1).
pub(crate) fn verdict(
    request: &Request,
    findings: &[Finding],
    evidence: Option<&Evidence>,
) -> String {
    match findings.first() {
        None => line(&ok_text(request, evidence)),
        Some(first) => line(&format!("{}: {}", first.code.as_str(), first.found)),
    }
}

/// `output` in the brief format: stdout becomes `verdict`, or `UNKNOWN: <why>` when the
/// command could not tell (exit 2). Status and stderr (the full messages, for logs) are kept.
pub(crate) fn apply(mut output: Output, verdict: &str) -> Output {
    output.stdout = if output.status == Status::Input {
        line(&format!(
            "UNKNOWN: {}",
            output.errors.first().map_or("", String::as_str)
        ))
    } else {
        verdict.to_owned()
    };
    output
}

/// `output` as it is (JSON), or as one brief line rendered from the same verdict (Unknown
/// when the observer's own `tools` could not be started, see [`unknown_without_tools`]).
pub(crate) fn in_format(
    format: VerdictFormat,
    output: Output,
    request: &Request,
    judged: &Verdict,
    tools: &[ToolNotStarted],
) -> Output {
    match format {
        VerdictFormat::Json => output,
        VerdictFormat::Brief => {
            let evidence = judged.result.as_ref().ok();
            let output = apply(output, &verdict(request, &judged.findings, evidence));
            unknown_without_tools(output, tools)
        }
    }
}

/// A brief `NonOK` (exit 1) becomes Unknown (exit 2) when the observer could not start its own
/// host tools (`sharing_policy::tools_not_started`): a tool missing where the check runs (its
/// container, its `PATH`) is the check's configuration, not the node's health, and what it
/// would have observed is unknown. stdout names the tools; stderr says so first, then keeps
/// the full messages. An `OK` stays `OK` (the request was proven without them).
pub(crate) fn unknown_without_tools(mut output: Output, tools: &[ToolNotStarted]) -> Output {
    if output.status != Status::Rejected || tools.is_empty() {
        return output;
    }
    let names: Vec<&str> = tools.iter().map(|tool| tool.program).collect();
    let causes: Vec<String> = tools
        .iter()
        .map(|tool| format!("{} ({})", tool.program, tool.error))
        .collect();
    output.status = Status::Input;
    output.stdout = line(&format!("UNKNOWN: could not start {}", names.join(", ")));
    output.errors.insert(
        0,
        format!(
            "could not start {}: these are this check's own tools, missing where it runs (its container or PATH), so the node's health is unknown; put them on its PATH (in a container of the NVIDIA container toolkit: NVIDIA_DRIVER_CAPABILITIES=compute,utility)",
            causes.join(" or ")
        ),
    );
    output
}

fn ok_text(request: &Request, evidence: Option<&Evidence>) -> String {
    let gpu = evidence
        .and_then(|evidence| evidence.learner_gpu_uuid.as_deref())
        .unwrap_or("?");
    match (&request.mode, evidence) {
        // Unverified prerequisites do not block (without --require-verified), but a health
        // check should not hide them: `doctor` says how to verify each.
        (Some(mode), Some(evidence)) if !evidence.unverified.is_empty() => format!(
            "OK: {mode} sharing proven on GPU {gpu}; {} unverified",
            evidence.unverified.len()
        ),
        (Some(mode), _) => format!("OK: {mode} sharing proven on GPU {gpu}"),
        (None, Some(evidence)) if evidence.ambient_server => {
            "OK: null request; an MPS control daemon answered".to_owned()
        }
        (None, _) => "OK: null request; no MPS control daemon answered".to_owned(),
    }
}

/// `text` on one line (control characters become spaces), cut to [`MAX_LINE`] bytes on a
/// character boundary with `...`, then a line feed.
pub(crate) fn line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out = if flat.len() <= MAX_LINE {
        flat
    } else {
        let mut end = MAX_LINE - 3;
        while !flat.is_char_boundary(end) {
            end -= 1;
        }
        let mut cut = flat.get(..end).unwrap_or_default().to_owned();
        cut.push_str("...");
        cut
    };
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_to_eighty_bytes_on_a_character_boundary() {
        assert_eq!(line("OK: fine"), "OK: fine\n");
        let long = "é".repeat(100);
        let cut = line(&long);
        assert!(cut.len() <= MAX_LINE + 1, "{}", cut.len());
        assert!(cut.ends_with("...\n"));
        assert_eq!(line(&"x".repeat(80)).len(), 81);
        assert_eq!(line(&"x".repeat(81)), format!("{}...\n", "x".repeat(77)));
        assert_eq!(line("a\nb\r\tc"), "a b  c\n");
    }
}
