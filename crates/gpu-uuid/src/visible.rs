//! `CUDA_VISIBLE_DEVICES` as the CUDA driver reads it, without a driver.

use std::ffi::OsStr;

/// How a `CUDA_VISIBLE_DEVICES` value selects devices. The first entry fixes it for the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The variable is unset: every GPU is visible.
    All,
    /// Set to the empty string or only whitespace: no GPU is visible.
    Blank,
    /// Device indices (`0,2`): the value does not start with `GPU-` or `MIG-`.
    Index,
    /// `GPU-` UUIDs or unique UUID prefixes: the value starts with `GPU-`.
    Uuid,
    /// `MIG-` device ids: the value starts with `MIG-`.
    Mig,
}

/// One entry CUDA accepts, before it is placed on a host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum VisibleEntry {
    /// A device index, read like `strtoul` (`01`, `+1`, ` 1` and `1abc` all mean 1). Values
    /// beyond `u32` saturate, as `strtoul` does at `ULONG_MAX`; no host has that many GPUs.
    Index(u32),
    /// `GPU-` followed by all or part of a UUID, exactly as written (case kept).
    GpuPrefix(String),
    /// A `MIG-` entry (`MIG-<uuid>` or legacy `MIG-GPU-<uuid>/<gi>/<ci>`), exactly as written.
    Mig(String),
}

/// Why CUDA stops reading the list at an entry. Entries before it stay; it and the rest are
/// ignored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The entry is empty (`0,,1`, a trailing comma, a leading comma).
    Empty,
    /// A negative index such as `-1` (`-0` is 0 and valid).
    Negative,
    /// Neither an index nor a `GPU-`/`MIG-` id (`one`, `0x1` is *not* this: it reads 0).
    Invalid,
    /// `all`, `none`, `void` or `NoDevFiles`: keywords of `NVIDIA_VISIBLE_DEVICES` or Slurm,
    /// not of CUDA.
    Keyword,
    /// A UUID (or the start of one) without the `GPU-` prefix whose first character is not a
    /// digit. (One that starts with a digit is read as an index, with a
    /// [`WarningKind::BareUuid`] warning.)
    BareUuid,
    /// An entry of another kind than the list's first entry, which fixed the mode.
    OtherKind {
        /// The list's mode.
        list: Mode,
    },
    /// A `GPU-`/`MIG-` id with whitespace around it. PyTorch's model of the driver treats it as
    /// invalid, nvitop strips it; unverified on a real driver (docs/cuda-visibility.md §3 rows 44–45).
    Whitespace,
    /// `gpu-`/`mig-` in another letter case: CUDA matches the prefix case-sensitively
    /// (PyTorch's model; unverified, docs/cuda-visibility.md §3 row 42).
    PrefixCase,
    /// Resolution: an index at or beyond the number of host GPUs.
    IndexBeyondTable {
        /// The index.
        index: u32,
        /// How many GPUs the host table has.
        gpus: usize,
    },
    /// Resolution: a `GPU-` prefix that matches no host GPU's UUID.
    NoMatch {
        /// How many host UUIDs it would match if letter case were ignored.
        ignoring_case: usize,
    },
    /// Resolution: a `GPU-` prefix that matches several host GPUs.
    Ambiguous {
        /// The host indices of the GPUs it matches.
        matches: Vec<u32>,
    },
}

/// Where and why CUDA stops reading `CUDA_VISIBLE_DEVICES`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Stop {
    /// The entry's position in the list, from 0 (messages count from 1).
    pub position: usize,
    /// The entry, as written (invalid UTF-8 shown as U+FFFD).
    pub entry: String,
    /// Why CUDA stops there.
    pub reason: StopReason,
    /// The entries after it, which CUDA ignores too.
    pub ignored: Vec<String>,
}

/// Two entries naming the same device; CUDA then sees no device at all.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Duplicate {
    /// Position of the first of the two entries, from 0.
    pub first: usize,
    /// The first entry, as written.
    pub first_entry: String,
    /// Position of the repeat, from 0.
    pub second: usize,
    /// The repeat, as written.
    pub second_entry: String,
    /// What the two have in common.
    pub same: Same,
}

/// What two duplicate entries have in common.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Same {
    /// The same device index (`1` and `01`).
    Index(u32),
    /// The same text (`GPU-9e8d,GPU-9e8d`).
    Text,
    /// Different prefixes of the same host GPU, found when resolving.
    HostGpu(u32),
}

/// Something CUDA accepts but probably not what was meant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Warning {
    /// The entry's position, from 0.
    pub position: usize,
    /// The entry, as written.
    pub entry: String,
    /// The device index CUDA reads from it.
    pub index: u32,
    /// What is suspicious.
    pub kind: WarningKind,
}

/// What is suspicious about an accepted index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// A UUID, or the start of one, without `GPU-`: CUDA reads its leading digits as an index
    /// (`1c20e77d-…` is 1, `9e8d35e3` is 9).
    BareUuid,
    /// A range such as `0-2`: CUDA has no ranges and reads the first number.
    Range,
    /// Text after the number (`1gpu2`), which CUDA ignores.
    TrailingText,
}

