//! Placing a parsed `CUDA_VISIBLE_DEVICES` on a host's GPU table.

use std::fmt;

use crate::small::SmallList;
use crate::table::{GpuRow, GpuTable, GpuTableView};
use crate::uuid::GpuUuid;
use crate::visible::{
    Duplicate, EntryRef, Mode, Reading, Same, Stop, StopReason, VisibleDevices, duplicate_at,
    lossy, stop_at,
};

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
    /// (docs/cuda-visibility.md §1, koboldcpp#1023), so prefer `GPU-` UUIDs.
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
/// CUDA's order, following the driver's rules (docs/cuda-visibility.md §1, §9):
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
    let rows = table.rows();
    let relies_on_index_order =
        table.len() > 1 && matches!(devices.mode(), Mode::All | Mode::Index);
    if devices.is_all() {
        return Ok(Resolution {
            visible: rows.to_vec(),
            stop: None,
            duplicate: None,
            relies_on_index_order,
        });
    }
    let entries = devices.entries().iter().map(EntryRef::from);
    let placed = place_entries(entries, &rows.iter().map(|row| row.uuid))?;
    let visible = placed
        .visible
        .as_slice()
        .iter()
        .filter_map(|index| table.by_index(*index));
    let (stop, duplicate) = match (placed.stop, placed.duplicate) {
        (None, None) => (devices.stop().cloned(), devices.duplicate().cloned()),
        (stop, duplicate) => (
            stop.map(|(position, reason)| devices.stop_at(position, reason)),
            duplicate.map(|(first, second, same)| Duplicate {
                first,
                first_entry: devices.raw_entry(first),
                second,
                second_entry: devices.raw_entry(second),
                same,
            }),
        ),
    };
    Ok(Resolution {
        visible: visible.cloned().collect(),
        stop,
        duplicate,
        relies_on_index_order,
    })
}

/// [`resolve`] for a raw `CUDA_VISIBLE_DEVICES` value (`None`: unset) on a [`GpuTableView`],
/// without copying: the same answer, with the visible GPUs as host indices and the texts of
/// a stop or repeat built only when asked for.
///
/// ```
/// use gpu_uuid::{place, resolve, GpuTable, GpuTableView, VisibleDevices};
/// let stdout = "0, GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1, NVIDIA A100, 00000000:07:00.0\n\
///               1, GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293, NVIDIA A100, 00000000:0F:00.0\n";
/// let raw = b"GPU-9e8d35e3,GPU-99";
/// let placement = place(Some(raw), &GpuTableView::parse(stdout)?)?;
/// let resolution = resolve(&VisibleDevices::parse_bytes(Some(raw)), &GpuTable::parse(stdout)?)?;
/// assert_eq!(placement.host_indices(), resolution.host_indices());
/// assert_eq!(placement.stop().as_ref(), resolution.stop());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`resolve`].
pub fn place<'a>(
    raw: Option<&'a [u8]>,
    table: &GpuTableView<'_>,
) -> Result<Placement<'a>, ResolveError> {
    let gpus = u32::try_from(table.len()).unwrap_or(u32::MAX);
    let Some(raw) = raw else {
        return Ok(Placement {
            raw: &[],
            visible: (0..gpus).fold(SmallList::new(), |mut all, index| {
                all.push(index);
                all
            }),
            stop: None,
            duplicate: None,
            relies_on_index_order: table.len() > 1,
        });
    };
    let reading = Reading::new(raw);
    let placed = place_entries(
        reading.entries.as_slice().iter().copied(),
        &table.rows().iter().map(|row| row.uuid),
    )?;
    let (stop, duplicate) = match (placed.stop, placed.duplicate) {
        (None, None) => (reading.stop, reading.duplicate),
        found => found,
    };
    Ok(Placement {
        raw,
        visible: placed.visible,
        stop,
        duplicate,
        relies_on_index_order: table.len() > 1 && reading.mode == Mode::Index,
    })
}

/// What [`place`] found: [`Resolution`] by host index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement<'a> {
    raw: &'a [u8],
    visible: SmallList<u32>,
    stop: Option<(usize, StopReason)>,
    duplicate: Option<(usize, usize, Same)>,
    relies_on_index_order: bool,
}

