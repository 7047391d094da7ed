//! One strict parser per answer of a session ([`crate::split_answers`] gives each command's
//! lines): what the daemon said, as a status with no words. The validator words each status
//! (sharing-policy's `session.rs`).
//!
//! Shapes (docs/mps-daemon.md §2 and §5b): `get_server_status` prints `ACTIVE`,
//! `INITIALIZING` or `FAULT` (550+), `get_client_list` whitespace-separated PIDs, the
//! percentages `%.1f`, the limits `%lldG`/`%lldM` or nothing when none is set; a server that is
//! gone is `Server <pid> not found`, a command the daemon lacks `Unknown command "…"`.

use crate::{MemSize, Percentage, Pid};

/// The most client PIDs read from one `get_client_list` answer (the per-device client limit is
/// 48 on Volta and newer; more is not a known daemon's answer).
pub const MAX_LISTED_CLIENTS: usize = 64;

/// What one answer says: the value asked for, or which known refusal, or neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<T> {
    /// The value the command asks for.
    Value(T),
    /// `Server <pid> not found`: the server ended before it was asked.
    ServerNotFound,
    /// `Unknown command "…"`: this daemon has no such command.
    UnknownCommand,
    /// More client PIDs than [`MAX_LISTED_CLIENTS`] ([`client_pids`]).
    TooMany,
    /// Anything else: not this command's answer.
    Unexpected,
}

/// An MPS server's state as `get_server_status` prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// `ACTIVE`.
    Active,
    /// `INITIALIZING`: clients wait.
    Initializing,
    /// `FAULT`: every new client is refused.
    Fault,
}

impl ServerState {
    /// The state as the daemon prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Initializing => "INITIALIZING",
            Self::Fault => "FAULT",
        }
    }
}

fn not_found(pid: Pid, line: &str) -> bool {
    line.strip_prefix("Server ")
        .and_then(|rest| rest.strip_suffix(" not found"))
        .is_some_and(|named| named == pid.to_string())
}

/// `get_server_status <pid>`'s answer.
///
/// ```
/// use mps_protocol::{Answer, Pid, ServerState, server_state};
///
/// let pid = Pid::new(4428).unwrap();
/// assert_eq!(server_state(pid, &["FAULT"]), Answer::Value(ServerState::Fault));
/// assert_eq!(server_state(pid, &["Server 4428 not found"]), Answer::ServerNotFound);
/// assert_eq!(server_state(pid, &["Unknown command \"get_server_status\""]), Answer::UnknownCommand);
/// assert_eq!(server_state(pid, &["Active"]), Answer::Unexpected);
/// ```
pub fn server_state(pid: Pid, lines: &[&str]) -> Answer<ServerState> {
    match lines {
        ["ACTIVE"] => Answer::Value(ServerState::Active),
        ["INITIALIZING"] => Answer::Value(ServerState::Initializing),
        ["FAULT"] => Answer::Value(ServerState::Fault),
        [line] if line.starts_with("Unknown command") => Answer::UnknownCommand,
        [line] if not_found(pid, line) => Answer::ServerNotFound,
        _ => Answer::Unexpected,
    }
}

/// One entry of a `get_client_list` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListedClient {
    /// A client PID, in the daemon's PID namespace.
    Pid(Pid),
    /// `0`: a client the daemon cannot see. A daemon that cannot see a client's PID namespace
    /// logs it as PID 0 (`NEW CLIENT 0 from user …`); whether `get_client_list` then prints `0`
    /// is not established, so the word is read, and each reader decides what it means.
    Unseen,
}

