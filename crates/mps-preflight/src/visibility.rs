//! `visibility`: the mask with device indices rewritten to `GPU-` UUIDs for an MPS client.

use std::time::Duration;

use gpu_uuid::{GpuTable, VisibilityError, VisibleDevices, mps_visibility_entries};
use mps_host::{DEFAULT_OUTPUT_CAP, ProcessRunner};
use sharing_policy::EnvFacts;

use clap::Args;

use crate::args::{paragraphs, parse_timeout};
use crate::output::Output;

const NVIDIA_SMI_HINT: &str = "check `nvidia-smi --query-gpu=index,uuid --format=csv,noheader`";

pub(crate) fn visibility(args: &VisibilityArgs) -> Output {
    let env = mps_host::read_env();
    let timeout = Duration::from_millis(args.timeout_ms);
    let raw = match (&args.devices, &env.cuda_visible_devices) {
        (Some(list), _) => Some(list.clone()),
        (None, None) => None,
        (None, Some(value)) => match value.as_str() {
            Some(text) => Some(text.to_owned()),
            None => {
                return Output::rejected(format!(
                    "CUDA_VISIBLE_DEVICES is not valid UTF-8 ({:?}), so its entries cannot be read as indices or UUIDs; set it to `GPU-` UUIDs from `nvidia-smi -L`",
                    value.to_string_lossy()
                ));
            }
        },
    };
    let Some(raw) = raw else {
        return every_gpu(&env, timeout);
    };
    if let Some(why) = control_character(&raw, args.devices.is_some()) {
        return Output::rejected(why);
    }
    // Errors name where the list came from; the gpu-uuid texts say `CUDA_VISIBLE_DEVICES`.
    let source = if args.devices.is_some() {
        format!("--devices {raw:?} (the value for CUDA_VISIBLE_DEVICES): ")
    } else {
        String::new()
    };
    let devices = VisibleDevices::parse_bytes(Some(raw.as_bytes()));
    if let Some(why) = shows_no_gpu(&devices) {
        return Output::rejected(format!("{source}{why}"));
    }
    let warnings = ignored_entries(&devices);
    let mut output = rewrite(&env, &raw, timeout);
    if output.status == crate::output::Status::Ok {
        output.warnings = warnings
            .into_iter()
            .map(|w| format!("{source}{w}"))
            .collect();
    } else {
        output.errors = output
            .errors
            .into_iter()
            .map(|e| format!("{source}{e}"))
            .collect();
    }
    output
}

/// Why a mask holding a control character (a newline, a tab, an escape, DEL, a C1 control) is
/// refused: no GPU entry holds one, and the printed mask is meant for a shell or a Slurm task
/// prolog's `export NAME=value` line, where a newline would start a line of its own (a second
/// `export`).
/// CUDA reads the entries after its stop point as written, so the mask cannot be cut there.
fn control_character(raw: &str, from_devices: bool) -> Option<String> {
    let (at, found) = raw.char_indices().find(|(_, c)| c.is_control())?;
    let (name, fix) = if from_devices {
        ("--devices", "pass the list")
    } else {
        ("CUDA_VISIBLE_DEVICES", "set it")
    };
    Some(format!(
        "{name} holds a control character ({found:?} at byte {at}), which no GPU index or UUID contains and which would break the line that exports the mask, so no mask is printed; {fix} as comma-separated indices or `GPU-` UUIDs from `nvidia-smi -L`, with no newline or other control character"
    ))
}

/// Why CUDA would see no GPU at all with this mask, if it would not.
fn shows_no_gpu(devices: &VisibleDevices) -> Option<String> {
    const NO_GPU: &str = "with this mask CUDA would see no GPU at all (`cuInit` finds no CUDA-capable device; PyTorch raises \"No CUDA GPUs are available\"), so no mask is printed";
    if !devices.is_empty() {
        return None;
    }
    // The duplicate's and the stop's own texts say what to change.
    let why = if let Some(duplicate) = devices.duplicate() {
        format!("{duplicate}; {NO_GPU}")
    } else if let Some(stop) = devices.stop() {
        format!("{stop}; {NO_GPU}")
    } else {
        format!(
            "the mask is empty: {NO_GPU}; list the GPUs to use as `GPU-` UUIDs from `nvidia-smi -L` or as indices, or unset CUDA_VISIBLE_DEVICES for every GPU"
        )
    };
    Some(why)
}

