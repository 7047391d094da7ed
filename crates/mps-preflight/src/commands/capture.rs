//! `capture`: record this host's raw facts as a snapshot.
//! Its arguments, help texts and run: one module per subcommand.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mps_host::ProbeOptions;
use sharing_manifest::WriteOptions;

use super::unobserved_note;
use crate::args::{paragraphs, parse_timeout, parse_user};
use crate::output::{Output, json_text};

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Record what this host shows (environment, control pipe, pid file, `nvidia-smi`, a read-only
daemon query) as a JSON snapshot, uninterpreted. Replay it anywhere with `check --snapshot` or
`doctor --snapshot`; no GPU is needed there.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    String::from(
        "Examples:
  mps-preflight capture --output host.json
  mps-preflight capture \\
      --learner-uuid GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 > host.json

Exit status:
  0  the snapshot is written (to stdout, or to --output); observing never fails:
     what could not be observed is recorded as such
  2  usage error, or --output cannot be written (the file is left as it was)",
    )
}

#[derive(Debug, Args)]
pub(crate) struct CaptureArgs {
    /// The learner's GPU UUID as its own CUDA runtime reports it, recorded in the snapshot
    #[arg(long, value_name = "UUID")]
    pub(crate) learner_uuid: Option<String>,

    /// The deadline of each host query, in milliseconds
    #[arg(long, value_name = "N", default_value = "5000", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub(crate) timeout_ms: u64,

    /// Write the snapshot to FILE (atomically) instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// Record the groups of this user (a UID, or a name in /etc/passwd) for the pipe-directory
    /// reach, so that `check --as-user` with the same user can judge it
    #[arg(long, value_name = "USER", value_parser = parse_user)]
    pub(crate) as_user: Option<u32>,
}

/// `capture`: the snapshot, pretty JSON, on stdout or into `--output`.
pub(crate) fn run(args: &CaptureArgs) -> Output {
    let options = ProbeOptions {
        timeout: Duration::from_millis(args.timeout_ms),
        learner_uuid: args.learner_uuid.clone(),
        observe_cuda: true,
        as_user: args.as_user,
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
        // Parents are created, as CI users expect of an output path.
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