/// `get_client_list <pid>`'s answer, word by word: PIDs (and `0`, [`ListedClient::Unseen`])
/// separated by whitespace or newlines, none when the server has no client. The one parser of
/// this answer: the probe's settings session reads it through [`client_pids`], attest through
/// sharing-policy's `parse_client_list`.
///
/// ```
/// use mps_protocol::{Answer, ListedClient, Pid, client_list};
///
/// let pid = Pid::new(4428).unwrap();
/// let client = |n| ListedClient::Pid(Pid::new(n).unwrap());
/// assert_eq!(client_list(pid, &["0", "4281"]), Answer::Value(vec![ListedClient::Unseen, client(4281)]));
/// assert_eq!(client_list(pid, &[]), Answer::Value(vec![]));
/// assert_eq!(client_list(pid, &["Server 4428 not found"]), Answer::ServerNotFound);
/// assert_eq!(client_list(pid, &["4267", "00"]), Answer::Unexpected);
/// ```
pub fn client_list(pid: Pid, lines: &[&str]) -> Answer<Vec<ListedClient>> {
    if let [line] = lines {
        if not_found(pid, line) {
            return Answer::ServerNotFound;
        }
        if line.starts_with("Unknown command") {
            return Answer::UnknownCommand;
        }
    }
    let words = lines.iter().flat_map(|line| line.split_ascii_whitespace());
    let listed: Option<Vec<ListedClient>> = words
        .map(|word| match word {
            "0" => Some(ListedClient::Unseen),
            _ => Pid::parse(word).map(ListedClient::Pid),
        })
        .collect();
    listed.map_or(Answer::Unexpected, Answer::Value)
}

/// [`client_list`] as the probe's settings session reads it: real PIDs only (a `0` is not an
/// answer the probe can check in `/proc`, so the answer is [`Answer::Unexpected`]), at most
/// [`MAX_LISTED_CLIENTS`] of them ([`Answer::TooMany`] beyond).
///
/// ```
/// use mps_protocol::{Answer, Pid, client_pids};
///
/// let pid = Pid::new(4428).unwrap();
/// let listed = |lines: &[&str]| match client_pids(pid, lines) {
///     Answer::Value(pids) => Some(pids.into_iter().map(Pid::get).collect::<Vec<_>>()),
///     _ => None,
/// };
/// assert_eq!(listed(&["4267 4281"]), Some(vec![4267, 4281]));
/// assert_eq!(listed(&[]), Some(vec![]));
/// assert_eq!(client_pids(pid, &["4267", "x"]), Answer::Unexpected);
/// assert_eq!(client_pids(pid, &["0 4281"]), Answer::Unexpected);
/// ```
pub fn client_pids(pid: Pid, lines: &[&str]) -> Answer<Vec<Pid>> {
    let listed = match client_list(pid, lines) {
        Answer::Value(listed) => listed,
        Answer::ServerNotFound => return Answer::ServerNotFound,
        Answer::UnknownCommand => return Answer::UnknownCommand,
        Answer::TooMany => return Answer::TooMany,
        Answer::Unexpected => return Answer::Unexpected,
    };
    let pids: Option<Vec<Pid>> = listed
        .into_iter()
        .map(|client| match client {
            ListedClient::Pid(pid) => Some(pid),
            ListedClient::Unseen => None,
        })
        .collect();
    match pids {
        None => Answer::Unexpected,
        Some(pids) if pids.len() > MAX_LISTED_CLIENTS => Answer::TooMany,
        Some(pids) => Answer::Value(pids),
    }
}

/// `get_active_thread_percentage <pid>`'s answer (`%.1f`).
pub fn server_percentage(pid: Pid, lines: &[&str]) -> Answer<Percentage> {
    match lines {
        [line] if not_found(pid, line) => Answer::ServerNotFound,
        [line] => Percentage::parse_daemon(line).map_or(Answer::Unexpected, Answer::Value),
        _ => Answer::Unexpected,
    }
}

/// `get_device_pinned_mem_limit <pid> <device>`'s answer: `None` when no limit is set.
pub fn server_pinned_limit(pid: Pid, lines: &[&str]) -> Answer<Option<MemSize>> {
    match lines {
        [line] if not_found(pid, line) => Answer::ServerNotFound,
        [] => Answer::Value(None),
        [line] => {
            MemSize::parse_daemon(line).map_or(Answer::Unexpected, |size| Answer::Value(Some(size)))
        }
        _ => Answer::Unexpected,
    }
}

