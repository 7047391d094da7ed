//! `merge`: the per-rank evidence of one run, checked together.
//! Its arguments, help texts and run: one module per subcommand.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::args::paragraphs;
use crate::output::{Output, Status};

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Check the per-rank evidence of one run (manifests holding `cuda_process_sharing`, or bare
evidence files): ranks 0..world_size each appear once, world sizes and modes agree, and ranks
naming one pipe directory name one control pipe, daemon and server. Prints the merged run as
JSON; each inconsistency is one `error: <code>: <message>` line on stderr.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    paragraphs("Examples:
  mps-preflight merge runs/42/rank*/manifest.json

Codes: not-evidence, contradictory-evidence, invalid-world-size, world-size-mismatch, rank-out-of-range, duplicate-rank,
missing-rank, configured-mismatch, effective-mismatch, validated-mismatch, control-pipe-mismatch,
daemon-mismatch, server-mismatch, daemon-identity-mismatch.

Exit status:
  0  the ranks are consistent; the merged run is on stdout
  1  an inconsistency: stdout is empty; each finding is one line on stderr,
     `error: <code>: <message>`
  2  usage error, or a file that cannot be read (missing, not JSON)")
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// One manifest or evidence file per rank
    #[arg(value_name = "FILE", required = true)]
    pub(crate) files: Vec<PathBuf>,
}

/// `merge`: every file read (exit 2, one line for each that cannot be), then the rank check.
pub(crate) fn run(args: &MergeArgs) -> Output {
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
