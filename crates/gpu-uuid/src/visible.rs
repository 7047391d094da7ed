//! `CUDA_VISIBLE_DEVICES` as the CUDA driver reads it, without a driver.

use std::ffi::OsStr;
use std::fmt;

use crate::small::SmallList;
use crate::uuid::GpuUuid;

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

/// C's `isspace` in the "C" locale, which `strtoul` skips.
pub(crate) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn trim_c_space(mut bytes: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = bytes {
        if !is_c_space(*first) {
            break;
        }
        bytes = rest;
    }
    while let [rest @ .., last] = bytes {
        if !is_c_space(*last) {
            break;
        }
        bytes = rest;
    }
    bytes
}

fn starts_with_ignore_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// `strtoul` in base 10: skip whitespace, optional sign, digits. Returns the sign, the value
/// (saturated) and the rest, or `None` when there are no digits.
pub(crate) fn strtoul(bytes: &[u8]) -> Option<(bool, u32, &[u8])> {
    let mut rest = bytes;
    while let [first, tail @ ..] = rest {
        if !is_c_space(*first) {
            break;
        }
        rest = tail;
    }
    let negative = match rest {
        [b'-', tail @ ..] => {
            rest = tail;
            true
        }
        [b'+', tail @ ..] => {
            rest = tail;
            false
        }
        _ => false,
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let (number, tail) = rest.split_at(digits);
    let value = number.iter().fold(0_u32, |acc, d| {
        acc.saturating_mul(10).saturating_add(u32::from(d - b'0'))
    });
    Some((negative, value, tail))
}

/// A full UUID without `GPU-`, or something that looks like the start of one: at least 8
/// hex digits and dashes with at least one letter (`9e8d35e3`).
fn is_bare_uuid(bytes: &[u8]) -> bool {
    if starts_with_ignore_case(bytes, b"GPU-") || starts_with_ignore_case(bytes, b"MIG-") {
        return false;
    }
    let full = std::str::from_utf8(bytes).is_ok_and(|text| GpuUuid::parse(text).is_ok());
    let prefix = bytes.len() >= 8
        && bytes.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-')
        && bytes.iter().any(u8::is_ascii_alphabetic);
    full || prefix
}

fn is_keyword(bytes: &[u8]) -> bool {
    ["all", "none", "void", "NoDevFiles"]
        .iter()
        .any(|k| bytes.eq_ignore_ascii_case(k.as_bytes()))
}

pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Why an entry that is not of the list's kind stops reading.
fn other_entry_reason(list: Mode, position: usize, piece: &[u8]) -> StopReason {
    let trimmed = trim_c_space(piece);
    let own: &[u8] = if list == Mode::Mig { b"MIG-" } else { b"GPU-" };
    if trimmed.is_empty() {
        StopReason::Empty
    } else if trimmed.starts_with(own) {
        // The entry is of the list's kind once the whitespace is gone; in index mode at
        // position 0, whitespace is what made the list an index list.
        if list == Mode::Index && position > 0 {
            StopReason::OtherKind { list }
        } else {
            StopReason::Whitespace
        }
    } else if trimmed.starts_with(b"GPU-") || trimmed.starts_with(b"MIG-") {
        StopReason::OtherKind { list }
    } else if starts_with_ignore_case(trimmed, b"GPU-") || starts_with_ignore_case(trimmed, b"MIG-")
    {
        StopReason::PrefixCase
    } else if let Some((negative, value, _)) = strtoul(trimmed) {
        if negative && value != 0 {
            StopReason::Negative
        } else {
            StopReason::OtherKind { list }
        }
    } else if is_keyword(trimmed) {
        StopReason::Keyword
    } else if is_bare_uuid(trimmed) {
        StopReason::BareUuid
    } else {
        StopReason::Invalid
    }
}

/// Reads one index-mode entry.
fn index_entry(position: usize, piece: &[u8]) -> Result<(u32, Option<WarningKind>), StopReason> {
    let Some((negative, value, tail)) = strtoul(piece) else {
        return Err(other_entry_reason(Mode::Index, position, piece));
    };
    if negative && value != 0 {
        return Err(StopReason::Negative);
    }
    let tail = trim_c_space(tail);
    let warning = if tail.is_empty() {
        None
    } else if is_bare_uuid(trim_c_space(piece)) {
        Some(WarningKind::BareUuid)
    } else if matches!(tail, [b'-', d, ..] if d.is_ascii_digit()) {
        Some(WarningKind::Range)
    } else {
        Some(WarningKind::TrailingText)
    };
    Ok((value, warning))
}

/// An entry CUDA accepts, borrowing the raw value: what [`VisibleEntry`] holds, before the
/// text is copied.
#[derive(Debug, Clone, Copy)]
pub(crate) enum EntryRef<'a> {
    Index(u32),
    GpuPrefix(&'a [u8]),
    Mig(&'a [u8]),
}

impl Default for EntryRef<'_> {
    /// A filler for unused inline slots.
    fn default() -> Self {
        Self::Index(0)
    }
}

impl PartialEq for EntryRef<'_> {
    /// As [`VisibleEntry`] compares: text as written, invalid UTF-8 shown as U+FFFD.
    fn eq(&self, other: &Self) -> bool {
        let same_text =
            |a: &[u8], b: &[u8]| a == b || String::from_utf8_lossy(a) == String::from_utf8_lossy(b);
        match (self, other) {
            (Self::Index(a), Self::Index(b)) => a == b,
            (Self::GpuPrefix(a), Self::GpuPrefix(b)) | (Self::Mig(a), Self::Mig(b)) => {
                same_text(a, b)
            }
            _ => false,
        }
    }
}