/// `get_default_device_pinned_mem_limit <device>`'s answer: `None` when no limit is set (the
/// daemon prints nothing, for any ordinal).
///
/// ```
/// use mps_protocol::{Answer, default_pinned_limit};
///
/// assert_eq!(default_pinned_limit(&[]), Answer::Value(None));
/// assert!(matches!(default_pinned_limit(&["10G"]), Answer::Value(Some(_))));
/// assert_eq!(default_pinned_limit(&["Unknown command \"x\""]), Answer::UnknownCommand);
/// assert_eq!(default_pinned_limit(&["10G", "10G"]), Answer::Unexpected);
/// ```
pub fn default_pinned_limit(lines: &[&str]) -> Answer<Option<MemSize>> {
    match lines {
        [] => Answer::Value(None),
        [line] => match MemSize::parse_daemon(line) {
            Some(size) => Answer::Value(Some(size)),
            None if line.starts_with("Unknown command") => Answer::UnknownCommand,
            None => Answer::Unexpected,
        },
        _ => Answer::Unexpected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        #[test]
        fn only_the_named_server_is_not_found(pid in 1i64..=4_194_304, other in 1i64..=4_194_304) {
            let (pid, other) = (Pid::new(pid).unwrap(), Pid::new(other).unwrap());
            let line = format!("Server {other} not found");
            let found = pid != other;
            proptest::prop_assert_eq!(server_state(pid, &[&line]) == Answer::ServerNotFound, !found);
            proptest::prop_assert_eq!(server_percentage(pid, &[&line]) == Answer::ServerNotFound, !found);
            proptest::prop_assert_eq!(server_pinned_limit(pid, &[&line]) == Answer::ServerNotFound, !found);
            proptest::prop_assert_eq!(client_pids(pid, &[&line]) == Answer::ServerNotFound, !found);
            proptest::prop_assert_eq!(client_list(pid, &[&line]) == Answer::ServerNotFound, !found);
        }

        #[test]
        fn arbitrary_lines_never_panic(lines in proptest::collection::vec("\\PC{0,16}", 0..4)) {
            let pid = Pid::new(4428).unwrap();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let _ = (server_state(pid, &lines), client_pids(pid, &lines), server_percentage(pid, &lines));
            let _ = (server_pinned_limit(pid, &lines), default_pinned_limit(&lines));
        }

        /// Whatever the words, the probe's reading is the one parser's, less `0` and the cap.
        #[test]
        fn client_pids_is_client_list_without_unseen_clients(words in proptest::collection::vec("0|[1-9][0-9]{0,3}|x", 0..80)) {
            let pid = Pid::new(4428).unwrap();
            let line = words.join(" ");
            let (list, pids) = (client_list(pid, &[&line]), client_pids(pid, &[&line]));
            match list {
                Answer::Value(listed) if listed.contains(&ListedClient::Unseen) => proptest::prop_assert_eq!(pids, Answer::Unexpected),
                Answer::Value(listed) if listed.len() > MAX_LISTED_CLIENTS => proptest::prop_assert_eq!(pids, Answer::TooMany),
                Answer::Value(listed) => proptest::prop_assert_eq!(pids, Answer::Value(listed.into_iter().filter_map(|c| match c { ListedClient::Pid(p) => Some(p), ListedClient::Unseen => None }).collect())),
                _ => proptest::prop_assert_eq!(pids, Answer::Unexpected),
            }
        }
    }

    #[test]
    fn a_client_list_longer_than_the_cap_is_too_many() {
        let pid = Pid::new(4428).unwrap();
        let words: Vec<String> = (1..=MAX_LISTED_CLIENTS + 1)
            .map(|n| n.to_string())
            .collect();
        let line = words.join(" ");
        assert_eq!(client_pids(pid, &[&line]), Answer::TooMany);
        let line = words[..MAX_LISTED_CLIENTS].join(" ");
        assert!(
            matches!(client_pids(pid, &[&line]), Answer::Value(pids) if pids.len() == MAX_LISTED_CLIENTS)
        );
    }
}
