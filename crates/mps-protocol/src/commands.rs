//! The control commands a probe may send. Only read-only commands exist in this type, so a
//! probe cannot express `quit`, `start_server`, `shutdown_server`, `terminate_client` or `set_*`.
//! The one command with an argument, `get_client_list`, takes a [`Pid`]: a positive decimal
//! integer, so nothing but digits can follow it on the line the daemon reads.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The program of the host GPU query.
pub const GPU_QUERY_PROGRAM: &str = "nvidia-smi";

/// The control daemon's front-end, run with no arguments and commands on standard input.
pub const DAEMON_QUERY_PROGRAM: &str = "nvidia-cuda-mps-control";

/// A process ID as the control daemon may be sent one: positive, at most `i32::MAX` (Linux's
/// `pid_t`). It can only be built from a number or from ASCII digits, so its text is digits.
///
/// ```
/// use mps_protocol::Pid;
///
/// assert_eq!(Pid::parse("4428").map(Pid::get), Some(4428));
/// for bad in ["", "0", "-1", "+7", " 7", "7\n", "7 quit", "0x10", "2147483648", "١"] {
///     assert_eq!(Pid::parse(bad), None, "{bad:?}");
/// }
/// assert_eq!(Pid::new(0), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(try_from = "i64", into = "i64")]
pub struct Pid(u32);

impl Pid {
    /// The largest PID (`i32::MAX`).
    pub const MAX: i64 = 2_147_483_647;

    /// `value` when it is a PID: `1..=i32::MAX`.
    pub fn new(value: i64) -> Option<Self> {
        if (1..=Self::MAX).contains(&value) {
            u32::try_from(value).ok().map(Self)
        } else {
            None
        }
    }

    /// `text` when it is ASCII decimal digits only (no sign, no spaces) naming a PID.
    pub fn parse(text: &str) -> Option<Self> {
        if text.is_empty() || text.len() > 10 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse::<i64>().ok().and_then(Self::new)
    }

