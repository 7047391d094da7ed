//! Rewriting device indices to UUIDs before an MPS client starts.

use crate::table::GpuTable;
use crate::visible::{Mode, StopReason, VisibleDevices, VisibleEntry};

/// Why `CUDA_VISIBLE_DEVICES` cannot be rewritten for an MPS launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VisibilityError {
    /// A device index, and no host GPU table to translate it.
    #[error(
        "CUDA_VISIBLE_DEVICES entry {} ({entry:?}) is a device index, but MPS clients need `GPU-` UUIDs (a client counts indices among the devices its MPS server sees) and the host GPU table is unavailable to translate it; check `nvidia-smi --query-gpu=index,uuid --format=csv,noheader`, or write the entry as a `GPU-` UUID from `nvidia-smi -L`",
        position + 1
    )]
    NoTable {
        /// The entry's position, from 0.
        position: usize,
        /// The entry, as written.
        entry: String,
    },
    /// A device index the host table does not have.
    #[error(
        "CUDA_VISIBLE_DEVICES entry {} ({entry:?}) is device index {index}, but the host GPU table lists {gpus} GPU{}, so it has no host UUID, and MPS clients need `GPU-` UUIDs; check `nvidia-smi --query-gpu=index,uuid --format=csv,noheader` and use one of the UUIDs it lists",
        position + 1,
        if *gpus == 1 { "" } else { "s" }
    )]
    NoHostUuid {
        /// The entry's position, from 0.
        position: usize,
        /// The entry, as written.
        entry: String,
        /// The index CUDA reads from it.
        index: u32,
        /// How many GPUs the table has.
        gpus: usize,
    },
    /// A `GPU-`/`MIG-` id after indices: CUDA ignores it now, and would read it once the
    /// indices become UUIDs.
    #[error(
        "CUDA_VISIBLE_DEVICES entry {} ({entry:?}) is a `GPU-`/`MIG-` id in a list that starts with a device index, so CUDA ignores it and every entry after it; rewriting the indices to `GPU-` UUIDs for MPS would make CUDA read a `GPU-` entry there and change which GPUs are visible, so the list is refused; write every entry as a `GPU-` UUID from `nvidia-smi -L`, or remove the ones not meant",
        position + 1
    )]
    Mixed {
        /// The entry's position, from 0.
        position: usize,
        /// The entry, as written.
        entry: String,
    },
}

/// The seed's `resolve_mps_visibility_entries`: the entries of `raw` with each device index
/// rewritten to its host GPU's `GPU-` UUID (display form), so the mask survives an MPS
/// server's renumbering. Join the result with `,` to get the value to export.
///
/// What differs from the seed, on purpose (docs/cuda-visibility.md §9 item 14):
/// - an index is whatever CUDA reads as one (`strtoul`): `01`, `+1`, ` 1` and `1abc` all
///   become host GPU 1's UUID (the seed passed them through, or missed `01`);
/// - only the entries CUDA reads are rewritten: the entry where CUDA stops and everything
///   after it are kept exactly as written, so the rewritten value stops at the same place
///   (the seed rewrote later indices too, and failed on ones CUDA never reads);
/// - a `GPU-`/`MIG-` entry after indices is an error, since after the rewrite CUDA would
///   start reading it;
/// - a list that starts with `GPU-`/`MIG-`, a blank value, or one CUDA reads no index from,
///   is returned unchanged (no table needed); empty entries are kept, since `0,,1` and `0,1`
///   differ to CUDA.
///
/// Indices are mapped in the table's (PCI / `nvidia-smi`) order, which is CUDA's only under
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID` or on a homogeneous host; callers check that.
///
/// ```
/// use gpu_uuid::{mps_visibility_entries, GpuTable};
/// let table = GpuTable::parse(
///     "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100, 00000000:17:00.0\n\
///      1, GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100, 00000000:65:00.0\n",
/// )?;
/// assert_eq!(
///     mps_visibility_entries("01", Some(&table))?,
///     ["GPU-8932aaaa-1111-2222-3333-444455556666"],
/// );
/// assert_eq!(mps_visibility_entries("GPU-8932f", None)?, ["GPU-8932f"]);
/// assert!(mps_visibility_entries("2", Some(&table)).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`VisibilityError`] naming the entry: an index with no table or no host UUID, or a
/// `GPU-`/`MIG-` entry after indices.
pub fn mps_visibility_entries(
    raw: &str,
    table: Option<&GpuTable>,
) -> Result<Vec<String>, VisibilityError> {
    let devices = VisibleDevices::parse_bytes(Some(raw.as_bytes()));
    let raw_entries = devices.raw_entries();
    if devices.mode() != Mode::Index || devices.entries().is_empty() {
        return Ok(raw_entries.to_vec());
    }
    let mut rewritten = Vec::with_capacity(raw_entries.len());
    for (position, entry) in devices.entries().iter().enumerate() {
        let text = devices.raw_entry(position);
        let VisibleEntry::Index(index) = entry else {
            rewritten.push(text);
            continue;
        };
        let Some(table) = table else {
            return Err(VisibilityError::NoTable {
                position,
                entry: text,
            });
        };
        let Some(row) = table.by_index(*index) else {
            return Err(VisibilityError::NoHostUuid {
                position,
                entry: text,
                index: *index,
                gpus: table.len(),
            });
        };
        rewritten.push(row.uuid.to_string());
    }
    if let Some(stop) = devices.stop() {
        if matches!(stop.reason, StopReason::OtherKind { .. }) {
            return Err(VisibilityError::Mixed {
                position: stop.position,
                entry: stop.entry.clone(),
            });
        }
        rewritten.extend(raw_entries.iter().skip(stop.position).cloned());
    }
    Ok(rewritten)
}
