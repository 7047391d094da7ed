//! Sessions: several read-only commands in one run of the control front-end, each after a
//! liveness command, and how a session's output splits back into one answer per command.
//!
//! The front-end buffers its answers and prints them only when its standard input ends
//! (checked on the real 535 front-end: nothing arrives before EOF), so a session cannot be a
//! dialogue: everything it asks is decided before it starts. The probe's first session
//! therefore asks, with the server list, the default pinned-memory limit of the first
//! [`FIRST_SESSION_ORDINALS`] device ordinals: the daemon answers them for any ordinal (an
//! empty line when none is set, "Unknown command" before 535), so an idle daemon needs no
//! second session on a host with at most that many GPUs.

use crate::{Percentage, ReadOnlyCommand, separated};

/// How many device ordinals the first session asks the default pinned-memory limit of:
/// as many GPUs as most hosts have; a larger host's remaining ordinals are asked in the
/// settings session.
pub const FIRST_SESSION_ORDINALS: u32 = 8;

/// The probe's first session: the server list and the default pinned-memory limit of ordinals
/// `0..FIRST_SESSION_ORDINALS`, each after a liveness command, one liveness command last.
///
/// ```
/// use mps_protocol::{ReadOnlyCommand, asked_in, first_session, probe_stdin};
///
/// let stdin = probe_stdin(&first_session());
/// assert!(stdin.starts_with("get_default_active_thread_percentage\nget_server_list\n\
///                            get_default_active_thread_percentage\nget_default_device_pinned_mem_limit 0\n"));
/// let asked = asked_in(&stdin).unwrap();
/// assert_eq!(asked[0], ReadOnlyCommand::GetServerList);
/// assert_eq!(asked.len(), 9);
/// ```
pub fn first_session() -> Vec<ReadOnlyCommand> {
    separated(&first_session_asked())
}

/// What the first session asks between its liveness commands: the server list, then each of
/// the first [`FIRST_SESSION_ORDINALS`] ordinals' default pinned-memory limit; what
/// [`asked_in`] reads back from the first session's stdin.
pub fn first_session_asked() -> Vec<ReadOnlyCommand> {
    let mut asked = vec![ReadOnlyCommand::GetServerList];
    asked.extend((0..FIRST_SESSION_ORDINALS).map(ReadOnlyCommand::GetDefaultDevicePinnedMemLimit));
    asked
}

/// The commands a session's standard input asked between its liveness commands, when it is a
/// [`separated`] session of read-only commands (each line one command, a newline after each);
/// `None` for anything else.
///
/// ```
/// use mps_protocol::asked_in;
///
/// assert_eq!(asked_in("get_default_active_thread_percentage\nget_server_list\n"), None);
/// assert_eq!(asked_in("get_default_active_thread_percentage\nquit\nget_default_active_thread_percentage\n"), None);
/// ```
pub fn asked_in(stdin: &str) -> Option<Vec<ReadOnlyCommand>> {
    let body = stdin.strip_suffix('\n')?;
    let session: Vec<ReadOnlyCommand> = body
        .split('\n')
        .map(ReadOnlyCommand::parse_line)
        .collect::<Option<_>>()?;
    let asked: Vec<ReadOnlyCommand> = session.iter().skip(1).step_by(2).copied().collect();
    (!asked.is_empty() && separated(&asked) == session).then_some(asked)
}

/// Splits `stdout` into one answer per asked command, each after a `%.1f` liveness line, with
/// one more liveness line last; `None` when it does not split so. An answer is every line up to
/// the next `%.1f` line, except `get_active_thread_percentage <pid>`'s, which is itself `%.1f`
/// (or `Server <pid> not found`): exactly one line. No other command ever prints a `%.1f` line
/// (server and client PIDs have no decimal point; limits end in `G` or `M`).
///
/// ```
/// use mps_protocol::{ReadOnlyCommand, split_answers};
///
/// let asked = [ReadOnlyCommand::GetServerList, ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(0)];
/// let answers = split_answers(&asked, "100.0\n4428\n100.0\n10G\n100.0\n").unwrap();
/// assert_eq!(answers[0].1, ["4428"]);
/// assert_eq!(answers[1].1, ["10G"]);
/// // Cut short: the last liveness line is missing.
/// assert_eq!(split_answers(&asked, "100.0\n4428\n100.0\n10G\n"), None);
/// ```
pub fn split_answers<'a>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe_stdin;

    #[test]
    fn the_first_session_reads_back_as_asked() {
        let session = first_session();
        let asked = asked_in(&probe_stdin(&session)).unwrap();
        assert_eq!(separated(&asked), session);
        assert_eq!(asked, first_session_asked());
        assert_eq!(asked.len(), 1 + FIRST_SESSION_ORDINALS as usize);
    }

    #[test]
    fn an_idle_daemons_first_session_splits() {
        let asked = asked_in(&probe_stdin(&first_session())).unwrap();
        let stdout = "100.0\n".repeat(asked.len() + 1);
        let answers = split_answers(&asked, &stdout).unwrap();
        assert!(answers.iter().all(|(_, lines)| lines.is_empty()));
        // One liveness line short, or one too many, is refused.
        assert_eq!(split_answers(&asked, &"100.0\n".repeat(asked.len())), None);
        assert_eq!(
            split_answers(&asked, &"100.0\n".repeat(asked.len() + 2)),
            None
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        #[test]
        fn server_pids_and_limits_split_back_exactly(
            servers in proptest::collection::vec(1u32..=4_194_304, 0..4),
            limits in proptest::collection::vec(proptest::option::of(1u32..=80), 8),
        ) {
            let asked = asked_in(&probe_stdin(&first_session())).unwrap();
            let mut stdout = String::from("100.0\n");
            for pid in &servers {
                stdout.push_str(&pid.to_string());
                stdout.push('\n');
            }
            for limit in &limits {
                stdout.push_str("100.0\n");
                if let Some(gib) = limit {
                    stdout.push_str(&gib.to_string());
                    stdout.push_str("G\n");
                }
            }
            stdout.push_str("100.0\n");
            let answers = split_answers(&asked, &stdout).unwrap();
            let listed: Vec<String> = servers.iter().map(ToString::to_string).collect();
            proptest::prop_assert_eq!(&answers[0].1, &listed);
            for (limit, (_, lines)) in limits.iter().zip(&answers[1..]) {
                proptest::prop_assert_eq!(lines.len(), usize::from(limit.is_some()));
            }
        }
    }
}