    /// The PID as a number.
    pub fn get(self) -> i64 {
        i64::from(self.0)
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl TryFrom<i64> for Pid {
    type Error = String;

    fn try_from(value: i64) -> Result<Self, Self::Error> {
        Self::new(value).ok_or_else(|| format!("{value} is not a PID (1 to {})", Self::MAX))
    }
}

impl From<Pid> for i64 {
    fn from(pid: Pid) -> Self {
        pid.get()
    }
}

/// A read-only `nvidia-cuda-mps-control` command (MPS v2 stdin protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOnlyCommand {
    /// Always answers on a live daemon (`100.0`); the liveness check (NVIDIA's device plugin uses it too).
    GetDefaultActiveThreadPercentage,
    /// One MPS server PID per line; empty on a healthy idle daemon.
    GetServerList,
    /// The default client priority (535+).
    GetDefaultClientPriority,
    /// Clients per device; free text.
    GetDeviceClientList,
    /// The client PIDs of one server (`Server <pid> not found` when there is no such server).
    GetClientList(Pid),
    /// One server's state, `ACTIVE`, `INITIALIZING` or `FAULT` (550+; `Unknown command` before).
    GetServerStatus(Pid),
    /// One server's active-thread percentage (`%.1f`).
    GetActiveThreadPercentage(Pid),
    /// The daemon's default pinned-memory limit for a device ordinal (`10G`, `512M`; nothing
    /// when no limit is set; 535+).
    GetDefaultDevicePinnedMemLimit(u32),
    /// One server's pinned-memory limit for a device ordinal (535+).
    GetDevicePinnedMemLimit(Pid, u32),
}

impl ReadOnlyCommand {
    /// The command's name: its whole line for a command without an argument.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GetDefaultActiveThreadPercentage => "get_default_active_thread_percentage",
            Self::GetServerList => "get_server_list",
            Self::GetDefaultClientPriority => "get_default_client_priority",
            Self::GetDeviceClientList => "get_device_client_list",
            Self::GetClientList(_) => "get_client_list",
            Self::GetServerStatus(_) => "get_server_status",
            Self::GetActiveThreadPercentage(_) => "get_active_thread_percentage",
            Self::GetDefaultDevicePinnedMemLimit(_) => "get_default_device_pinned_mem_limit",
            Self::GetDevicePinnedMemLimit(..) => "get_device_pinned_mem_limit",
        }
    }

    /// The command line as the daemon reads it (without the newline): the name, then the PID
    /// for `get_client_list`.
    ///
    /// ```
    /// use mps_protocol::{Pid, ReadOnlyCommand};
    ///
    /// let pid = Pid::new(4428).unwrap();
    /// assert_eq!(ReadOnlyCommand::GetClientList(pid).line(), "get_client_list 4428");
    /// assert_eq!(ReadOnlyCommand::GetServerList.line(), "get_server_list");
    /// ```
    pub fn line(self) -> String {
        // Only a `Pid` (digits) and a `u32` (digits) are ever written after the name.
        match self {
            Self::GetClientList(pid)
            | Self::GetServerStatus(pid)
            | Self::GetActiveThreadPercentage(pid) => format!("{} {pid}", self.as_str()),
            Self::GetDefaultDevicePinnedMemLimit(device) => format!("{} {device}", self.as_str()),
            Self::GetDevicePinnedMemLimit(pid, device) => {
                format!("{} {pid} {device}", self.as_str())
            }
            other => other.as_str().to_owned(),
        }
    }

    /// What follows this command's [`Self::line`] and its newline at the start of `text`,
    /// compared without building the line; `None` when `text` does not start with them.
    fn strip_line(self, text: &str) -> Option<&str> {
        let rest = text.strip_prefix(self.as_str())?;
        let rest = match self {
            Self::GetClientList(pid)
            | Self::GetServerStatus(pid)
            | Self::GetActiveThreadPercentage(pid) => strip_number(rest, pid.get())?,
            Self::GetDefaultDevicePinnedMemLimit(device) => strip_number(rest, i64::from(device))?,
            Self::GetDevicePinnedMemLimit(pid, device) => {
                strip_number(strip_number(rest, pid.get())?, i64::from(device))?
            }
            _ => rest,
        };
        rest.strip_prefix('\n')
    }

    /// The command whose [`Self::line`] is `line`, exactly (one space between words, no
    /// sign, no leading zero): how the validator reads back what a recorded query sent.
    ///
    /// ```
    /// use mps_protocol::{Pid, ReadOnlyCommand};
    ///
    /// let pid = Pid::new(4428).unwrap();
    /// assert_eq!(
    ///     ReadOnlyCommand::parse_line("get_device_pinned_mem_limit 4428 0"),
    ///     Some(ReadOnlyCommand::GetDevicePinnedMemLimit(pid, 0))
    /// );
    /// for bad in ["quit", "get_server_status", "get_server_status 07", "get_server_status  7",
    ///             "get_default_device_pinned_mem_limit GPU-1", "set_default_active_thread_percentage 1"] {
    ///     assert_eq!(ReadOnlyCommand::parse_line(bad), None, "{bad:?}");
    /// }
    /// ```
    pub fn parse_line(line: &str) -> Option<Self> {
        let mut words = line.split(' ');
        let name = words.next()?;
        let args: Vec<&str> = words.collect();
        let pid = |text: &str| Pid::parse(text).filter(|pid| pid.to_string() == text);
        let device = |text: &str| {
            text.parse::<u32>()
                .ok()
                .filter(|device| device.to_string() == text)
        };
        let command = match (name, args.as_slice()) {
            (_, []) => Self::ALL.into_iter().find(|c| c.as_str() == name)?,
            ("get_client_list", [p]) => Self::GetClientList(pid(p)?),
            ("get_server_status", [p]) => Self::GetServerStatus(pid(p)?),
            ("get_active_thread_percentage", [p]) => Self::GetActiveThreadPercentage(pid(p)?),
            ("get_default_device_pinned_mem_limit", [d]) => {
                Self::GetDefaultDevicePinnedMemLimit(device(d)?)
            }
            ("get_device_pinned_mem_limit", [p, d]) => {
                Self::GetDevicePinnedMemLimit(pid(p)?, device(d)?)
            }
            _ => return None,
        };
        Some(command)
    }

    /// Every command of this type that takes no argument.
    pub const ALL: [Self; 4] = [
        Self::GetDefaultActiveThreadPercentage,
        Self::GetServerList,
        Self::GetDefaultClientPriority,
        Self::GetDeviceClientList,
    ];

    /// The name of every command of this type, those with an argument included.
    pub const NAMES: [&'static str; 9] = [
        "get_default_active_thread_percentage",
        "get_server_list",
        "get_default_client_priority",
        "get_device_client_list",
        "get_client_list",
        "get_server_status",
        "get_active_thread_percentage",
        "get_default_device_pinned_mem_limit",
        "get_device_pinned_mem_limit",
    ];
}

/// The daemon probe, in order: liveness first (one answer line), then the server list
/// (zero or more PID lines), so the validator can split the combined output unambiguously.
pub const DAEMON_PROBE: [ReadOnlyCommand; 2] = [
    ReadOnlyCommand::GetDefaultActiveThreadPercentage,
    ReadOnlyCommand::GetServerList,
];

/// The client query of `attest` for one server: liveness first (one answer line, so an empty
/// client list is told apart from a front-end that printed nothing), then its client list.
pub fn client_query(server: Pid) -> [ReadOnlyCommand; 2] {
    [
        ReadOnlyCommand::GetDefaultActiveThreadPercentage,
        ReadOnlyCommand::GetClientList(server),
    ]
}