impl<'a> From<&'a VisibleEntry> for EntryRef<'a> {
    fn from(entry: &'a VisibleEntry) -> Self {
        match entry {
            VisibleEntry::Index(index) => Self::Index(*index),
            VisibleEntry::GpuPrefix(text) => Self::GpuPrefix(text.as_bytes()),
            VisibleEntry::Mig(text) => Self::Mig(text.as_bytes()),
        }
    }
}

impl From<EntryRef<'_>> for VisibleEntry {
    fn from(entry: EntryRef<'_>) -> Self {
        match entry {
            EntryRef::Index(index) => Self::Index(index),
            EntryRef::GpuPrefix(text) => Self::GpuPrefix(lossy(text)),
            EntryRef::Mig(text) => Self::Mig(lossy(text)),
        }
    }
}

/// What CUDA reads from a set value, borrowing it: [`VisibleDevices`] without copies, and
/// with positions where it has entry texts (those are needed for messages only).
pub(crate) struct Reading<'a> {
    pub(crate) mode: Mode,
    /// Entry `i` is at position `i`.
    pub(crate) entries: SmallList<EntryRef<'a>>,
    pub(crate) stop: Option<(usize, StopReason)>,
    /// The positions of the two entries, and what they share.
    pub(crate) duplicate: Option<(usize, usize, Same)>,
    /// Position, index read and kind.
    warnings: Vec<(usize, u32, WarningKind)>,
}

impl<'a> Reading<'a> {
    pub(crate) fn new(raw: &'a [u8]) -> Self {
        let mut reading = Self {
            mode: Mode::Blank,
            entries: SmallList::new(),
            stop: None,
            duplicate: None,
            warnings: Vec::new(),
        };
        if raw.iter().all(|b| is_c_space(*b)) {
            return reading;
        }
        reading.mode = if raw.starts_with(b"GPU-") {
            Mode::Uuid
        } else if raw.starts_with(b"MIG-") {
            Mode::Mig
        } else {
            Mode::Index
        };
        for (position, piece) in raw.split(|b| *b == b',').enumerate() {
            match reading.read_entry(position, piece) {
                Ok(entry) => {
                    if let Some(first) = reading.entries.as_slice().iter().position(|e| *e == entry)
                    {
                        let same = match entry {
                            EntryRef::Index(index) => Same::Index(index),
                            EntryRef::GpuPrefix(_) | EntryRef::Mig(_) => Same::Text,
                        };
                        reading.duplicate = Some((first, position, same));
                        reading.entries.clear();
                        return reading;
                    }
                    reading.entries.push(entry);
                }
                Err(reason) => {
                    reading.stop = Some((position, reason));
                    return reading;
                }
            }
        }
        reading
    }

