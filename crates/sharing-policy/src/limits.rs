//! What the processes will be served with (issue 20 part 4): the daemon's default active
//! thread percentage, its default pinned-memory limit per device, and a server's state, as
//! the daemon prints them (docs/mps-daemon.md §12; gpu-truth §4–5).
//!
//! Every answer is parsed strictly; the raw text is kept where the evidence records it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::daemon::{self, DaemonStatus};
use crate::{HostFacts, Pid, QueryOutcome, QueryRecord, ReadOnlyCommand, gpu, served};

/// A percentage as the daemon prints one (`%.1f`: `100.0`, `33.0`, `12.5`), kept exactly in
/// tenths. In JSON it is a number (`33.3`).
///
/// ```
/// use sharing_policy::Percentage;
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
/// use sharing_policy::MemSize;
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
pub(crate) fn default_percentage(record: Option<&QueryRecord>) -> Option<Percentage> {
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

/// The most GPU ordinals a settings session asks about (more than any host has GPUs).
const MAX_ORDINALS: usize = 64;

/// The most servers a settings session asks about (a daemon runs one at a time).
const MAX_SERVERS: usize = 16;

/// What the probe asks once a live daemon answered (issue 20), or `None` when there is nothing
/// to ask: the state of each server the daemon listed, then the default pinned-memory limit of
/// each GPU ordinal of the host table (the daemon numbers devices in its own CUDA view, which
/// is one of these; the validator picks the validated GPU's), in a [`crate::separated`]
/// session. `mps-host` calls this, so the decision of what to ask stays here.
pub fn settings_commands(facts: &HostFacts) -> Option<Vec<ReadOnlyCommand>> {
    let directory = facts.env.pipe_directory();
    let record = facts.daemon_query.as_ref()?;
    let servers = served::server_pids(Some(record), directory.as_bytes());
    if !matches!(
        daemon::status(Some(record), directory.as_bytes()),
        DaemonStatus::Live { .. }
    ) {
        return None;
    }
    let mut asked: Vec<ReadOnlyCommand> = servers
        .into_iter()
        .filter_map(Pid::new)
        .take(MAX_SERVERS)
        .map(ReadOnlyCommand::GetServerStatus)
        .collect();
    let text = gpu::host_text(facts.gpu_query.as_ref());
    if let Ok(table) = gpu::parse_table(&text) {
        let mut ordinals: Vec<u32> = table.rows().iter().map(|row| row.index).collect();
        ordinals.sort_unstable();
        ordinals.dedup();
        asked.extend(
            ordinals
                .into_iter()
                .take(MAX_ORDINALS)
                .map(ReadOnlyCommand::GetDefaultDevicePinnedMemLimit),
        );
    }
    (!asked.is_empty()).then(|| crate::separated(&asked))
}

/// Each asked command of a recorded settings session with its answer lines, or why the record
/// cannot be read as one: it must be this probe's (the control front-end, no arguments, a
/// [`crate::separated`] session of read-only commands on stdin, the pipe directory, retried
/// only after transient outcomes), exit 0 with nothing on stderr, and its stdout must split
/// into one answer per asked command between `%.1f` liveness lines.
pub(crate) fn session_answers<'a>(
    record: &'a QueryRecord,
    pipe_directory: &[u8],
) -> Result<Vec<(ReadOnlyCommand, Vec<&'a str>)>, String> {
    let asked = asked_commands(record, pipe_directory)?;
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        stderr,
        ..
    } = &record.outcome
    else {
        let how = daemon::not_answered(crate::Vocabulary::Cli, record);
        return Err(match how {
            Some(DaemonStatus::TimedOut { timeout_ms }) => {
                format!("the settings query did not answer within {timeout_ms} ms")
            }
            Some(DaemonStatus::NoAnswer(detail)) => detail,
            Some(DaemonStatus::SpawnFailed(error)) => {
                format!("the settings query could not be started: {error}")
            }
            _ => "the settings query did not answer".to_owned(),
        });
    };
    if stdout.truncated || stdout.non_utf8 || stderr.truncated || !stderr.text.is_empty() {
        return Err(format!(
            "the settings query answered with {}, {}",
            daemon::describe_text("stdout", stdout),
            daemon::describe_text("stderr", stderr)
        ));
    }
    split_answers(&asked, &stdout.text).ok_or_else(|| {
        format!(
            "the settings query's answer is not one answer per question between liveness lines: {}",
            daemon::describe_text("stdout", stdout)
        )
    })
}

/// [`session_answers`] for callers outside the validator (the real-daemon recordings' tests,
/// `attest`): each asked command of a recorded settings session with its answer lines, or why
/// the record is not a readable session. The answers are not interpreted.
///
/// # Errors
/// The record is not this probe's settings session, did not exit 0 with an empty stderr, or
/// its stdout does not split into one answer per asked command between `%.1f` lines.
pub fn settings_answers(
    record: &QueryRecord,
    pipe_directory: &crate::OsText,
) -> Result<Vec<(ReadOnlyCommand, Vec<String>)>, String> {
    session_answers(record, pipe_directory.as_bytes()).map(|answers| {
        answers
            .into_iter()
            .map(|(command, lines)| (command, lines.into_iter().map(str::to_owned).collect()))
            .collect()
    })
}