/// The entries CUDA would ignore or read otherwise than written: one warning each.
fn ignored_entries(devices: &VisibleDevices) -> Vec<String> {
    let mut warnings: Vec<String> = devices.warnings().iter().map(ToString::to_string).collect();
    // A stop's text says where CUDA stops and how many entries it ignores.
    warnings.extend(devices.stop().map(ToString::to_string));
    warnings
}

/// The rewrite itself, once the mask is known to show a GPU.
fn rewrite(env: &EnvFacts, raw: &str, timeout: Duration) -> Output {
    let raw = raw.to_owned();
    match mps_visibility_entries(&raw, None) {
        Ok(entries) => return Output::data(format!("{}\n", entries.join(","))),
        Err(VisibilityError::NoTable { .. }) => {} // indices: the host table is needed
        Err(err) => return Output::rejected(err.to_string()),
    }
    let table = match host_table(timeout) {
        Ok(table) => table,
        Err(why) => {
            let what = mps_visibility_entries(&raw, None)
                .err()
                .map(|err| err.to_string())
                .unwrap_or_default();
            return Output::rejected(format!("{what} (the table is unavailable because {why})"));
        }
    };
    let entries = match mps_visibility_entries(&raw, Some(&table)) {
        Ok(entries) => entries,
        Err(err) => return Output::rejected(err.to_string()),
    };
    if let Some(why) = untrusted_order(
        env,
        &table,
        &format!("CUDA_VISIBLE_DEVICES={raw:?} selects GPUs by index"),
    ) {
        return Output::rejected(why);
    }
    Output::data(format!("{}\n", entries.join(",")))
}

/// Unset mask: every host GPU is visible, in CUDA's order; listing them by UUID keeps that
/// exactly when CUDA's order is the table's.
fn every_gpu(env: &EnvFacts, timeout: Duration) -> Output {
    let table = match host_table(timeout) {
        Ok(table) => table,
        Err(why) => {
            return Output::rejected(format!(
                "CUDA_VISIBLE_DEVICES is unset (every GPU visible), and the host GPU table that would list their UUIDs is unavailable: {why}; {NVIDIA_SMI_HINT}, or pass --devices with `GPU-` UUIDs"
            ));
        }
    };
    if let Some(why) = untrusted_order(
        env,
        &table,
        "CUDA_VISIBLE_DEVICES is unset, so CUDA numbers every GPU itself",
    ) {
        return Output::rejected(why);
    }
    let uuids: Vec<String> = table
        .rows()
        .iter()
        .map(|row| row.uuid.to_string())
        .collect();
    Output::data(format!("{}\n", uuids.join(",")))
}

/// sharing-policy's index order rule (`index_order_trusted`), with this command's message.
fn untrusted_order(env: &EnvFacts, table: &GpuTable, what: &str) -> Option<String> {
    if sharing_policy::index_order_trusted(env, table) {
        return None;
    }
    let order = env.cuda_device_order.as_ref().map_or_else(
        || "CUDA_DEVICE_ORDER is unset".to_owned(),
        |order| format!("CUDA_DEVICE_ORDER={:?}", order.to_string_lossy()),
    );
    let models: Vec<&str> = table.rows().iter().map(|row| row.name.as_str()).collect();
    Some(format!(
        "{what}, but index order cannot be trusted on this host: its GPUs are different models ({}) and {order}, so CUDA (fastest first) may number them differently from nvidia-smi; set CUDA_DEVICE_ORDER=PCI_BUS_ID for the launcher and every process, or write the mask as `GPU-` UUIDs from `nvidia-smi -L`",
        models.join(", ")
    ))
}

/// Runs the host GPU query through mps-host's runner and reads the table from it exactly as
/// the validator does (`sharing_policy::host_gpu_table`).
fn host_table(timeout: Duration) -> Result<GpuTable, String> {
    let runner = ProcessRunner {
        stdout_cap: DEFAULT_OUTPUT_CAP,
        stderr_cap: DEFAULT_OUTPUT_CAP,
        search_path: None,
    };
    let (record, _) = mps_host::run_gpu_query(&runner, &mps_host::gpu_query(timeout));
    sharing_policy::host_gpu_table(&record).map_err(|err| err.to_string())
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
