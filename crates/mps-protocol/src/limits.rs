//! What the processes will be served with: the daemon's default active
//! thread percentage, its default pinned-memory limit per device, and a server's state, as
//! the daemon prints them (docs/mps-daemon.md §5b; gpu-truth §4–5).
//!
//! Every answer is parsed strictly; the raw text is kept where the evidence records it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{QueryOutcome, QueryRecord};

/// A percentage as the daemon prints one (`%.1f`: `100.0`, `33.0`, `12.5`), kept exactly in
/// tenths. In JSON it is a number (`33.3`).
///
/// ```
/// use mps_protocol::Percentage;
///
/// assert_eq!(Percentage::parse_daemon("12.5").map(Percentage::tenths), Some(125));
/// for bad in ["100", "4428", "1.", ".5", "1.25", "+1.0", " 1.0", "1.0\n", "1e2", ""] {
///     assert_eq!(Percentage::parse_daemon(bad), None, "{bad:?}");
/// }
/// assert_eq!(Percentage::parse_arg("50").map(Percentage::tenths), Some(500));
/// assert_eq!(Percentage::parse_arg("100.0").map(Percentage::tenths), Some(1000));
/// assert_eq!(Percentage::parse_arg("100.1"), None);
/// assert_eq!(Percentage::parse_arg("0"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Percentage(u32);

impl Percentage {
    /// The most a daemon answers (and a requirement may ask): 100.0.
    pub const MAX_TENTHS: u32 = 1000;

    /// From tenths of a percent (`125` = 12.5 %); `None` above 100 %.
    pub fn from_tenths(tenths: u32) -> Option<Self> {
        (tenths <= Self::MAX_TENTHS).then_some(Self(tenths))
    }

    /// The value in tenths of a percent.
    pub fn tenths(self) -> u32 {
        self.0
    }

    /// A daemon's line exactly: ASCII digits (one to three, no sign, no space), `.`, one
    /// digit, at most 100.0. Anything else (`4428`, `1.25`) is not the daemon's `%.1f`.
    pub fn parse_daemon(line: &str) -> Option<Self> {
        let (whole, tenth) = line.split_once('.')?;
        if tenth.len() != 1 || whole.is_empty() || whole.len() > 3 {
            return None;
        }
        Self::from_digits(whole, tenth)
    }

    /// A requirement as a user writes it: `50`, `12.5` or `100.0`, above 0 and at most 100.
    pub fn parse_arg(text: &str) -> Option<Self> {
        let (whole, tenth) = text.split_once('.').unwrap_or((text, "0"));
        if tenth.len() != 1 || whole.is_empty() || whole.len() > 3 {
            return None;
        }
        Self::from_digits(whole, tenth).filter(|p| p.0 > 0)
    }

    fn from_digits(whole: &str, tenth: &str) -> Option<Self> {
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !digits(tenth) {
            return None;
        }
        let whole: u32 = whole.parse().ok()?;
        let tenth: u32 = tenth.parse().ok()?;
        Self::from_tenths(whole.checked_mul(10)?.checked_add(tenth)?)
    }

    /// The value as a JSON number would carry it.
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 10.0
    }
}

impl fmt::Display for Percentage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0 / 10, self.0 % 10)
    }
}

impl Serialize for Percentage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.as_f64())
    }
}

impl<'de> Deserialize<'de> for Percentage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        let tenths = value * 10.0;
        // Only whole tenths in 0..=100 are percentages as the daemon prints them.
        if !tenths.is_finite() || tenths < 0.0 || (tenths - tenths.round()).abs() > 1e-6 {
            return Err(serde::de::Error::custom(format!(
                "{value} is not a percentage with at most one decimal"
            )));
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "finite, non-negative and whole, checked above; the range is checked next"
        )]
        let whole = tenths.round().min(f64::from(u32::MAX)) as u32;
        Self::from_tenths(whole).ok_or_else(|| {
            serde::de::Error::custom(format!("{value} is not a percentage (0 to 100)"))
        })
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Percentage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Percentage".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A percentage with at most one decimal (the daemon's %.1f).",
            "type": "number",
            "minimum": 0,
            "maximum": 100
        })
    }
}

/// An amount of memory in MiB, as a pinned-memory limit is set and printed (`512M`, `10G`).
///
/// ```
/// use mps_protocol::MemSize;
///
/// assert_eq!(MemSize::parse_daemon("10G").map(MemSize::mib), Some(10 * 1024));
/// assert_eq!(MemSize::parse_daemon("512M").map(MemSize::mib), Some(512));
/// for bad in ["", "10", "10g", "10 G", "010G", "+1G", "1.5G", "1T", "0M", "10G\n"] {
///     assert_eq!(MemSize::parse_daemon(bad), None, "{bad:?}");
/// }
/// assert_eq!(MemSize::parse_arg("4606M").map(MemSize::mib), Some(4606));
/// assert_eq!(MemSize::parse_arg("2g").map(MemSize::mib), Some(2048));
/// assert_eq!(MemSize::parse_arg("0G"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(try_from = "String", into = "String")]
pub struct MemSize(u64);

