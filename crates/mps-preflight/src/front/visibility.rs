//! `visibility`: a mask with device indices rewritten to `GPU-` UUIDs for an MPS client, for
//! the command line's `visibility` and Python's `visibility()`.

use std::time::Duration;

use gpu_uuid::{GpuTable, VisibilityError, VisibleDevices, mps_visibility_entries};
use mps_host::{DEFAULT_OUTPUT_CAP, ProcessRunner};
use sharing_policy::EnvFacts;

use super::{Param, Refused, Wording};

/// The code of every `visibility` rejection.
pub const VISIBILITY_CODE: &str = "visibility-unresolved";

const NVIDIA_SMI_HINT: &str = "check `nvidia-smi --query-gpu=index,uuid --format=csv,noheader`";

/// A rewritten mask, and one warning per entry CUDA would ignore or read otherwise than
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visible {
    /// The mask, entries joined by `,` (no newline).
    pub mask: String,
    /// What was probably not meant (`0-2`, a UUID without `GPU-`), in the caller's words.
    pub warnings: Vec<String>,
}

/// `devices` (else `CUDA_VISIBLE_DEVICES`; unset: every host GPU) with each index rewritten
/// to its host GPU's UUID, the `nvidia-smi` query bounded by `timeout`.
///
/// # Errors
/// [`Refused::Rejected`] with [`VISIBILITY_CODE`]: the mask shows no GPU, an index has no host
/// GPU, the table is unavailable, index order cannot be trusted, or a control character.
pub fn visibility(
    devices: Option<&str>,
    timeout: Duration,
    wording: Wording,
) -> Result<Visible, Refused> {
    let rejected = |message: String| Refused::rejected(VISIBILITY_CODE, message);
    let env = mps_host::read_env();
    let raw = match (devices, &env.cuda_visible_devices) {
        (Some(list), _) => Some(list.to_owned()),
        (None, None) => None,
        (None, Some(value)) => match value.as_str() {
            Some(text) => Some(text.to_owned()),
            None => {
                return Err(rejected(format!(
                    "CUDA_VISIBLE_DEVICES is not valid UTF-8 ({:?}), so its entries cannot be read as indices or UUIDs; set it to `GPU-` UUIDs from `nvidia-smi -L`",
                    value.to_string_lossy()
                )));
            }
        },
    };
    let Some(raw) = raw else {
        return every_gpu(&env, timeout, wording).map_err(rejected);
    };
    let given = devices.is_some();
    if let Some(why) = control_character(&raw, given, wording) {
        return Err(rejected(why));
    }
    // Errors name where the list came from; the gpu-uuid texts say `CUDA_VISIBLE_DEVICES`.
    let source = match (given, wording) {
        (false, _) => String::new(),
        (true, Wording::Cli) => {
            format!("--devices {raw:?} (the value for CUDA_VISIBLE_DEVICES): ")
        }
        (true, _) => format!("{}{raw:?}: ", wording.name(Param::Devices)),
    };
    let parsed = VisibleDevices::parse_bytes(Some(raw.as_bytes()));
    if let Some(why) = shows_no_gpu(&parsed) {
        return Err(rejected(format!("{source}{why}")));
    }
    let warnings = ignored_entries(&parsed)
        .into_iter()
        .map(|warning| format!("{source}{warning}"))
        .collect();
    let mask = rewrite(&env, &raw, timeout).map_err(|why| rejected(format!("{source}{why}")))?;
    Ok(Visible { mask, warnings })
}

/// Why a mask holding a control character (a newline, a tab, an escape, DEL, a C1 control) is
/// refused: no GPU entry holds one, and the printed mask is meant for a shell or a Slurm task
/// prolog's `export NAME=value` line, where a newline would start a line of its own (a second
/// `export`).
/// CUDA reads the entries after its stop point as written, so the mask cannot be cut there.
fn control_character(raw: &str, given: bool, wording: Wording) -> Option<String> {
    let (at, found) = raw.char_indices().find(|(_, c)| c.is_control())?;
    let (name, fix) = if given {
        (wording.name(Param::Devices), "pass the list")
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
fn rewrite(env: &EnvFacts, raw: &str, timeout: Duration) -> Result<String, String> {
    match mps_visibility_entries(raw, None) {
        Ok(entries) => return Ok(entries.join(",")),
        Err(VisibilityError::NoTable { .. }) => {} // indices: the host table is needed
        Err(err) => return Err(err.to_string()),
    }
    let table = host_table(timeout).map_err(|why| {
        let what = mps_visibility_entries(raw, None)
            .err()
            .map(|err| err.to_string())
            .unwrap_or_default();
        format!("{what} (the table is unavailable because {why})")
    })?;
    let entries = mps_visibility_entries(raw, Some(&table)).map_err(|err| err.to_string())?;
    if let Some(why) = untrusted_order(
        env,
        &table,
        &format!("CUDA_VISIBLE_DEVICES={raw:?} selects GPUs by index"),
    ) {
        return Err(why);
    }
    Ok(entries.join(","))
}

/// Unset mask: every host GPU is visible, in CUDA's order; listing them by UUID keeps that
/// exactly when CUDA's order is the table's.
fn every_gpu(env: &EnvFacts, timeout: Duration, wording: Wording) -> Result<Visible, String> {
    let table = host_table(timeout).map_err(|why| {
        format!(
            "CUDA_VISIBLE_DEVICES is unset (every GPU visible), and the host GPU table that would list their UUIDs is unavailable: {why}; {NVIDIA_SMI_HINT}, or pass {} with `GPU-` UUIDs",
            wording.name(Param::Devices)
        )
    })?;
    if let Some(why) = untrusted_order(
        env,
        &table,
        "CUDA_VISIBLE_DEVICES is unset, so CUDA numbers every GPU itself",
    ) {
        return Err(why);
    }
    let uuids: Vec<String> = table
        .rows()
        .iter()
        .map(|row| row.uuid.to_string())
        .collect();
    Ok(Visible {
        mask: uuids.join(","),
        warnings: Vec::new(),
    })
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
