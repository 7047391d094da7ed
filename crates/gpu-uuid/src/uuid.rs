//! GPU and MIG UUIDs: parsing, the seed's comparison token, and the canonical display form.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The seed's comparison token, exactly: strip surrounding whitespace, upper-case, remove one
/// leading `GPU-`, remove every dash.
///
/// This is the Python reference's `canonicalize_gpu_uuid`
/// (`value.strip().upper().removeprefix("GPU-").replace("-", "")`). It is meant for *equality*
/// of full UUIDs written in different styles; it does not validate anything, it cannot compare
/// a `CUDA_VISIBLE_DEVICES` *prefix* with a full UUID, and it leaves a `MIG-` prefix in place.
/// Prefer [`GpuUuid::parse`] plus [`GpuUuid::canonical_token`], which validate.
///
/// Whitespace is what Python's `str.strip()` removes (Unicode whitespace plus the ASCII
/// separators U+001C–U+001F). Like the seed, the function is idempotent on inputs without
/// whitespace; with inner whitespace it is not (`"GPU- a"` → `" A"` → `"A"`), a quirk kept on
/// purpose so tokens compare exactly as the seed's do.
///
/// ```
/// use gpu_uuid::canonicalize_gpu_uuid;
/// assert_eq!(
///     canonicalize_gpu_uuid(" gpu-8932f937-d72c-4106-c12f-20bd9faed9f6\n"),
///     "8932F937D72C4106C12F20BD9FAED9F6",
/// );
/// ```
pub fn canonicalize_gpu_uuid(value: &str) -> String {
    let upper = python_strip(value).to_uppercase();
    let rest = upper.strip_prefix("GPU-").unwrap_or(&upper);
    rest.replace('-', "")
}

/// Python's `str.isspace()`: Unicode `White_Space` plus the ASCII information separators.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn python_strip(value: &str) -> &str {
    value.trim_matches(is_python_space)
}

/// Why a string is not a GPU or MIG UUID. Every message echoes the input, names the rule it
/// broke and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UuidError {
    /// Nothing but whitespace.
    #[error(
        "{input:?} is not a GPU UUID: it is empty (rule: a UUID has 32 hex digits); copy the UUID from `nvidia-smi -L`"
    )]
    Empty {
        /// The input, as given.
        input: String,
    },
    /// A character that is neither a hex digit nor a dash.
    #[error(
        "{input:?} is not a GPU UUID: {found:?} is not a hex digit (rule: a UUID is 32 hex digits 0-9/a-f, optionally grouped 8-4-4-4-12 by dashes, after an optional `GPU-`); copy the UUID from `nvidia-smi -L`"
    )]
    NotHex {
        /// The input, as given.
        input: String,
        /// The first offending character.
        found: char,
    },
    /// Too few or too many hex digits.
    #[error(
        "{input:?} is not a full GPU UUID: it has {digits} hex digit{}, a UUID has 32 (rule: length); a prefix such as `GPU-8932f937` selects a GPU in CUDA_VISIBLE_DEVICES but is not a UUID, so copy the full UUID from `nvidia-smi -L`",
        if *digits == 1 { "" } else { "s" }
    )]
    Length {
        /// The input, as given.
        input: String,
        /// How many hex digits it has.
        digits: usize,
    },
    /// 32 hex digits, but dashes in the wrong places.
    #[error(
        "{input:?} is not a GPU UUID: its dashes do not group the 32 hex digits 8-4-4-4-12 (rule: dash layout); write it as `nvidia-smi -L` prints it, e.g. GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
    )]
    DashLayout {
        /// The input, as given.
        input: String,
    },
    /// A MIG device UUID where a GPU UUID was expected.
    #[error(
        "{input:?} is a MIG device UUID, not a GPU UUID (rule: prefix); use the parent GPU's `GPU-` UUID from `nvidia-smi -L`, or parse it as a MIG UUID"
    )]
    MigNotGpu {
        /// The input, as given.
        input: String,
    },
    /// A MIG UUID without its `MIG-` prefix.
    #[error(
        "{input:?} is not a MIG device UUID (rule: a MIG UUID starts with `MIG-`); copy it from the `MIG …` lines of `nvidia-smi -L`"
    )]
    NotMig {
        /// The input, as given.
        input: String,
    },
    /// A `MIG-<uuid>` whose UUID part is malformed.
    #[error(
        "{input:?} is not a MIG device UUID: {problem} (rule: `MIG-` then 32 hex digits grouped 8-4-4-4-12); copy it from the `MIG …` lines of `nvidia-smi -L`"
    )]
    MigBody {
        /// The input, as given.
        input: String,
        /// What is wrong with the UUID part.
        problem: String,
    },
    /// A malformed legacy `MIG-GPU-<uuid>/<gi>/<ci>` id.
    #[error(
        "{input:?} is not a legacy MIG id: {problem} (rule: legacy form MIG-GPU-<full GPU UUID>/<GPU instance>/<compute instance>); prefer the `MIG-<uuid>` form that `nvidia-smi -L` prints on drivers R470 and later"
    )]
    LegacyMig {
        /// The input, as given.
        input: String,
        /// What is wrong with it.
        problem: &'static str,
    },
}

