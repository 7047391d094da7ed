//! `check`: the same judgement as `probe`, over a snapshot.
//! Its arguments, help texts and run: one module per subcommand.

use std::path::PathBuf;

use clap::Args;

use super::{evidence_output, load_snapshot};
use crate::args::{EXIT_CODES, RequestArgs, VerdictFormat, paragraphs};
use crate::brief;
use crate::output::Output;

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Validate the request against a snapshot from `capture` (or a fixture), touching nothing on this
host. Prints what `probe` would have printed on the captured host. A --learner-uuid given here
replaces the one recorded in the snapshot.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    format!(
        "Examples:
  mps-preflight check \\
      --snapshot fixtures/hosts/healthy-socket-with-server.json \\
      --request mps --learner-device cuda:0 --collector-device cuda:0 \\
      --backend mjwarp

{EXIT_CODES}"
    )
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

/// `check`: the same validation as `probe`, over a snapshot.
pub(crate) fn run(args: &CheckArgs) -> Output {
    let facts = match load_snapshot(&args.snapshot, &args.request) {
        Ok(facts) => facts,
        Err(output) if args.format == VerdictFormat::Brief => return brief::apply(output, ""),
        Err(output) => return output,
    };
    let request = args.request.to_request();
    let verdict = sharing_policy::judge(&request, &facts);
    let output = evidence_output(&verdict.result);
    let tools = sharing_policy::tools_not_started(&facts);
    brief::in_format(args.format, output, &request, &verdict, &tools)
}
