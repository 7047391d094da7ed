//! Reading the daemon's answers strictly. The format of `get_client_list` with live clients is
//! not established (docs/cli.md, "attest"): client PIDs, whitespace or line separated, and
//! `Server <pid> not found` are read; anything else is unproven, with the raw text kept.

use crate::daemon::{self, DaemonStatus, is_percentage};
use crate::message::daemon::{no_answer, probe_mismatch, retried, unrecognized};
use crate::served::server_pids;
use crate::{CapturedText, Pid, QueryOutcome, QueryRecord, Vocabulary, client_query, probe_stdin};
use mps_protocol::{Answer, ListedClient};

use super::{AttestCode, message};

/// Why an answer proves nothing: the daemon did not answer, or answered in an unknown format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unproven {
    /// [`AttestCode::DaemonDidNotAnswer`] or [`AttestCode::AnswerUnrecognized`].
    pub(crate) code: AttestCode,
    /// What was seen, for the message.
    pub(crate) detail: String,
}

impl Unproven {
    fn no_answer(detail: String) -> Self {
        Self {
            code: AttestCode::DaemonDidNotAnswer,
            detail,
        }
    }

    fn unrecognized(detail: String) -> Self {
        Self {
            code: AttestCode::AnswerUnrecognized,
            detail,
        }
    }
}

/// The server PIDs of the server query (the probe's own query, read by the probe's rules).
pub(crate) fn servers(
    record: Option<&QueryRecord>,
    pipe_directory: &[u8],
) -> Result<Vec<i64>, Unproven> {
    match daemon::status(record, pipe_directory) {
        DaemonStatus::Live { .. } => Ok(server_pids(record, pipe_directory)),
        other => Err(from_status(other, "get_server_list")),
    }
}

fn from_status(status: DaemonStatus, asked: &str) -> Unproven {
    match status {
        DaemonStatus::Live { .. } => Unproven::unrecognized(message::judged_twice(asked)),
        DaemonStatus::NotQueried => Unproven::no_answer(message::not_asked(asked)),
        DaemonStatus::SpawnFailed(error) => {
            Unproven::no_answer(message::spawn_failed_for(asked, &error))
        }
        DaemonStatus::TimedOut { timeout_ms } => {
            Unproven::no_answer(message::timed_out_for(asked, timeout_ms))
        }
        // attest is the command line's (and the native Python API's): their words.
        DaemonStatus::NoAnswer(how) => {
            Unproven::no_answer(message::about(asked, &no_answer(Vocabulary::Cli, &how)))
        }
        DaemonStatus::Unrecognized(answer) => {
            Unproven::unrecognized(message::about(asked, &unrecognized(&answer)))
        }
        DaemonStatus::NotTheProbe(mismatch) => {
            Unproven::unrecognized(message::about(asked, &probe_mismatch(&mismatch)))
        }
    }
}

/// The client PIDs of one server's client query. A server that ended between the two queries
/// (`Server <pid> not found`) has no clients.
pub(crate) fn clients(
    record: &QueryRecord,
    server: i64,
    pipe_directory: &[u8],
) -> Result<Vec<i64>, Unproven> {
    let Some(pid) = Pid::new(server) else {
        return Err(Unproven::unrecognized(message::not_a_pid(server)));
    };
    let asked = format!("get_client_list {pid}");
    check_client_query(record, pid, pipe_directory).map_err(Unproven::unrecognized)?;
    if let Some(status) = daemon::not_answered(record) {
        return Err(from_status(status, &asked));
    }
    let QueryOutcome::Exited { stdout, stderr, .. } = &record.outcome else {
        return Err(Unproven::no_answer(message::did_not_exit(&asked)));
    };
    client_answer(stdout, stderr, pid)
        .map_err(|why| Unproven::unrecognized(message::unknown_answer(&asked, why, stdout, stderr)))
}

/// The record is the client query this crate builds for `server`, on `pipe_directory`.
fn check_client_query(
    record: &QueryRecord,
    server: Pid,
    pipe_directory: &[u8],
) -> Result<(), String> {
    let expected = probe_stdin(&client_query(server));
    if !daemon::is_control_program(&record.program)
        || !record.args.is_empty()
        || record.stdin != expected
    {
        return Err(message::other_client_query(record, &expected));
    }
    match record.env.get("CUDA_MPS_PIPE_DIRECTORY") {
        Some(dir) if dir.as_bytes() == pipe_directory => {
            daemon::check_retries(record).map_err(|again| retried(&again))
        }
        _ => Err(message::other_pipe_directory(server, pipe_directory)),
    }
}

/// `100.0\n`, then the client PIDs (whitespace or line separated) or `Server <pid> not found`.
fn client_answer(
    stdout: &CapturedText,
    stderr: &CapturedText,
    server: Pid,
) -> Result<Vec<i64>, &'static str> {
    if stdout.truncated || stderr.truncated {
        return Err(message::CUT_SHORT);
    }
    if stdout.non_utf8 || stderr.non_utf8 {
        return Err(message::NOT_UTF8);
    }
    if !stderr.text.is_empty() {
        return Err(message::STDERR);
    }
    let Some((first, rest)) = stdout.text.split_once('\n') else {
        return Err(message::NOT_PERCENTAGE_FIRST);
    };
    if !is_percentage(first) {
        return Err(message::NOT_PERCENTAGE_FIRST);
    }
    parse_client_list(rest, server)
}

/// The client PIDs of a `get_client_list <server>` answer: PIDs separated by whitespace or
/// newlines (none at all: no clients), or `Server <server> not found` (the server has ended).
/// Read by mps-protocol's one parser of this answer (`client_list`), keeping `0`.
///
/// ```
/// use sharing_policy::{Pid, parse_client_list};
///
/// let server = Pid::new(4428).unwrap();
/// assert_eq!(parse_client_list("4267\n4281\n", server), Ok(vec![4267, 4281]));
/// assert_eq!(parse_client_list("4267 4281", server), Ok(vec![4267, 4281]));
/// assert_eq!(parse_client_list("", server), Ok(vec![]));
/// assert_eq!(parse_client_list("Server 4428 not found\n", server), Ok(vec![]));
/// assert!(parse_client_list("Server 9 not found\n", server).is_err());
/// assert!(parse_client_list("PID 4267\n", server).is_err());
/// assert_eq!(parse_client_list("0\n4281\n", server), Ok(vec![0, 4281]));
/// ```
///
/// # Errors
/// Anything else: the format is not recognised, and nothing is proven from it.
pub fn parse_client_list(text: &str, server: Pid) -> Result<Vec<i64>, &'static str> {
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    // `0` is a client the daemon cannot see (another PID namespace; it logs such clients as
    // PID 0, shared notes gpu-truth.md §2): kept, so the verdict can say so.
    match mps_protocol::client_list(server, &lines) {
        Answer::Value(listed) => Ok(listed
            .into_iter()
            .map(|client| match client {
                ListedClient::Pid(pid) => pid.get(),
                ListedClient::Unseen => 0,
            })
            .collect()),
        Answer::ServerNotFound => Ok(Vec::new()),
        _ => Err("expected client PIDs separated by whitespace, or `Server <pid> not found`"),
    }
}