impl MemSize {
    /// The largest amount accepted, in MiB (1 PiB; far above any GPU).
    const MAX_MIB: u64 = 1 << 30;

    /// From MiB; `None` for 0 or more than 1 PiB.
    pub fn from_mib(mib: u64) -> Option<Self> {
        (1..=Self::MAX_MIB).contains(&mib).then_some(Self(mib))
    }

    /// The amount in MiB.
    pub fn mib(self) -> u64 {
        self.0
    }

    /// The daemon's answer exactly: `%lldG` (whole GiB, rounded down) or `%lldM`, no leading
    /// zero, above zero (`0M` clears a limit, so it is never printed as one).
    pub fn parse_daemon(text: &str) -> Option<Self> {
        let (digits, unit) = split_unit(text, false)?;
        if digits.starts_with('0') {
            return None;
        }
        Self::scaled(digits, unit)
    }

    /// A requirement as a user writes it: digits then `M`/`m` (MiB) or `G`/`g` (GiB).
    pub fn parse_arg(text: &str) -> Option<Self> {
        let (digits, unit) = split_unit(text, true)?;
        Self::scaled(digits, unit)
    }

    fn scaled(digits: &str, unit: u8) -> Option<Self> {
        let value: u64 = digits.parse().ok()?;
        let mib = if unit == b'G' {
            value.checked_mul(1024)?
        } else {
            value
        };
        Self::from_mib(mib)
    }
}

/// `(digits, b'M' | b'G')` of `12M`; lower case only when `any_case`.
fn split_unit(text: &str, any_case: bool) -> Option<(&str, u8)> {
    let (&last, digits) = text.as_bytes().split_last()?;
    let unit = if any_case {
        last.to_ascii_uppercase()
    } else {
        last
    };
    if !matches!(unit, b'M' | b'G')
        || digits.is_empty()
        || digits.len() > 10
        || !digits.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    Some((text.get(..digits.len())?, unit))
}

impl fmt::Display for MemSize {
    /// `10G` for whole GiB, else `4606M` (the daemon's own units).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1024) {
            write!(f, "{}G", self.0 / 1024)
        } else {
            write!(f, "{}M", self.0)
        }
    }
}

impl TryFrom<String> for MemSize {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse_arg(&text)
            .ok_or_else(|| format!("{text:?} is not an amount of memory like 512M or 10G"))
    }
}

impl From<MemSize> for String {
    fn from(size: MemSize) -> Self {
        size.to_string()
    }
}

/// The default active-thread percentage from the liveness line of a live daemon's answer (the
/// first line of its stdout), when it is the daemon's `%.1f`.
pub fn default_percentage(record: Option<&QueryRecord>) -> Option<Percentage> {
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        ..
    } = &record?.outcome
    else {
        return None;
    };
    if stdout.truncated || stdout.non_utf8 {
        return None;
    }
    let (first, _) = stdout.text.split_once('\n')?;
    Percentage::parse_daemon(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn a_daemon_percentage_is_exactly_its_printf(tenths in 0u32..=1000) {
            let line = format!("{:.1}", f64::from(tenths) / 10.0);
            proptest::prop_assert_eq!(Percentage::parse_daemon(&line).map(Percentage::tenths), Some(tenths));
            let parsed = Percentage::parse_daemon(&line);
            proptest::prop_assert_eq!(parsed.map(|p| p.to_string()), Some(line));
        }

        #[test]
        fn pid_shaped_lines_are_never_percentages(pid in 0u32..=4_194_304) {
            proptest::prop_assert_eq!(Percentage::parse_daemon(&pid.to_string()), None);
        }

        #[test]
        fn a_daemon_limit_reads_back_as_printed(mib in 1u64..=(1 << 24)) {
            // The daemon prints whole GiB rounded down, else MiB.
            let printed = if mib >= 1024 { format!("{}G", mib / 1024) } else { format!("{mib}M") };
            let parsed = MemSize::parse_daemon(&printed);
            let expected = if mib >= 1024 { (mib / 1024) * 1024 } else { mib };
            proptest::prop_assert_eq!(parsed.map(MemSize::mib), Some(expected));
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,12}") {
            let _ = (Percentage::parse_daemon(&text), Percentage::parse_arg(&text));
            let _ = (MemSize::parse_daemon(&text), MemSize::parse_arg(&text));
        }
    }

    #[test]
    fn percentages_round_trip_through_json() {
        let p = Percentage::from_tenths(333).unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "33.3");
        assert_eq!(serde_json::from_str::<Percentage>(&json).unwrap(), p);
        for bad in ["-1.0", "100.5", "12.25", "1e9"] {
            assert!(serde_json::from_str::<Percentage>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_round_trip_through_json() {
        let size = MemSize::parse_arg("4606M").unwrap();
        assert_eq!(serde_json::to_string(&size).unwrap(), "\"4606M\"");
        assert_eq!(
            serde_json::from_str::<MemSize>("\"2G\"").unwrap().mib(),
            2048
        );
        assert!(serde_json::from_str::<MemSize>("\"2T\"").is_err());
    }
}
