//! The command line: argument types and help texts (clap derive). Nothing here runs anything.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::args::{EXIT_CODES, Format, RequestArgs, VerdictFormat, paragraphs, parse_timeout};

const TOP_AFTER_HELP: &str = "\
Examples:
  # Will the learner and collector on cuda:0 share one GPU through MPS?
  mps-preflight probe --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 \\
      --backend mjwarp --manifest run_manifest.json

  # Every unmet prerequisite at once, with the commands that fix them.
  mps-preflight doctor --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp

  # Record this host once, replay the check anywhere (no GPU needed).
  mps-preflight capture --output host.json
  mps-preflight check --snapshot host.json --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp

  # Before launching an MPS client: device indices become GPU UUIDs.
  devices=$(mps-preflight visibility) || exit 1
  export CUDA_VISIBLE_DEVICES=\"$devices\"

  # After both started: are they clients of one MPS server? Record the proof.
  mps-preflight attest --learner-pid \"$LEARNER\" \\
      --collector-pid \"$COLLECTOR\" --wait-ms 30000 \\
      --manifest run_manifest.json

  # After the run: are the ranks' records consistent?
  mps-preflight merge rank0/manifest.json rank1/manifest.json

Nothing here starts, stops or reconfigures an MPS daemon, and nothing initialises CUDA:
the host is observed with `nvidia-smi` and read-only `nvidia-cuda-mps-control` queries.
";

/// `--version`: the release, then the commit and the target it was built from (build.rs), as
/// `0.2.0 (3a62974, x86_64-unknown-linux-gnu.2.17)`.
pub(crate) const BUILD_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("MPS_PREFLIGHT_BUILD_COMMIT"),
    ", ",
    env!("MPS_PREFLIGHT_BUILD_TARGET"),
    ")"
);