/// Where in a UUID body the problem is; turned into a [`UuidError`] by the caller, which knows
/// the whole input.
enum BodyError {
    Empty,
    NotHex(char),
    Length(usize),
    DashLayout,
}

impl BodyError {
    fn into_mig_error(self, input: &str) -> UuidError {
        let problem = match self {
            Self::Empty => "nothing follows `MIG-`".to_owned(),
            Self::NotHex(found) => format!("{found:?} is not a hex digit"),
            Self::Length(1) => "it has 1 hex digit, a UUID has 32".to_owned(),
            Self::Length(digits) => format!("it has {digits} hex digits, a UUID has 32"),
            Self::DashLayout => "its dashes do not group the digits 8-4-4-4-12".to_owned(),
        };
        UuidError::MigBody {
            input: input.to_owned(),
            problem,
        }
    }

    fn into_uuid_error(self, input: &str) -> UuidError {
        let input = input.to_owned();
        match self {
            Self::Empty => UuidError::Empty { input },
            Self::NotHex(found) => UuidError::NotHex { input, found },
            Self::Length(digits) => UuidError::Length { input, digits },
            Self::DashLayout => UuidError::DashLayout { input },
        }
    }
}

/// Parses 32 hex digits, either undashed or grouped 8-4-4-4-12, in any case. One pass; the
/// errors, in order of precedence: empty, a character that is neither a hex digit nor a dash,
/// not 32 digits, dashes elsewhere than at 8, 13, 18 and 23.
fn parse_body(body: &str) -> Result<[u8; 16], BodyError> {
    parse_body_fast(body.as_bytes()).map_or_else(|| parse_body_loop(body), Ok)
}

/// [`parse_body`] for every input, with its errors.
fn parse_body_loop(body: &str) -> Result<[u8; 16], BodyError> {
    if body.is_empty() {
        return Err(BodyError::Empty);
    }
    let mut bytes = [0_u8; 16];
    let mut digits = 0_usize;
    let mut dashes = 0_usize;
    let mut dashes_in_place = true;
    for (at, b) in body.bytes().enumerate() {
        if let Some(value) = hex_value(b) {
            if let Some(byte) = bytes.get_mut(digits / 2) {
                *byte = (*byte << 4) | value;
            }
            digits += 1;
        } else if b == b'-' {
            dashes_in_place &= [8, 13, 18, 23].get(dashes) == Some(&at);
            dashes += 1;
        } else {
            // Every byte before `at` is ASCII, so `at` starts the offending character.
            let found = body.get(at..).and_then(|rest| rest.chars().next());
            return Err(BodyError::NotHex(
                found.unwrap_or(char::REPLACEMENT_CHARACTER),
            ));
        }
    }
    if digits != 32 {
        return Err(BodyError::Length(digits));
    }
    if !(dashes == 0 || (dashes == 4 && dashes_in_place)) {
        return Err(BodyError::DashLayout);
    }
    Ok(bytes)
}

