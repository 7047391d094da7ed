//! Reading a `CUDA_VISIBLE_DEVICES` value as the driver does: C's `isspace` and `strtoul`, the
//! entry kinds, and the borrowed [`Reading`] that both parsing and resolution start from.

use super::{Duplicate, Mode, Same, Stop, StopReason, VisibleEntry, WarningKind};
use crate::small::SmallList;
use crate::uuid::GpuUuid;

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

/// What CUDA reads from a set value, borrowing it: [`VisibleDevices`](super::VisibleDevices) without copies, and
/// with positions where it has entry texts (those are needed for messages only).
pub(crate) struct Reading<'a> {
    pub(crate) mode: Mode,
    /// Entry `i` is at position `i`.
    pub(crate) entries: SmallList<EntryRef<'a>>,
    pub(crate) stop: Option<(usize, StopReason)>,
    /// The positions of the two entries, and what they share.
    pub(crate) duplicate: Option<(usize, usize, Same)>,
    /// Position, index read and kind.
    pub(super) warnings: Vec<(usize, u32, WarningKind)>,
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
