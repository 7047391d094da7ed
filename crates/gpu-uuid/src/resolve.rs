//! Placing a parsed `CUDA_VISIBLE_DEVICES` on a host's GPU table.

use std::fmt;

use crate::table::{GpuRow, GpuTable};
use crate::visible::{Duplicate, Mode, Same, Stop, StopReason, VisibleDevices, VisibleEntry};

/// The host GPUs a CUDA process would see, in CUDA's order, and why the list is shorter than
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    visible: Vec<GpuRow>,
    stop: Option<Stop>,
    duplicate: Option<Duplicate>,
    relies_on_index_order: bool,
}

impl Resolution {
    /// The visible GPUs: `visible()[i]` is CUDA device `i`. No GPU appears twice.
    pub fn visible(&self) -> &[GpuRow] {
        &self.visible
    }

    /// The host indices of [`Self::visible`].
    pub fn host_indices(&self) -> Vec<u32> {
        self.visible.iter().map(|row| row.index).collect()
    }

    /// No GPU is visible.
    pub fn is_empty(&self) -> bool {
        self.visible.is_empty()
    }

    /// Where and why CUDA stops reading the list: when parsing, or when placing an entry
    /// (an index beyond the table, a `GPU-` prefix matching no GPU or several).
    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// The repeated device that hides every GPU: the same index or text (found when
    /// parsing) or two prefixes of one GPU (found here).
    pub fn duplicate(&self) -> Option<&Duplicate> {
        self.duplicate.as_ref()
    }

    /// Whether the result assumes CUDA numbers GPUs in the table's (PCI / `nvidia-smi`)
    /// order: true for an unset variable or device indices on a host with more than one GPU.
    /// That holds only under `CUDA_DEVICE_ORDER=PCI_BUS_ID`, or in practice when
    /// [`GpuTable::is_homogeneous`]; otherwise CUDA's default fastest-first order may differ
    /// (notes §1, koboldcpp#1023), so prefer `GPU-` UUIDs.
    pub fn relies_on_index_order(&self) -> bool {
        self.relies_on_index_order
    }
}

/// Why a `CUDA_VISIBLE_DEVICES` value cannot be placed on the host table at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// MIG entries: the table lists physical GPUs only, and which MIG devices CUDA enumerates
    /// depends on the driver.
    #[error(
        "CUDA_VISIBLE_DEVICES selects MIG devices ({}), which cannot be verified here: the host GPU table lists physical GPUs only, and which MIG devices CUDA enumerates depends on the driver (R450-R525: one per process; R570 and later: one compute instance per GPU instance); select whole GPUs by `GPU-` UUID, or check the MIG devices with `nvidia-smi -L`",
        entries.join(", ")
    )]
    Mig {
        /// The MIG entries CUDA would read.
        entries: Vec<String>,
    },
}