/// The commands a settings session asked, between its liveness commands.
fn asked_commands(
    record: &QueryRecord,
    pipe_directory: &[u8],
) -> Result<Vec<ReadOnlyCommand>, String> {
    if !daemon::is_control_program(&record.program) || !record.args.is_empty() {
        return Err("the settings query is not the control front-end without arguments".to_owned());
    }
    if record
        .env
        .get("CUDA_MPS_PIPE_DIRECTORY")
        .is_some_and(|dir| dir.as_bytes() != pipe_directory)
    {
        return Err("the settings query used another pipe directory".to_owned());
    }
    daemon::check_retries(record)?;
    let body = record.stdin.strip_suffix('\n').unwrap_or_default();
    let session: Option<Vec<ReadOnlyCommand>> =
        body.split('\n').map(ReadOnlyCommand::parse_line).collect();
    let session =
        session.ok_or("the settings query sent a line that is not a read-only command")?;
    let asked: Vec<ReadOnlyCommand> = session.iter().skip(1).step_by(2).copied().collect();
    if asked.is_empty() || crate::separated(&asked) != session {
        return Err("the settings query's stdin is not a separated session".to_owned());
    }
    Ok(asked)
}

/// Splits `stdout` into one answer per asked command, each after a `%.1f` liveness line, with
/// one more liveness line last. An answer is every line up to the next `%.1f` line, except
/// `get_active_thread_percentage <pid>`'s, which is itself `%.1f` (or `Server <pid> not
/// found`): exactly one line. No other asked command ever prints a `%.1f` line.
fn split_answers<'a>(
    asked: &[ReadOnlyCommand],
    stdout: &'a str,
) -> Option<Vec<(ReadOnlyCommand, Vec<&'a str>)>> {
    let body = stdout.strip_suffix('\n')?;
    let mut lines = body.split('\n').peekable();
    let separator = |line: Option<&str>| line.and_then(Percentage::parse_daemon).is_some();
    let mut answers = Vec::with_capacity(asked.len());
    for command in asked {
        if !separator(lines.next()) {
            return None;
        }
        let mut answer = Vec::new();
        if matches!(command, ReadOnlyCommand::GetActiveThreadPercentage(_)) {
            answer.push(lines.next()?);
        } else {
            while let Some(line) = lines.next_if(|line| Percentage::parse_daemon(line).is_none()) {
                answer.push(line);
            }
        }
        answers.push((*command, answer));
    }
    // The last liveness line, and nothing after it: otherwise the answer was cut short or is
    // not this session's.
    (separator(lines.next()) && lines.next().is_none()).then_some(answers)
}

/// An MPS server's state as `get_server_status` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerState {
    Active,
    Initializing,
    Fault,
}

impl ServerState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Initializing => "INITIALIZING",
            Self::Fault => "FAULT",
        }
    }
}

/// One answer of the settings session: known, or why not.
pub(crate) type Read<T> = Result<T, String>;

/// The state `lines` (one answer of `get_server_status <pid>`) give.
pub(crate) fn server_state(pid: Pid, lines: &[&str]) -> Read<ServerState> {
    match lines {
        ["ACTIVE"] => Ok(ServerState::Active),
        ["INITIALIZING"] => Ok(ServerState::Initializing),
        ["FAULT"] => Ok(ServerState::Fault),
        [line] if line.starts_with("Unknown command") => {
            Err("the daemon has no get_server_status (drivers before 550 do not)".to_owned())
        }
        [line] if *line == format!("Server {pid} not found") => {
            Err(format!("server {pid} was gone when its state was asked"))
        }
        other => Err(format!(
            "get_server_status {pid} answered {}",
            crate::text::repr(&other.join("\n"))
        )),
    }
}

/// The limit `lines` (one answer of `get_default_device_pinned_mem_limit`) give: `None` when
/// the daemon printed nothing (no limit set for that device identifier).
pub(crate) fn pinned_limit(device: u32, lines: &[&str]) -> Read<Option<(MemSize, String)>> {
    match lines {
        [] => Ok(None),
        [line] => MemSize::parse_daemon(line)
            .map(|size| Some((size, (*line).to_owned())))
            .ok_or_else(|| {
                if line.starts_with("Unknown command") {
                    "the daemon has no get_default_device_pinned_mem_limit (drivers before 535 do not)".to_owned()
                } else {
                    format!(
                        "get_default_device_pinned_mem_limit {device} answered {}",
                        crate::text::repr(line)
                    )
                }
            }),
        other => Err(format!(
            "get_default_device_pinned_mem_limit {device} answered {}",
            crate::text::repr(&other.join("\n"))
        )),
    }
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
