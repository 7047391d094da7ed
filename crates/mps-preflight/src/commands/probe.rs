//! `probe`: observe this host, judge the request once, and render that verdict (JSON or
//! brief), the textfile and the manifest record.
//! Its arguments, help texts and run: one module per subcommand.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use sharing_manifest::FileState;

use super::evidence_output;
use crate::args::{EXIT_CODES, RequestArgs, VerdictFormat, paragraphs};
use crate::front::HiArgs;
use crate::output::{Output, Status};
use crate::{brief, prom};

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Observe this host (environment, control pipe, pid file, `nvidia-smi`, a read-only daemon query)
and validate the request against what was seen. This is `capture` then `check`, in memory:
`check` on a fresh `capture` prints exactly what `probe` prints.

On success stdout is exactly one JSON object, the evidence (27 keys). When rejected, stdout is
empty and stderr begins with `error: ` and says what to do.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    format!(
        "Examples:
  mps-preflight probe --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp
  mps-preflight probe --learner-device cpu      # null request: ambient state
  mps-preflight probe --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp \\
      --rank 1 --world-size 2 --manifest rank1/manifest.json

{EXIT_CODES}"
    )
}

#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    #[command(flatten)]
    pub(crate) request: RequestArgs,

    #[arg(
        long,
        value_name = "FILE",
        help = "Also record the evidence in this JSON manifest, under `cuda_process_sharing`",
        long_help = paragraphs("\
Also record the evidence in this JSON manifest, under `cuda_process_sharing`: created
if missing, every other key and the key order kept, written atomically. A file that is
not a JSON object (or a symlink, or not writable) is left untouched and the command
exits 2")
    )]
    pub(crate) manifest: Option<PathBuf>,

    #[arg(
        long,
        value_name = "FILE",
        help = "Also write Prometheus metrics to FILE, for node_exporter's textfile collector",
        long_help = paragraphs("\
Also write Prometheus metrics to FILE (node_exporter's textfile-collector format),
whether the request was validated or rejected: mps_preflight_validated (the
evidence's validated: always 0 for a null request), mps_preflight_probe_success,
mps_preflight_unmet_prerequisites{code}, mps_preflight_daemon_up,
mps_preflight_probe_duration_seconds, mps_preflight_last_run_timestamp_seconds.
Written atomically (a temporary file in the same directory, then a rename); a file
that cannot be written makes the command exit 2, saying whether the old file was
left unchanged")
    )]
    pub(crate) prom_textfile: Option<PathBuf>,

    /// The output's format: the evidence as JSON, or one line for health checks
    #[arg(long, value_enum, default_value_t = VerdictFormat::Json)]
    pub(crate) format: VerdictFormat,
}

/// `probe`: `capture` then `check`, in memory, then the textfile and the manifest. The request
/// is judged once (`sharing_policy::judge`); every output renders that one verdict.
pub(crate) fn run(args: &ProbeArgs) -> Output {
    let started = Instant::now();
    let HiArgs { request, probe } = args.request.low().to_high();
    let facts = mps_host::capture(&probe);
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
    let tools = sharing_policy::tools_not_started(&facts);
    brief::in_format(args.format, output, &request, &verdict, &tools)
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