/// Where each byte's two hex digits start in the dashed 8-4-4-4-12 form.
const DASHED_AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/// [`parse_body`] for the two layouts it accepts, undashed or dashed exactly 8-4-4-4-12:
/// `None` for anything else, which the general loop then reads (and explains).
fn parse_body_fast(body: &[u8]) -> Option<[u8; 16]> {
    const PLAIN_AT: [usize; 16] = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30];
    let starts = match body.len() {
        32 => PLAIN_AT,
        36 if [8, 13, 18, 23]
            .iter()
            .all(|at| body.get(*at) == Some(&b'-')) =>
        {
            DASHED_AT
        }
        _ => return None,
    };
    let value = |b: u8| hex_value(b).unwrap_or(0xff);
    let mut bytes = [0_u8; 16];
    // A non-digit sets high bits in `invalid`: one test at the end instead of one per digit.
    let mut invalid = 0;
    for (byte, at) in bytes.iter_mut().zip(starts) {
        let &[high, low] = body.get(at..at + 2)? else {
            return None;
        };
        let (high, low) = (value(high), value(low));
        invalid |= high | low;
        *byte = (high << 4) | low;
    }
    (invalid < 16).then_some(bytes)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Strips `prefix` (ASCII, any case) from the start of `s`.
fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| s.get(prefix.len()..))
        .flatten()
}

/// The hex digit of the low nibble of `n`, from `digits` (lower- or upper-case).
fn hex_digit(digits: &[u8; 16], n: u8) -> u8 {
    digits.get(usize::from(n & 0xf)).copied().unwrap_or(b'0')
}

/// The 16 bytes as lower-case 8-4-4-4-12 (36 ASCII bytes), formatted without `fmt`.
pub(crate) fn dashed(bytes: &[u8; 16]) -> [u8; 36] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [b'-'; 36];
    for (byte, at) in bytes.iter().zip(DASHED_AT) {
        if let Some([high, low]) = out.get_mut(at..at + 2) {
            *high = hex_digit(DIGITS, byte >> 4);
            *low = hex_digit(DIGITS, *byte);
        }
    }
    out
}

/// Writes 16 bytes as lower-case 8-4-4-4-12.
fn write_dashed(f: &mut fmt::Formatter<'_>, bytes: &[u8; 16]) -> fmt::Result {
    let text = dashed(bytes);
    f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
}

/// A physical GPU's UUID, normalised: 16 bytes, shown as `GPU-` + lower-case 8-4-4-4-12.
///
/// [`GpuUuid::parse`] accepts every style in which the same UUID reaches us:
/// - `nvidia-smi` / NVML / `CUDA_VISIBLE_DEVICES`: `GPU-8932f937-d72c-4106-c12f-20bd9faed9f6`;
/// - PyTorch's `get_device_properties(i).uuid`: the same without `GPU-`;
/// - the seed's comparison token: 32 hex digits, no dashes, upper case;
///
/// in any letter case (the `GPU-` prefix too), with surrounding whitespace ignored. Dashes
/// must either be absent or group the digits 8-4-4-4-12. Abbreviated prefixes (`GPU-8932`)
/// are not UUIDs: they are `CUDA_VISIBLE_DEVICES` entries, see [`crate::VisibleDevices`].
///
/// Equality, ordering and hashing are on the 16 bytes, so every accepted style compares equal.
/// Serde goes through [`Display`](fmt::Display) and [`GpuUuid::parse`].
///
/// ```
/// use gpu_uuid::GpuUuid;
/// let smi: GpuUuid = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6".parse()?;
/// let torch = GpuUuid::parse("8932F937-D72C-4106-C12F-20BD9FAED9F6")?;
/// let token = GpuUuid::parse("8932F937D72C4106C12F20BD9FAED9F6")?;
/// assert_eq!(smi, torch);
/// assert_eq!(smi, token);
/// assert_eq!(smi.to_string(), "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
/// assert_eq!(smi.canonical_token(), "8932F937D72C4106C12F20BD9FAED9F6");
/// # Ok::<(), gpu_uuid::UuidError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuUuid([u8; 16]);

impl GpuUuid {
    /// Parses a full GPU UUID in any of the accepted styles (see the type's docs).
    ///
    /// # Errors
    /// [`UuidError`] naming the rule the input breaks: empty, a non-hex character, not 32
    /// digits, dashes not 8-4-4-4-12, or a `MIG-` UUID.
    pub fn parse(input: &str) -> Result<Self, UuidError> {
        // As `nvidia-smi` prints it: no whitespace to strip (it starts with `G` and the fast
        // path ends on a hex digit), not `MIG-`.
        if let Some(bytes) = input
            .strip_prefix("GPU-")
            .and_then(|body| parse_body_fast(body.as_bytes()))
        {
            return Ok(Self(bytes));
        }
        let trimmed = python_strip(input);
        if strip_prefix_ignore_case(trimmed, "MIG-").is_some() {
            return Err(UuidError::MigNotGpu {
                input: input.to_owned(),
            });
        }
        let body = strip_prefix_ignore_case(trimmed, "GPU-").unwrap_or(trimmed);
        parse_body(body)
            .map(Self)
            .map_err(|e| e.into_uuid_error(input))
    }