    fn read_entry(&mut self, position: usize, piece: &'a [u8]) -> Result<EntryRef<'a>, StopReason> {
        let prefix: &[u8] = match self.mode {
            Mode::Index => {
                let (index, warning) = index_entry(position, piece)?;
                if let Some(kind) = warning {
                    self.warnings.push((position, index, kind));
                }
                return Ok(EntryRef::Index(index));
            }
            Mode::Uuid => b"GPU-",
            Mode::Mig => b"MIG-",
            Mode::All | Mode::Blank => return Err(StopReason::Invalid),
        };
        if !piece.starts_with(prefix) {
            return Err(other_entry_reason(self.mode, position, piece));
        }
        if piece.last().is_some_and(|b| is_c_space(*b)) {
            return Err(StopReason::Whitespace);
        }
        Ok(if self.mode == Mode::Mig {
            EntryRef::Mig(piece)
        } else {
            EntryRef::GpuPrefix(piece)
        })
    }
}

/// The comma-separated piece at `position` of `raw`, as written (lossy).
fn piece_at(raw: &[u8], position: usize) -> String {
    raw.split(|b| *b == b',')
        .nth(position)
        .map(lossy)
        .unwrap_or_default()
}

/// The [`Stop`] at `position` of `raw`.
pub(crate) fn stop_at(raw: &[u8], position: usize, reason: StopReason) -> Stop {
    Stop {
        position,
        entry: piece_at(raw, position),
        reason,
        ignored: raw
            .split(|b| *b == b',')
            .skip(position + 1)
            .map(lossy)
            .collect(),
    }
}

/// The [`Duplicate`] of the entries at `first` and `second` of `raw`.
pub(crate) fn duplicate_at(raw: &[u8], (first, second, same): (usize, usize, Same)) -> Duplicate {
    Duplicate {
        first,
        first_entry: piece_at(raw, first),
        second,
        second_entry: piece_at(raw, second),
        same,
    }
}

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

/// "entry 3 (\"x\")", counting from 1.
struct EntryName<'a>(usize, &'a str);

impl fmt::Display for EntryName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CUDA_VISIBLE_DEVICES entry {} ({:?})",
            self.0 + 1,
            self.1
        )
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

