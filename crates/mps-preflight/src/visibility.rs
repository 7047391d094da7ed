//! `visibility`: the mask with device indices rewritten to `GPU-` UUIDs for an MPS client.

use std::time::Duration;

use clap::Args;

use crate::args::{paragraphs, parse_timeout};
use crate::front::{Refused, Wording};
use crate::output::Output;

/// `visibility`: the front end's rewrite ([`crate::front::visibility`]), printed.
pub(crate) fn visibility(args: &VisibilityArgs) -> Output {
    let timeout = Duration::from_millis(args.timeout_ms);
    match crate::front::visibility(args.devices.as_deref(), timeout, Wording::Cli) {
        Ok(visible) => Output {
            warnings: visible.warnings,
            ..Output::data(format!("{}\n", visible.mask))
        },
        Err(Refused::Rejected(errors)) => Output {
            status: crate::output::Status::Rejected,
            errors: errors.into_iter().map(|(_, message)| message).collect(),
            ..Output::default()
        },
        Err(Refused::Input(message)) => Output::input(message),
    }
}

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Print CUDA_VISIBLE_DEVICES (or --devices LIST) with each device index rewritten to its host
GPU's `GPU-…` UUID. An MPS server renumbers the devices it serves from 0, so a client mask like
`1` selects nothing; a UUID names the same GPU everywhere. `GPU-`/`MIG-` entries pass through.
When CUDA_VISIBLE_DEVICES is unset, every host GPU's UUID is printed, in order.

Exit 1, naming the entry, when an index has no host GPU (or `nvidia-smi` cannot list them), and
when index order cannot be trusted: indices follow CUDA's order, which is `nvidia-smi`'s only
with CUDA_DEVICE_ORDER=PCI_BUS_ID or when every GPU is the same model.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    paragraphs(
        "Examples:
  devices=$(mps-preflight visibility) || exit 1
  export CUDA_VISIBLE_DEVICES=\"$devices\"
  mps-preflight visibility --devices 0,2

Do not write `export CUDA_VISIBLE_DEVICES=$(mps-preflight visibility)` in a script that must stop
on failure: `export` succeeds even when the command fails, leaving an empty mask (no GPU).

Exit status:
  0  the mask is on stdout; an entry CUDA would ignore or read otherwise than
     written (`0-2`, `0,-1,1`, a UUID without `GPU-`) adds a `warning: ` line
  1  refused: the mask would show no GPU (empty, `0,0`, `all`, `-1`), an index
     has no host GPU, index order cannot be trusted, or the mask holds a newline
     or another control character; stdout is empty
  2  usage error",
    )
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