    /// The UUID from the 16 raw bytes that `cuDeviceGetUuid_v2` returns.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The 16 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The UUID as [`Display`](fmt::Display) writes it (`GPU-` + lower-case 8-4-4-4-12), as
    /// bytes on the stack.
    pub(crate) fn printed(&self) -> [u8; 40] {
        let mut out = *b"GPU-000000000000000000000000000000000000";
        if let Some(tail) = out.get_mut(4..) {
            tail.copy_from_slice(&dashed(&self.0));
        }
        out
    }

    /// Appends the UUID as [`Display`](fmt::Display) writes it (`GPU-` + lower-case
    /// 8-4-4-4-12) to `out`, without going through `fmt`: for callers that build many messages.
    ///
    /// ```
    /// # use gpu_uuid::GpuUuid;
    /// let uuid = GpuUuid::parse("8932F937D72C4106C12F20BD9FAED9F6")?;
    /// let mut text = String::from("CUDA_VISIBLE_DEVICES=");
    /// uuid.push_to(&mut text);
    /// assert_eq!(text, "CUDA_VISIBLE_DEVICES=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6");
    /// # Ok::<(), gpu_uuid::UuidError>(())
    /// ```
    pub fn push_to(&self, out: &mut String) {
        let printed = self.printed();
        // Always ASCII: `GPU-`, hex digits and dashes.
        if let Ok(text) = std::str::from_utf8(&printed) {
            out.push_str(text);
        }
    }

    /// The seed's comparison token: 32 upper-case hex digits, no `GPU-`, no dashes. Equal to
    /// [`canonicalize_gpu_uuid`] of every accepted spelling of this UUID.
    ///
    /// ```
    /// # use gpu_uuid::{GpuUuid, canonicalize_gpu_uuid};
    /// let text = "GPU-c08d91cb-e324-655c-71ba-7570956445bc";
    /// assert_eq!(GpuUuid::parse(text)?.canonical_token(), canonicalize_gpu_uuid(text));
    /// # Ok::<(), gpu_uuid::UuidError>(())
    /// ```
    pub fn canonical_token(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
        let mut token = [0; 32];
        for (pair, byte) in token.chunks_exact_mut(2).zip(&self.0) {
            for (slot, nibble) in pair.iter_mut().zip([byte >> 4, *byte]) {
                *slot = hex_digit(DIGITS, nibble);
            }
        }
        // Hex digits are ASCII: never the empty fallback.
        std::str::from_utf8(&token)
            .map(str::to_owned)
            .unwrap_or_default()
    }
}

impl fmt::Display for GpuUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GPU-")?;
        write_dashed(f, &self.0)
    }
}

impl fmt::Debug for GpuUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GpuUuid(\"{self}\")")
    }
}

impl FromStr for GpuUuid {
    type Err = UuidError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for GpuUuid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GpuUuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A MIG device (compute instance) identifier.
///
/// Two forms exist (NVIDIA MIG user guide, "Device names"):
/// - [`MigUuid::Uuid`]: `MIG-<uuid>`, drivers R470 (470.42.01) and later;
/// - [`MigUuid::Legacy`]: `MIG-GPU-<gpu uuid>/<GPU instance>/<compute instance>`, drivers
///   R450/R460. The order is GPU instance, then compute instance.
///
/// Parsing accepts any letter case and surrounding whitespace; [`Display`](fmt::Display)
/// writes lower-case hex with upper-case `MIG-`/`GPU-`, as `nvidia-smi -L` does. The legacy
/// form needs the full GPU UUID: abbreviated ones (`MIG-GPU-3eb79704/13/0`, which some tools
/// accept) are refused, because nothing here can check what they abbreviate.
///
/// ```
/// use gpu_uuid::{GpuUuid, MigUuid};
/// let new: MigUuid = "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".parse()?;
/// assert!(matches!(new, MigUuid::Uuid(_)));
/// let old = MigUuid::parse("mig-gpu-5D5BA0D6-D33D-2B2C-524D-9E3D8D2B8A77/1/0")?;
/// assert_eq!(old.to_string(), "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0");
/// assert_eq!(old.parent_gpu(), Some(GpuUuid::parse("GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77")?));
/// # Ok::<(), gpu_uuid::UuidError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MigUuid {
    /// `MIG-<uuid>`: the 16 bytes `cuDeviceGetUuid_v2` / NVML report for the compute instance.
    Uuid([u8; 16]),
    /// `MIG-GPU-<gpu uuid>/<gi>/<ci>`.
    Legacy {
        /// The parent GPU.
        gpu: GpuUuid,
        /// The GPU instance id.
        gpu_instance: u32,
        /// The compute instance id.
        compute_instance: u32,
    },
}