/// Answers, fail-closed, whether a learner and a collector process will really share one
/// physical GPU through a live CUDA MPS daemon, and records the evidence.
#[derive(Debug, Parser)]
#[command(
    name = "mps-preflight",
    version = BUILD_VERSION,
    about = "Answers, fail-closed, whether a learner and a collector will really share one physical GPU through a live CUDA MPS daemon",
    long_about = paragraphs("\
Answers, fail-closed, whether a learner and a collector process will really share one physical
GPU through a live CUDA MPS daemon. An explicit `--request mps` is either proven against this
host, with the evidence printed as JSON, or rejected with the first unmet prerequisite and the
command that fixes it. A null request (the default) never fails: it records the ambient MPS state."),
    after_help = format!("{TOP_AFTER_HELP}\n{EXIT_CODES}"),
    arg_required_else_help = false,
    max_term_width = 100
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Observe this host and validate the request; print the evidence as JSON
    #[command(
        long_about = paragraphs("\
Observe this host (environment, control pipe, pid file, `nvidia-smi`, a read-only daemon query)
and validate the request against what was seen. This is `capture` then `check`, in memory:
`check` on a fresh `capture` prints exactly what `probe` prints.

On success stdout is exactly one JSON object, the evidence (27 keys). When rejected, stdout is
empty and stderr begins with `error: ` and says what to do."),
        after_help = format!("Examples:
  mps-preflight probe --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp
  mps-preflight probe --learner-device cpu      # null request: ambient state
  mps-preflight probe --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp \\
      --rank 1 --world-size 2 --manifest rank1/manifest.json

{EXIT_CODES}")
    )]
    Probe(ProbeArgs),

    /// Record this host's raw facts as a JSON snapshot, for `check` and `doctor --snapshot`
    #[command(
        long_about = paragraphs("\
Record what this host shows (environment, control pipe, pid file, `nvidia-smi`, a read-only
daemon query) as a JSON snapshot, uninterpreted. Replay it anywhere with `check --snapshot` or
`doctor --snapshot`; no GPU is needed there."),
        after_help = format!("Examples:
  mps-preflight capture --output host.json
  mps-preflight capture \\
      --learner-uuid GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 > host.json

Exit status:
  0  the snapshot is written (to stdout, or to --output); observing never fails:
     what could not be observed is recorded as such
  2  usage error, or --output cannot be written (the file is left as it was)")
    )]
    Capture(CaptureArgs),

    /// Validate a request against a snapshot alone, touching nothing on this host
    #[command(
        long_about = paragraphs("\
Validate the request against a snapshot from `capture` (or a fixture), touching nothing on this
host. Prints what `probe` would have printed on the captured host. A --learner-uuid given here
replaces the one recorded in the snapshot."),
        after_help = format!("Examples:
  mps-preflight check \\
      --snapshot fixtures/hosts/healthy-socket-with-server.json \\
      --request mps --learner-device cuda:0 --collector-device cuda:0 \\
      --backend mjwarp

{EXIT_CODES}")
    )]
    Check(CheckArgs),

    /// Print `CUDA_VISIBLE_DEVICES` with device indices rewritten to GPU UUIDs.
    #[command(
        about = "Print CUDA_VISIBLE_DEVICES with device indices rewritten to GPU UUIDs, for an MPS launch",
        long_about = paragraphs("\
Print CUDA_VISIBLE_DEVICES (or --devices LIST) with each device index rewritten to its host
GPU's `GPU-…` UUID. An MPS server renumbers the devices it serves from 0, so a client mask like
`1` selects nothing; a UUID names the same GPU everywhere. `GPU-`/`MIG-` entries pass through.
When CUDA_VISIBLE_DEVICES is unset, every host GPU's UUID is printed, in order.

Exit 1, naming the entry, when an index has no host GPU (or `nvidia-smi` cannot list them), and
when index order cannot be trusted: indices follow CUDA's order, which is `nvidia-smi`'s only
with CUDA_DEVICE_ORDER=PCI_BUS_ID or when every GPU is the same model."),
        after_help = format!("Examples:
  devices=$(mps-preflight visibility) || exit 1
  export CUDA_VISIBLE_DEVICES=\"$devices\"
  mps-preflight visibility --devices 0,2

Do not write `export CUDA_VISIBLE_DEVICES=$(mps-preflight visibility)` in a script that must stop
on failure: `export` succeeds even when the command fails, leaving an empty mask (no GPU).

Exit status:
  0  the mask is on stdout; an entry CUDA would ignore or read otherwise than
     written (`0-2`, `0,-1,1`, a UUID without `GPU-`) adds a `warning: ` line
  1  refused: the mask would show no GPU (empty, `0,0`, `all`, `-1`), an index
     has no host GPU, or index order cannot be trusted; stdout is empty
  2  usage error")
    )]
    Visibility(VisibilityArgs),

    /// List every unmet prerequisite at once: what was found, why it matters, how to fix it
    #[command(
        long_about = paragraphs("\
List every unmet prerequisite of the request at once, not only the first: what was found, why
it matters, and the command that fixes it. Observes this host, or reads --snapshot."),
        after_help = format!("Examples:
  mps-preflight doctor --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp
  mps-preflight doctor --snapshot host.json --request mps \\
      --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp \\
      --format json

Exit status:
  0  nothing blocks the request; the report (\"ok: …\") is on stdout
  1  a finding blocks the request; the report is on stdout, and stderr says
     `error: N unmet prerequisites block the request (the report is on stdout)`
  2  usage error, or a snapshot that cannot be read (missing file, not JSON, a snapshot
     of another schema version)")
    )]
    Doctor(DoctorArgs),

    /// Check the per-rank evidence of one run: every rank once, and consistent
    #[command(
        long_about = paragraphs("\
Check the per-rank evidence of one run (manifests holding `cuda_process_sharing`, or bare
evidence files): ranks 0..world_size each appear once, world sizes and modes agree, and ranks
naming one pipe directory name one control pipe, daemon and server. Prints the merged run as
JSON; each inconsistency is one `error: <code>: <message>` line on stderr."),
        after_help = format!("Examples:
  mps-preflight merge runs/42/rank*/manifest.json

Codes: not-evidence, contradictory-evidence, invalid-world-size, world-size-mismatch, rank-out-of-range, duplicate-rank,
missing-rank, configured-mismatch, effective-mismatch, validated-mismatch, control-pipe-mismatch,
daemon-mismatch, server-mismatch, daemon-identity-mismatch.

Exit status:
  0  the ranks are consistent; the merged run is on stdout
  1  an inconsistency: stdout is empty, and each finding is one
     `error: <code>: <message>` line on stderr
  2  usage error, or a file that cannot be read (missing, not JSON)")
    )]
    Merge(MergeArgs),

    /// Run policy suites: captured snapshots, requests and expected outcomes, offline
    #[command(
        long_about = paragraphs("\
Run policy suites offline: each case of a `*.cases.json` file is a captured snapshot, a request
and the expected outcome (validated, with some evidence fields, or rejected with a code). Like
`check`, it touches nothing on this host. One `ok`/`FAIL` line per case, then `N passed, N failed`.
A case naming a snapshot of another schema, an unknown code, request flag or evidence key is an
error (exit 2), never a pass. The format: docs/offline-testing.md."),
        after_help = "Examples:
  mps-preflight test fixtures/cases
  mps-preflight test fleet/gpu-hosts.cases.json --junit reports/policy.xml

Exit status:
  0  every case passed
  1  a case failed; the report is on stdout, and stderr says `error: N of M cases failed`
  2  usage error, or a case that cannot be read (missing file, not JSON, an unknown key,
     code or evidence field, a snapshot of another schema version, a JUnit file that
     cannot be written)"
    )]
    Test(TestArgs),

    /// Print the JSON Schema (draft 2020-12) of a snapshot, the evidence, or a report
    #[command(
        long_about = paragraphs("\
Print the JSON Schema (draft 2020-12) of what this tool reads or writes, generated from its
types: `snapshot` (what `capture` writes and `check` reads), `evidence` (what `probe` and `check`
print and manifests record under `cuda_process_sharing`), `doctor` (`doctor --format json`) or
`merge`. Each schema's `$id` carries its version (`urn:mps-preflight:host-facts:v1`). Copies
are committed in docs/schemas/."),
        after_help = "Examples:
  mps-preflight schema snapshot > host-facts.schema.json
  mps-preflight schema evidence

Exit status:
  0  the schema is on stdout
  2  usage error (an unknown kind)"
    )]
    Schema(SchemaArgs),

    /// After start: prove that the learner and the collector are clients of one MPS server
    #[command(long_about = paragraphs(crate::attest::LONG_ABOUT), after_help = crate::attest::AFTER_HELP)]
    Attest(crate::attest::AttestArgs),

    /// Print a shell completion script for bash, zsh or fish
    #[command(
        long_about = paragraphs("\
Print a completion script for this command line, generated from its definitions, for bash, zsh
or fish. Install it where the shell looks for completions (or `source` it)."),
        after_help = "Examples:
  mps-preflight completions bash \\
      > ~/.local/share/bash-completion/completions/mps-preflight
  mps-preflight completions zsh > \"${fpath[1]}/_mps-preflight\"
  mps-preflight completions fish \\
      > ~/.config/fish/completions/mps-preflight.fish

Exit status:
  0  the script is on stdout
  2  usage error (a shell other than bash, zsh or fish)"
    )]
    Completions(CompletionsArgs),

    /// Print the man page (roff), generated from the same definitions as --help
    #[command(
        long_about = paragraphs("\
Print the man page, mps-preflight(1), in roff, generated from the same definitions as --help:
every command, its flags and its examples."),
        after_help = "Examples:
  mps-preflight man > /usr/local/share/man/man1/mps-preflight.1
  mps-preflight man | man -l -

Exit status:
  0  the page is on stdout
  2  usage error"
    )]
    Man,
}

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell
    #[arg(value_enum, value_name = "SHELL")]
    pub(crate) shell: CompletionShell,
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
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The snapshot to validate against (from `capture`, or fixtures/hosts/*.json); `-` reads standard input
    #[arg(long, value_name = "FILE")]
    pub(crate) snapshot: PathBuf,

    #[command(flatten)]
    pub(crate) request: RequestArgs,

    /// The output's format: the evidence as JSON, or one line for health checks
    #[arg(long, value_enum, default_value_t = VerdictFormat::Json)]
    pub(crate) format: VerdictFormat,
}

#[derive(Debug, Args)]
pub(crate) struct VisibilityArgs {
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help = "The list to rewrite instead of CUDA_VISIBLE_DEVICES"
    )]
    pub(crate) devices: Option<String>,

    /// The deadline of the `nvidia-smi` query, in milliseconds
    #[arg(long, value_name = "N", default_value = "5000", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub(crate) timeout_ms: u64,
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

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// One manifest or evidence file per rank
    #[arg(value_name = "FILE", required = true)]
    pub(crate) files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// A case file (`*.cases.json`), or a folder whose `*.cases.json` files are all run
    #[arg(value_name = "PATH", required = true)]
    pub(crate) paths: Vec<PathBuf>,

    #[arg(
        long,
        value_name = "FILE",
        help = "Also write the results as JUnit XML to FILE (atomically), for CI dashboards"
    )]
    pub(crate) junit: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// Which schema
    #[arg(value_enum, value_name = "KIND")]
    pub(crate) kind: SchemaKind,
}

/// The documents `schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaKind {
    /// A host-facts snapshot (`capture`, `check --snapshot`).
    Snapshot,
    /// The evidence (`probe`, `check`, a manifest's `cuda_process_sharing`).
    Evidence,
    /// `doctor --format json`.
    Doctor,
    /// `merge`'s output.
    Merge,
    /// `attest`'s attestation (a manifest's `cuda_process_sharing.attestation`).
    Attestation,
    /// A `*.cases.json` policy suite (`test`).
    Cases,
    /// An attest snapshot (`attest --save-snapshot`, `attest --snapshot`).
    AttestSnapshot,
}

#[cfg(test)]
mod tests;