/// A settings session: each command of `asked` with the liveness command before it
/// and one after the last. The liveness answer is always one `%.1f` line, which no asked
/// command prints except `get_active_thread_percentage <pid>`, whose answer is exactly one
/// line; so the answers split unambiguously, an empty answer (no pinned limit) included, and an
/// answer cut short loses its last liveness line and is refused.
///
/// ```
/// use mps_protocol::{Pid, ReadOnlyCommand, probe_stdin, separated};
///
/// let server = Pid::new(4428).unwrap();
/// let session = separated(&[
///     ReadOnlyCommand::GetServerStatus(server),
///     ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(0),
/// ]);
/// assert_eq!(
///     probe_stdin(&session),
///     "get_default_active_thread_percentage\nget_server_status 4428\n\
///      get_default_active_thread_percentage\nget_default_device_pinned_mem_limit 0\n\
///      get_default_active_thread_percentage\n"
/// );
/// ```
pub fn separated(asked: &[ReadOnlyCommand]) -> Vec<ReadOnlyCommand> {
    let mut session = Vec::with_capacity(asked.len() * 2 + 1);
    for command in asked {
        session.push(ReadOnlyCommand::GetDefaultActiveThreadPercentage);
        session.push(*command);
    }
    session.push(ReadOnlyCommand::GetDefaultActiveThreadPercentage);
    session
}

/// What follows ` <number>` at the start of `text`, the number written as [`ReadOnlyCommand::line`]
/// writes it (decimal digits, no sign, no leading zero).
fn strip_number(text: &str, number: i64) -> Option<&str> {
    let text = text.strip_prefix(' ')?;
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (written, rest) = text.split_at(digits);
    let canonical = written == "0" || !written.starts_with('0');
    (canonical && written.parse::<i64>().ok() == Some(number)).then_some(rest)
}

/// Whether `stdin` is exactly [`probe_stdin`]`(commands)`, compared without building it: the
/// validator asks this of a recorded session several times per verdict.
///
/// ```
/// use mps_protocol::{Pid, ReadOnlyCommand, is_stdin_of, probe_stdin};
///
/// let asked = [ReadOnlyCommand::GetServerList, ReadOnlyCommand::GetClientList(Pid::new(7).unwrap())];
/// assert!(is_stdin_of(&probe_stdin(&asked), &asked));
/// assert!(!is_stdin_of("get_server_list\nget_client_list 07\n", &asked));
/// assert!(!is_stdin_of("get_server_list\nget_client_list 7", &asked));
/// ```
pub fn is_stdin_of(stdin: &str, commands: &[ReadOnlyCommand]) -> bool {
    let mut rest = stdin;
    for command in commands {
        match command.strip_line(rest) {
            Some(after) => rest = after,
            None => return false,
        }
    }
    rest.is_empty()
}

/// The standard input of a probe: each command on its own line.
pub fn probe_stdin(commands: &[ReadOnlyCommand]) -> String {
    let mut stdin = String::new();
    for command in commands {
        stdin.push_str(&command.line());
        stdin.push('\n');
    }
    stdin
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn command() -> impl Strategy<Value = ReadOnlyCommand> {
        let pid = (1_i64..=4_194_304).prop_map(|n| Pid::new(n).unwrap_or(Pid(1)));
        prop_oneof![
            Just(ReadOnlyCommand::GetDefaultActiveThreadPercentage),
            Just(ReadOnlyCommand::GetServerList),
            Just(ReadOnlyCommand::GetDeviceClientList),
            pid.clone().prop_map(ReadOnlyCommand::GetClientList),
            pid.clone().prop_map(ReadOnlyCommand::GetServerStatus),
            (0_u32..20).prop_map(ReadOnlyCommand::GetDefaultDevicePinnedMemLimit),
            (pid, 0_u32..20)
                .prop_map(|(pid, device)| ReadOnlyCommand::GetDevicePinnedMemLimit(pid, device)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The comparison without building agrees with building and comparing, for the session
        /// itself, for another session, and for the session with one byte changed.
        #[test]
        fn is_stdin_of_is_equality_with_probe_stdin(
            asked in proptest::collection::vec(command(), 0..6),
            other in proptest::collection::vec(command(), 0..6),
            at in any::<prop::sample::Index>(),
            byte in prop::sample::select(vec![b'0', b'1', b'7', b' ', b'\n', b'_', b'x']),
        ) {
            let stdin = probe_stdin(&asked);
            prop_assert!(is_stdin_of(&stdin, &asked));
            prop_assert_eq!(is_stdin_of(&probe_stdin(&other), &asked), probe_stdin(&other) == stdin);
            let mut changed = stdin.clone().into_bytes();
            if !changed.is_empty() {
                let i = at.index(changed.len());
                changed[i] = byte;
            }
            let changed = String::from_utf8(changed).unwrap_or_default();
            prop_assert_eq!(is_stdin_of(&changed, &asked), changed == stdin);
            let longer = format!("{stdin}x");
            prop_assert!(!is_stdin_of(&longer, &asked));
        }
    }
}