fn join_u32(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (problem, fix): (String, String) = match &self.reason {
            StopReason::Empty => (
                "is empty".into(),
                "remove the stray comma".into(),
            ),
            StopReason::Negative => (
                "is a negative index (`-1` is the usual way to hide every GPU)".into(),
                "list only the devices you want, or set CUDA_VISIBLE_DEVICES to the empty string to hide every GPU on purpose".into(),
            ),
            StopReason::Invalid => (
                "is neither a device index nor a `GPU-`/`MIG-` id".into(),
                "write device indices (`0,1`) or UUIDs as `nvidia-smi -L` prints them".into(),
            ),
            StopReason::Keyword => (
                "is a keyword of NVIDIA_VISIBLE_DEVICES (container toolkit) or Slurm, not of CUDA, so CUDA reads it as an invalid entry".into(),
                "unset CUDA_VISIBLE_DEVICES to see every GPU, or list devices by index or `GPU-` UUID".into(),
            ),
            StopReason::BareUuid => (
                "looks like a UUID without the `GPU-` prefix, which CUDA does not read as a UUID".into(),
                format!("write it as `GPU-{}`", self.entry.trim()),
            ),
            StopReason::OtherKind { list } => other_kind_text(*list),
            StopReason::Whitespace => (
                "has whitespace around a `GPU-`/`MIG-` id; PyTorch's model of the driver rejects it and other tools strip it (unverified on a real driver)".into(),
                "remove the whitespace".into(),
            ),
            StopReason::PrefixCase => (
                "has a `GPU-`/`MIG-` prefix in the wrong letter case; CUDA matches the prefix case-sensitively (PyTorch's model, unverified on a real driver)".into(),
                "write the prefix in upper case as `nvidia-smi -L` prints it".into(),
            ),
            StopReason::IndexBeyondTable { index, gpus } => (
                format!(
                    "is device index {index}, but the host has {}",
                    plural(*gpus, "GPU (index 0)", &format!("GPUs (indices 0-{})", gpus.saturating_sub(1)))
                ),
                "use an index the host has, or better a `GPU-` UUID from `nvidia-smi -L`".into(),
            ),
            StopReason::NoMatch { ignoring_case } => (
                if *ignoring_case > 0 {
                    format!(
                        "matches no host GPU's UUID as written, but would match {} if letter case were ignored; CUDA compares UUID prefixes case-sensitively (PyTorch's model, unverified) and `nvidia-smi` prints lower-case hex",
                        plural(*ignoring_case, "GPU", "GPUs")
                    )
                } else {
                    "matches no host GPU's UUID".into()
                },
                "copy the UUID from `nvidia-smi -L`, in lower-case hex".into(),
            ),
            StopReason::Ambiguous { matches } => (
                format!("matches {} GPUs (host indices {})", matches.len(), join_u32(matches)),
                "add digits of the UUID until it matches exactly one GPU (`nvidia-smi -L`)".into(),
            ),
        };
        write!(
            f,
            "{} {problem}; CUDA stops reading the list there, ",
            EntryName(self.position, &self.entry)
        )?;
        match (self.position, self.ignored.len()) {
            (0, _) => f.write_str("so it sees no GPU")?,
            (kept, 0) => write!(
                f,
                "keeping the {} before it",
                plural(kept, "entry", "entries")
            )?,
            (kept, ignored) => write!(
                f,
                "keeping the {} before it and ignoring the {} after it",
                plural(kept, "entry", "entries"),
                plural(ignored, "entry", "entries")
            )?,
        }
        write!(f, "; {fix}")
    }
}

fn other_kind_text(list: Mode) -> (String, String) {
    match list {
        Mode::Uuid => (
            "is not a `GPU-` id, but the list started with one, so CUDA reads only `GPU-` ids"
                .into(),
            "write every entry as a `GPU-` UUID (`nvidia-smi -L`)".into(),
        ),
        Mode::Mig => (
            "is not a `MIG-` id, but the list started with one, so CUDA reads only `MIG-` ids"
                .into(),
            "write every entry as a `MIG-` UUID (`nvidia-smi -L`)".into(),
        ),
        Mode::Index | Mode::All | Mode::Blank => (
            "is a `GPU-`/`MIG-` id, but the list started with an index, so CUDA reads only indices"
                .into(),
            "write every entry as a `GPU-` UUID (preferred) or every entry as an index".into(),
        ),
    }
}

impl fmt::Display for Duplicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.same {
            Same::Index(index) => format!("both name device index {index}"),
            Same::Text => "are the same".to_owned(),
            Same::HostGpu(index) => format!("both select host GPU {index}"),
        };
        write!(
            f,
            "CUDA_VISIBLE_DEVICES entries {} ({:?}) and {} ({:?}) {what}; a repeated device makes CUDA hide every GPU; list each device once",
            self.first + 1,
            self.first_entry,
            self.second + 1,
            self.second_entry
        )
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = EntryName(self.position, &self.entry);
        let index = self.index;
        match self.kind {
            WarningKind::BareUuid => write!(
                f,
                "{name} looks like a UUID without the `GPU-` prefix, so CUDA reads its leading digits as device index {index}; write it as `GPU-{}`",
                self.entry.trim()
            ),
            WarningKind::Range => write!(
                f,
                "{name} looks like a range, but CUDA has none: it reads device index {index} and ignores the rest; list each device, separated by commas"
            ),
            WarningKind::TrailingText => write!(
                f,
                "{name} has text after the number, which CUDA ignores: it reads device index {index}; write just the number"
            ),
        }
    }
}
