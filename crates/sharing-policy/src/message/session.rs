//! The words of the settings session's statuses (`session.rs`): why a recorded session cannot
//! be read, and why one of its answers says nothing known.

use super::daemon::{describe_text, no_answer, retried};
use crate::daemon::DaemonStatus;
use crate::session::{
    AnswerUnread, MAX_LISTED_CLIENTS, ServerAsked, SessionUnreadable, session_answers,
};
use crate::text::repr;
use crate::{QueryRecord, ReadOnlyCommand, Vocabulary};

/// `session_answers` for callers outside the validator (the real-daemon recordings' tests,
/// `attest`): each asked command of a recorded settings session with its answer lines, or why
/// the record is not a readable session. The answers are not interpreted. It lives with the
/// words because its error is one.
///
/// # Errors
/// The record is not this probe's settings session, did not exit 0 with an empty stderr, or
/// its stdout does not split into one answer per asked command between `%.1f` lines.
pub fn settings_answers(
    record: &QueryRecord,
    pipe_directory: &crate::OsText,
) -> Result<Vec<(ReadOnlyCommand, Vec<String>)>, String> {
    match session_answers(record, pipe_directory.as_bytes()) {
        Ok(answers) => Ok(answers
            .into_iter()
            .map(|(command, lines)| (command, lines.into_iter().map(str::to_owned).collect()))
            .collect()),
        Err(why) => Err(session_unreadable(&why)),
    }
}

/// Why a recorded settings session cannot be read.
pub(crate) fn session_unreadable(why: &SessionUnreadable) -> String {
    match why {
        SessionUnreadable::NotTheFrontEnd => {
            "the settings query is not the control front-end without arguments".to_owned()
        }
        SessionUnreadable::OtherPipeDirectory => {
            "the settings query used another pipe directory".to_owned()
        }
        SessionUnreadable::Retried(again) => retried(again),
        SessionUnreadable::NotSeparated => {
            "the settings query's stdin is not a separated session".to_owned()
        }
        SessionUnreadable::NotAnswered(how) => match how {
            DaemonStatus::TimedOut { timeout_ms } => {
                format!("the settings query did not answer within {timeout_ms} ms")
            }
            // The settings session is the command line's: its words.
            DaemonStatus::NoAnswer(ended) => no_answer(Vocabulary::Cli, ended),
            DaemonStatus::SpawnFailed(error) => {
                format!("the settings query could not be started: {error}")
            }
            _ => "the settings query did not answer".to_owned(),
        },
        SessionUnreadable::Unclean { stdout, stderr } => format!(
            "the settings query answered with {}, {}",
            describe_text("stdout", stdout),
            describe_text("stderr", stderr)
        ),
        SessionUnreadable::NotSplit(stdout) => format!(
            "the settings query's answer is not one answer per question between liveness lines: {}",
            describe_text("stdout", stdout)
        ),
    }
}

/// Why one answer of the settings session says nothing known.
pub(crate) fn answer_unread(why: &AnswerUnread) -> String {
    match why {
        AnswerUnread::UnknownCommand(command) => {
            let drivers = match command {
                ReadOnlyCommand::GetServerStatus(_) => " (drivers before 550 do not)",
                ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(_) => {
                    " (drivers before 535 do not)"
                }
                _ => "",
            };
            format!("the daemon has no {}{drivers}", command.as_str())
        }
        AnswerUnread::ServerGone(pid, asked) => {
            let asked = match asked {
                ServerAsked::State => "state was",
                ServerAsked::Clients => "clients were",
                ServerAsked::ActiveThreadPercentage => "active-thread percentage was",
                ServerAsked::PinnedMemLimit => "pinned-memory limit was",
            };
            format!("server {pid} was gone when its {asked} asked")
        }
        AnswerUnread::TooManyClients(pid) => {
            format!("get_client_list {pid} listed more than {MAX_LISTED_CLIENTS} clients")
        }
        AnswerUnread::Unexpected(command, lines) => {
            format!("{} answered {}", command.line(), repr(&lines.join("\n")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pid;
    use crate::session::{client_pids, pinned_limit, server_pinned_limit, server_state};

    #[test]
    fn each_unread_answer_names_its_command() {
        let pid = Pid::new(4428).unwrap();
        let said = |read: Result<(), AnswerUnread>| read.map_err(|why| answer_unread(&why));
        assert_eq!(
            said(server_state(pid, &["Unknown command"]).map(drop)),
            Err("the daemon has no get_server_status (drivers before 550 do not)".to_owned())
        );
        assert_eq!(
            said(client_pids(pid, &["Server 4428 not found"]).map(drop)),
            Err("server 4428 was gone when its clients were asked".to_owned())
        );
        assert_eq!(
            said(server_pinned_limit(pid, 1, &["lots", "more"]).map(drop)),
            Err("get_device_pinned_mem_limit 4428 1 answered 'lots\\nmore'".to_owned())
        );
        assert_eq!(
            said(pinned_limit(2, &["Unknown command"]).map(drop)),
            Err(
                "the daemon has no get_default_device_pinned_mem_limit (drivers before 535 do not)"
                    .to_owned()
            )
        );
    }
}