/// A parsed `CUDA_VISIBLE_DEVICES` value: what CUDA reads from it before it knows the host,
/// losslessly (unset ≠ empty), with where and why reading stopped.
///
/// The rules (docs/cuda-visibility.md §1, §9; PyTorch's driver emulation, which was checked against
/// driver 525.60.13):
/// - unset: every GPU; empty or only whitespace: none;
/// - split on commas only; there are no ranges;
/// - the first characters fix the mode: `GPU-` UUIDs, `MIG-` ids, otherwise indices;
/// - an index is read like `strtoul`: leading whitespace, an optional sign, decimal digits,
///   trailing text ignored (`01`, `+1`, `-0`, `1gpu2` are valid);
/// - the first invalid entry (`-1`, junk, an empty entry, an entry of the other kind) stops
///   reading; earlier entries stay visible;
/// - a repeated device before that point hides *every* device (indices by value here; `GPU-`
///   prefixes again after [`crate::resolve()`] places them);
/// - `all`, `none`, `void` and `NoDevFiles` are not CUDA keywords: they are invalid entries.
///
/// ```
/// use gpu_uuid::{Mode, StopReason, VisibleDevices, VisibleEntry};
///
/// assert!(VisibleDevices::parse_bytes(None).is_all());
/// assert!(VisibleDevices::parse_bytes(Some(b"")).is_empty());
///
/// let devices = VisibleDevices::parse_bytes(Some(b"0,2,-1,1"));
/// assert_eq!(devices.mode(), Mode::Index);
/// assert_eq!(devices.entries(), [VisibleEntry::Index(0), VisibleEntry::Index(2)]);
/// let stop = devices.stop().unwrap();
/// assert_eq!((stop.position, stop.entry.as_str()), (2, "-1"));
/// assert_eq!(stop.reason, StopReason::Negative);
///
/// assert!(VisibleDevices::parse_bytes(Some(b"0,1,2,1")).is_empty()); // a repeat hides all
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibleDevices {
    raw: Option<Vec<u8>>,
    mode: Mode,
    raw_entries: Vec<String>,
    entries: Vec<VisibleEntry>,
    stop: Option<Stop>,
    duplicate: Option<Duplicate>,
    warnings: Vec<Warning>,
}

mod message;
mod scan;

pub(crate) use scan::{EntryRef, Reading, duplicate_at, lossy, stop_at};

impl VisibleDevices {
    /// Parses the variable as the OS holds it: `None` when unset.
    ///
    /// ```
    /// use std::ffi::OsStr;
    /// use gpu_uuid::VisibleDevices;
    /// // In mps-host: VisibleDevices::parse(std::env::var_os("CUDA_VISIBLE_DEVICES").as_deref())
    /// let devices = VisibleDevices::parse(Some(OsStr::new("GPU-9e8d35e3,GPU-47")));
    /// assert_eq!(devices.entries().len(), 2);
    /// ```
    pub fn parse(raw: Option<&OsStr>) -> Self {
        Self::parse_bytes(raw.map(OsStr::as_encoded_bytes))
    }

    /// Parses the variable's raw bytes: `None` when unset. Never fails: every value means
    /// something to CUDA, if only "no devices".
    pub fn parse_bytes(raw: Option<&[u8]>) -> Self {
        let Some(raw) = raw else {
            return Self {
                raw: None,
                mode: Mode::All,
                raw_entries: Vec::new(),
                entries: Vec::new(),
                stop: None,
                duplicate: None,
                warnings: Vec::new(),
            };
        };
        let reading = Reading::new(raw);
        let raw_entries: Vec<String> = raw.split(|b| *b == b',').map(lossy).collect();
        let raw_entry = |position: usize| raw_entries.get(position).cloned().unwrap_or_default();
        let warnings = reading
            .warnings
            .iter()
            .map(|&(position, index, kind)| Warning {
                position,
                entry: raw_entry(position),
                index,
                kind,
            });
        Self {
            raw: Some(raw.to_vec()),
            mode: reading.mode,
            entries: reading
                .entries
                .as_slice()
                .iter()
                .copied()
                .map(VisibleEntry::from)
                .collect(),
            stop: reading
                .stop
                .map(|(position, reason)| stop_at(raw, position, reason)),
            duplicate: reading
                .duplicate
                .map(|duplicate| duplicate_at(raw, duplicate)),
            warnings: warnings.collect(),
            raw_entries,
        }
    }

    pub(crate) fn raw_entry(&self, position: usize) -> String {
        self.raw_entries.get(position).cloned().unwrap_or_default()
    }

    pub(crate) fn stop_at(&self, position: usize, reason: StopReason) -> Stop {
        Stop {
            position,
            entry: self.raw_entry(position),
            reason,
            ignored: self
                .raw_entries
                .get(position + 1..)
                .unwrap_or_default()
                .to_vec(),
        }
    }

    /// The raw value; `None` when unset.
    pub fn raw(&self) -> Option<&[u8]> {
        self.raw.as_deref()
    }

    /// The mode the first entry fixed.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Unset: CUDA sees every GPU.
    pub fn is_all(&self) -> bool {
        self.mode == Mode::All
    }

    /// Set but empty or whitespace only: CUDA sees no GPU.
    pub fn is_blank(&self) -> bool {
        self.mode == Mode::Blank
    }

    /// CUDA sees no GPU whatever the host: blank, a repeated device, or nothing valid before
    /// the stop. (A non-empty list may still select nothing on a given host; see
    /// [`crate::resolve()`].)
    pub fn is_empty(&self) -> bool {
        !self.is_all() && self.entries.is_empty()
    }

    /// The entries CUDA reads, in order, before any stop. Entry `i` is at position `i`.
    /// Empty when unset (see [`Self::is_all`]), blank, or when a repeat hides every device.
    pub fn entries(&self) -> &[VisibleEntry] {
        &self.entries
    }

    /// Every comma-separated piece of the value as written, including those after a stop.
    pub fn raw_entries(&self) -> &[String] {
        &self.raw_entries
    }

    /// Where and why CUDA stops reading, if it does before the end.
    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// The repeated device that hides every device, if any.
    pub fn duplicate(&self) -> Option<&Duplicate> {
        self.duplicate.as_ref()
    }

    /// Entries CUDA accepts that were probably meant otherwise.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
}