impl Placement<'_> {
    /// The host indices of the visible GPUs, in CUDA's order, as [`Resolution::host_indices`].
    pub fn host_indices(&self) -> &[u32] {
        self.visible.as_slice()
    }

    /// No GPU is visible.
    pub fn is_empty(&self) -> bool {
        self.visible.as_slice().is_empty()
    }

    /// As [`Resolution::stop`], built on demand.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
            .as_ref()
            .map(|(position, reason)| stop_at(self.raw, *position, reason.clone()))
    }

    /// As [`Resolution::duplicate`], built on demand.
    pub fn duplicate(&self) -> Option<Duplicate> {
        self.duplicate
            .map(|duplicate| duplicate_at(self.raw, duplicate))
    }

    /// As [`Resolution::relies_on_index_order`].
    pub fn relies_on_index_order(&self) -> bool {
        self.relies_on_index_order
    }
}

/// Where entries land on a table whose rows (in index order) have `uuids`: host indices, and
/// the position where placing stopped or found a repeat.
struct Placed {
    visible: SmallList<u32>,
    stop: Option<(usize, StopReason)>,
    duplicate: Option<(usize, usize, Same)>,
}

/// The placing rules of [`resolve`], shared with [`place`]. Entry `i` is at position `i`.
fn place_entries<'e>(
    entries: impl Iterator<Item = EntryRef<'e>> + Clone,
    uuids: &(impl Iterator<Item = GpuUuid> + Clone),
) -> Result<Placed, ResolveError> {
    let mig = entries.clone().filter_map(|entry| match entry {
        EntryRef::Mig(text) => Some(lossy(text)),
        EntryRef::Index(_) | EntryRef::GpuPrefix(_) => None,
    });
    let mig: Vec<String> = mig.collect();
    if !mig.is_empty() {
        return Err(ResolveError::Mig { entries: mig });
    }
    let gpus = uuids.clone().count();
    let mut placed = Placed {
        visible: SmallList::new(),
        stop: None,
        duplicate: None,
    };
    for (position, entry) in entries.enumerate() {
        let row = match entry {
            EntryRef::Index(index) => usize::try_from(index)
                .is_ok_and(|i| i < gpus)
                .then_some(index)
                .ok_or(StopReason::IndexBeyondTable { index, gpus }),
            EntryRef::GpuPrefix(prefix) => place_prefix(prefix, uuids),
            EntryRef::Mig(_) => Err(StopReason::Invalid),
        };
        let row = match row {
            Ok(row) => row,
            Err(reason) => {
                placed.stop = Some((position, reason));
                break;
            }
        };
        // Entry `i` placed is visible GPU `i`, until a stop.
        if let Some(first) = placed
            .visible
            .as_slice()
            .iter()
            .position(|seen| *seen == row)
        {
            let same = match entry {
                EntryRef::Index(index) => Same::Index(index),
                EntryRef::GpuPrefix(_) | EntryRef::Mig(_) => Same::HostGpu(row),
            };
            placed.duplicate = Some((first, position, same));
            placed.visible.clear();
            break;
        }
        placed.visible.push(row);
    }
    Ok(placed)
}

/// The host index of the one row whose `GPU-…` UUID (as `nvidia-smi` prints it) starts with
/// `prefix`.
fn place_prefix(
    prefix: &[u8],
    uuids: &(impl Iterator<Item = GpuUuid> + Clone),
) -> Result<u32, StopReason> {
    let matching = |ignore_case: bool| {
        (0_u32..)
            .zip(uuids.clone())
            .filter_map(move |(index, uuid)| {
                let printed = uuid.printed();
                let found = printed.get(..prefix.len()).is_some_and(|head| {
                    if ignore_case {
                        head.eq_ignore_ascii_case(prefix)
                    } else {
                        head == prefix
                    }
                });
                found.then_some(index)
            })
    };
    let mut exact = matching(false);
    match (exact.next(), exact.next()) {
        (Some(index), None) => Ok(index),
        (None, _) => Err(StopReason::NoMatch {
            ignoring_case: matching(true).count(),
        }),
        (Some(_), Some(_)) => Err(StopReason::Ambiguous {
            matches: matching(false).collect(),
        }),
    }
}

impl fmt::Display for Resolution {
    /// The visible GPUs' host indices, e.g. `[0, 2]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.host_indices())
    }
}
