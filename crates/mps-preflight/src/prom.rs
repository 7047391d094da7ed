//! `probe --prom-textfile`: `node_exporter`'s textfile-collector format (the Prometheus text
//! exposition format, version 0.0.4), written whether the request was validated or not.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sharing_policy::{Code, Verdict};

/// What one probe saw, as the metrics report it: renderings of the probe's one verdict, never
/// a judgement of their own, so the textfile says what the evidence says.
pub(crate) struct ProbeMetrics<'a> {
    /// The request judged once: its evidence's `validated`, its findings, the ambient state.
    pub(crate) verdict: &'a Verdict,
    /// Whether the probe ran and the host answered: false when the probe needed the host and
    /// nothing about MPS could be observed (no GPU table and no daemon: the stderr note).
    pub(crate) answered: bool,
    /// How long observing and judging took.
    pub(crate) duration: Duration,
    /// When the probe ran.
    pub(crate) finished: SystemTime,
}

/// The textfile's contents: six metrics, each with `# HELP` and `# TYPE`.
pub(crate) fn render(metrics: &ProbeMetrics<'_>) -> String {
    let ambient = &metrics.verdict.ambient;
    let pipe_directory = ambient.pipe_directory.as_deref().unwrap_or("");
    let gpu_uuid = ambient.learner_gpu_uuid.as_deref().unwrap_or("");
    let mut text = String::new();
    header(
        &mut text,
        "mps_preflight_validated",
        "1 when the request was proven to share one GPU through a live CUDA MPS daemon (the evidence's validated), else 0; always 0 for a null request.",
    );
    let _ = writeln!(
        text,
        "mps_preflight_validated{{pipe_directory=\"{}\",gpu_uuid=\"{}\"}} {}",
        escape_label(pipe_directory),
        escape_label(gpu_uuid),
        u8::from(metrics.verdict.validated())
    );
    header(
        &mut text,
        "mps_preflight_probe_success",
        "1 when the probe ran and the host answered (a GPU table was read or a control daemon answered), else 0.",
    );
    let _ = writeln!(
        text,
        "mps_preflight_probe_success {}",
        u8::from(metrics.answered)
    );
    header(
        &mut text,
        "mps_preflight_unmet_prerequisites",
        "1 for each prerequisite (by code) that blocks the request, else 0.",
    );
    for code in Code::ALL {
        let unmet = (metrics.verdict.findings.iter()).any(|finding| finding.code == code);
        let _ = writeln!(
            text,
            "mps_preflight_unmet_prerequisites{{code=\"{}\"}} {}",
            code.as_str(),
            u8::from(unmet)
        );
    }
    header(
        &mut text,
        "mps_preflight_daemon_up",
        "1 when an MPS control daemon answered a read-only query on the pipe directory, else 0.",
    );
    let _ = writeln!(
        text,
        "mps_preflight_daemon_up {}",
        u8::from(ambient.ambient_server)
    );
    header(
        &mut text,
        "mps_preflight_probe_duration_seconds",
        "How long observing the host and judging the request took.",
    );
    let _ = writeln!(
        text,
        "mps_preflight_probe_duration_seconds {}",
        metrics.duration.as_secs_f64()
    );
    header(
        &mut text,
        "mps_preflight_last_run_timestamp_seconds",
        "When the probe ran, in seconds since the Unix epoch.",
    );
    let since_epoch = metrics
        .finished
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "mps_preflight_last_run_timestamp_seconds {}",
        since_epoch.as_secs_f64()
    );
    text
}

/// The metrics of one probe, written to `path`; the error is the message to print, saying
/// whether an old textfile (stale metrics that `node_exporter` still serves) was left in place.
pub(crate) fn write_probe(
    path: &Path,
    verdict: &Verdict,
    answered: bool,
    duration: Duration,
) -> Result<(), String> {
    let text = render(&ProbeMetrics {
        verdict,
        answered,
        duration,
        finished: SystemTime::now(),
    });
    // Readable by node_exporter whatever user it runs as (0644 less the umask).
    sharing_manifest::write_file(
        path,
        text.as_bytes(),
        "the Prometheus textfile to --prom-textfile",
        sharing_manifest::WriteOptions::new().new_file_mode(0o644),
    )
    .map_err(|err| {
        let stale = if err.state == sharing_manifest::FileState::Unchanged {
            " (node_exporter still serves its old metrics)"
        } else {
            ""
        };
        format!("{err}{stale}")
    })
}

fn header(text: &mut String, name: &str, help: &str) {
    let _ = writeln!(text, "# HELP {name} {help}");
    let _ = writeln!(text, "# TYPE {name} gauge");
}

/// A label value as the exposition format requires: `\`, `"` and line feed escaped. Every
/// other character, carriage returns included, is allowed as is.
pub(crate) fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str(r"\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_newline() {
        assert_eq!(escape_label(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label("x\ny"), r"x\ny");
        assert_eq!(escape_label("/tmp/nvidia-mps"), "/tmp/nvidia-mps");
        assert_eq!(escape_label("\\n"), r"\\n");
    }
}