/// The host GPUs a CUDA process started with `devices` would see on the host `table`, in
/// CUDA's order, following the driver's rules (notes/visibility.md §1, §9):
///
/// - unset: every GPU, in table order; blank or a repeat found when parsing: none;
/// - an index selects the table row with that index; one at or beyond the table's length
///   stops reading (earlier entries stay);
/// - a `GPU-` entry is a case-sensitive prefix of the UUID as `nvidia-smi` prints it; one
///   that matches no GPU or several stops reading;
/// - two entries that select the same GPU hide every GPU;
/// - an entry that cannot be placed never falls back to the host GPU with the same number.
///
/// Index entries assume CUDA's order is the table's; see
/// [`Resolution::relies_on_index_order`].
///
/// ```
/// use gpu_uuid::{resolve, GpuTable, StopReason, VisibleDevices};
/// let table = GpuTable::parse(
///     "0, GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1, NVIDIA A100, 00000000:07:00.0\n\
///      1, GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293, NVIDIA A100, 00000000:0F:00.0\n\
///      2, GPU-e429a63e-c61c-4795-b757-5132caeb8e70, NVIDIA A100, 00000000:47:00.0\n\
///      3, GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98, NVIDIA A100, 00000000:4E:00.0\n",
/// )?;
/// let devices = VisibleDevices::parse_bytes(Some(b"GPU-9e8d35e3,GPU-e,GPU-99"));
/// let resolution = resolve(&devices, &table)?;
/// assert_eq!(resolution.host_indices(), [1]);
/// let stop = resolution.stop().unwrap();
/// assert_eq!(stop.reason, StopReason::Ambiguous { matches: vec![2, 3] });
/// assert!(stop.to_string().starts_with(
///     "CUDA_VISIBLE_DEVICES entry 2 (\"GPU-e\") matches 2 GPUs (host indices 2, 3); CUDA stops reading the list there"
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ResolveError::Mig`] when the list selects MIG devices.
pub fn resolve(devices: &VisibleDevices, table: &GpuTable) -> Result<Resolution, ResolveError> {
    let mut resolution = Resolution {
        visible: Vec::new(),
        stop: None,
        duplicate: devices.duplicate().cloned(),
        relies_on_index_order: table.len() > 1 && matches!(devices.mode(), Mode::All | Mode::Index),
    };
    if devices.is_all() {
        resolution.visible = table.rows().to_vec();
        return Ok(resolution);
    }
    let mig: Vec<String> = devices
        .entries()
        .iter()
        .filter_map(|entry| match entry {
            VisibleEntry::Mig(text) => Some(text.clone()),
            VisibleEntry::Index(_) | VisibleEntry::GpuPrefix(_) => None,
        })
        .collect();
    if !mig.is_empty() {
        return Err(ResolveError::Mig { entries: mig });
    }
    let mut positions: Vec<usize> = Vec::new();
    for (position, entry) in devices.entries().iter().enumerate() {
        let placed = match entry {
            VisibleEntry::Index(index) => {
                table.by_index(*index).ok_or(StopReason::IndexBeyondTable {
                    index: *index,
                    gpus: table.len(),
                })
            }
            VisibleEntry::GpuPrefix(prefix) => place_prefix(prefix, table),
            VisibleEntry::Mig(_) => Err(StopReason::Invalid),
        };
        let row = match placed {
            Ok(row) => row,
            Err(reason) => {
                resolution.stop = Some(devices.stop_at(position, reason));
                return Ok(resolution);
            }
        };
        if let Some(earlier) = resolution
            .visible
            .iter()
            .position(|seen| seen.index == row.index)
        {
            let first = positions.get(earlier).copied().unwrap_or_default();
            resolution.duplicate = Some(Duplicate {
                first,
                first_entry: devices.raw_entry(first),
                second: position,
                second_entry: devices.raw_entry(position),
                same: match entry {
                    VisibleEntry::Index(index) => Same::Index(*index),
                    VisibleEntry::GpuPrefix(_) | VisibleEntry::Mig(_) => Same::HostGpu(row.index),
                },
            });
            resolution.visible.clear();
            return Ok(resolution);
        }
        resolution.visible.push(row.clone());
        positions.push(position);
    }
    resolution.stop = devices.stop().cloned();
    Ok(resolution)
}

/// The one row whose `GPU-…` UUID (as `nvidia-smi` prints it) starts with `prefix`.
fn place_prefix<'t>(prefix: &str, table: &'t GpuTable) -> Result<&'t GpuRow, StopReason> {
    let prefix = prefix.as_bytes();
    let matching = |ignore_case: bool| {
        table.rows().iter().filter(move |row| {
            let printed = row.uuid.printed();
            printed.get(..prefix.len()).is_some_and(|head| {
                if ignore_case {
                    head.eq_ignore_ascii_case(prefix)
                } else {
                    head == prefix
                }
            })
        })
    };
    let mut exact = matching(false);
    match (exact.next(), exact.next()) {
        (Some(row), None) => Ok(row),
        (None, _) => Err(StopReason::NoMatch {
            ignoring_case: matching(true).count(),
        }),
        (Some(_), Some(_)) => Err(StopReason::Ambiguous {
            matches: matching(false).map(|row| row.index).collect(),
        }),
    }
}

impl fmt::Display for Resolution {
    /// The visible GPUs' host indices, e.g. `[0, 2]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.host_indices())
    }
}