impl MigUuid {
    /// Parses `MIG-<uuid>` or `MIG-GPU-<uuid>/<gi>/<ci>`.
    ///
    /// # Errors
    /// [`UuidError::NotMig`] without the `MIG-` prefix, [`UuidError::LegacyMig`] for a
    /// malformed legacy id, or the UUID rule the body breaks.
    pub fn parse(input: &str) -> Result<Self, UuidError> {
        let trimmed = python_strip(input);
        let Some(rest) = strip_prefix_ignore_case(trimmed, "MIG-") else {
            return Err(UuidError::NotMig {
                input: input.to_owned(),
            });
        };
        if strip_prefix_ignore_case(rest, "GPU-").is_none() {
            return parse_body(rest)
                .map(Self::Uuid)
                .map_err(|e| e.into_mig_error(input));
        }
        let legacy = |problem| UuidError::LegacyMig {
            input: input.to_owned(),
            problem,
        };
        let mut parts = rest.split('/');
        let (Some(gpu), Some(gi), Some(ci), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(legacy(
                "it needs exactly two `/`-separated instance ids after the GPU UUID",
            ));
        };
        let gpu = GpuUuid::parse(gpu)
            .map_err(|_| legacy("the part before the first `/` is not a full GPU UUID"))?;
        let id = |text: &str| {
            (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()))
                .then(|| text.parse::<u32>().ok())
                .flatten()
        };
        let gpu_instance = id(gi)
            .ok_or_else(|| legacy("the GPU instance id is not a decimal number below 2^32"))?;
        let compute_instance = id(ci)
            .ok_or_else(|| legacy("the compute instance id is not a decimal number below 2^32"))?;
        Ok(Self::Legacy {
            gpu,
            gpu_instance,
            compute_instance,
        })
    }

    /// The physical GPU, when the id names it (legacy form only).
    pub fn parent_gpu(&self) -> Option<GpuUuid> {
        match self {
            Self::Uuid(_) => None,
            Self::Legacy { gpu, .. } => Some(*gpu),
        }
    }
}

impl fmt::Display for MigUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Uuid(bytes) => {
                f.write_str("MIG-")?;
                write_dashed(f, bytes)
            }
            Self::Legacy {
                gpu,
                gpu_instance,
                compute_instance,
            } => {
                write!(f, "MIG-{gpu}/{gpu_instance}/{compute_instance}")
            }
        }
    }
}

impl FromStr for MigUuid {
    type Err = UuidError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for MigUuid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MigUuid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path reads only what the loop accepts, and reads it the same.
    #[test]
    fn fast_body_agrees_with_the_loop() {
        let valid = [
            "8932f937-d72c-4106-c12f-20bd9faed9f6",
            "8932F937D72C4106C12F20BD9FAED9F6",
        ];
        let mut bodies = Vec::new();
        for body in valid {
            for at in 0..body.len() {
                for c in ['-', '0', 'f', 'F', 'g', ' ', 'é'] {
                    let mut changed: Vec<char> = body.chars().collect();
                    if let Some(slot) = changed.get_mut(at) {
                        *slot = c;
                    }
                    bodies.push(changed.into_iter().collect::<String>());
                }
            }
            bodies.push(body.to_owned());
            bodies.push(format!("{body}-"));
            bodies.push(body.replacen('-', "", 1));
        }
        let mut fast = 0;
        for body in &bodies {
            if let Some(bytes) = parse_body_fast(body.as_bytes()) {
                assert!(
                    matches!(parse_body_loop(body), Ok(b) if b == bytes),
                    "{body:?}"
                );
                fast += 1;
            } else {
                assert!(parse_body_loop(body).is_err(), "{body:?}");
            }
        }
        assert!(fast > 10, "only {fast} bodies took the fast path");
    }
}
