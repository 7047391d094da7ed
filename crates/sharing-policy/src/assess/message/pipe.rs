//! The control pipe family's words: a pipe directory that is not UTF-8, a control pipe that is
//! missing, too long a path, not a pipe or not accessible, and how to start a daemon there.

use super::super::pipe::{MAX_SOCKET_PATH, Problem, Start};
use super::inconsistent;
use crate::text::{clause, repr};
use crate::{Code, DAEMON_QUERY_PROGRAM, FileKind, Finding, OsText, PipeFacts, Vocabulary};

/// The start of a fix when the control front-end cannot be run.
const INSTALL: &str =
    "install nvidia-cuda-mps-control (the NVIDIA driver's MPS package) first, then ";

/// The lead of every message's closing sentence that names the start command.
const START_LEAD: &str = "Start a control daemon with: ";

/// What a kind of file is, in a sentence ("a directory").
fn describe_kind(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Socket => "a Unix socket",
        FileKind::Fifo => "a FIFO",
        FileKind::Regular => "a regular file",
        FileKind::Directory => "a directory",
        FileKind::Symlink => "a symbolic link",
        FileKind::CharDevice => "a character device",
        FileKind::BlockDevice => "a block device",
        FileKind::Missing => "missing",
        FileKind::Unknown => "unknown",
    }
}

/// The pipe's mode and owner and the probing user, as an access finding names them.
fn describe_owner(pipe: &PipeFacts) -> String {
    let mode = pipe
        .stat
        .mode
        .or(pipe.lstat.mode)
        .map_or_else(|| "unknown".to_owned(), |m| format!("{m:04o}"));
    let owner = pipe
        .stat
        .uid
        .or(pipe.lstat.uid)
        .map_or_else(|| "unknown".to_owned(), |u| u.to_string());
    let user = pipe
        .access
        .uid
        .map_or_else(|| "unknown".to_owned(), |u| u.to_string());
    format!("mode {mode}, owner uid {owner}, probing uid {user}")
}

/// The fix that starts a daemon: the command, or installing the front-end and then the
/// command.
fn start_fix(start: &Start) -> String {
    match &start.not_runnable {
        None => start.command.clone(),
        Some(_) => [INSTALL, "start a control daemon with: ", &start.command].concat(),
    }
}

/// The message's closing sentence: `lead` (`"Start a control daemon with: "`) and the
/// command, after saying that the front-end must be installed first when it must.
fn start_sentence(start: &Start, lead: &str) -> String {
    match &start.not_runnable {
        None => [lead, &start.command].concat(),
        Some(error) => [
            DAEMON_QUERY_PROGRAM,
            " could not be started (",
            clause(error),
            "), so it is not installed here or cannot be run. I",
            INSTALL.strip_prefix('i').unwrap_or(INSTALL),
            &super::super::request::lowercase_first(lead),
            &start.command,
        ]
        .concat(),
    }
}

/// The finding for a pipe directory that is not UTF-8.
pub(in crate::assess) fn non_utf8_directory(words: Vocabulary, directory_raw: &OsText) -> Finding {
    let lossy = directory_raw.to_string_lossy();
    Finding::new(
        Code::NonUtf8PipeDirectory,
        words,
        format!(
            "{} cannot use CUDA_MPS_PIPE_DIRECTORY={}: it is not valid UTF-8. Use a UTF-8 path for the daemon's pipe directory.",
            words.mps(),
            repr(&lossy)
        ),
        format!("CUDA_MPS_PIPE_DIRECTORY={}", repr(&lossy)),
        "export CUDA_MPS_PIPE_DIRECTORY=<a UTF-8 path> for the daemon and both processes"
            .to_owned(),
    )
}

/// The finding for a snapshot that holds no observation of the control pipe at `path`.
pub(in crate::assess) fn not_observed(words: Vocabulary, path: &str, start: &Start) -> Finding {
    Finding::new(
        Code::ControlPipeMissing,
        words,
        [
            words.mps(),
            " found no control pipe at ",
            path,
            ": the snapshot holds no observation of it. Capture the host again, or ",
            &start_sentence(start, START_LEAD),
        ]
        .concat(),
        "the control pipe was not observed".to_owned(),
        start_fix(start),
    )
}

/// The inconsistent snapshot whose control pipe record (`recorded`) is not the effective
/// control pipe (`path`).
pub(in crate::assess) fn record_elsewhere(
    words: Vocabulary,
    recorded: &OsText,
    path: &str,
) -> Finding {
    inconsistent(
        words,
        format!(
            "its control pipe record is for {}, but the effective control pipe is {}",
            repr(&recorded.to_string_lossy()),
            repr(path)
        ),
    )
}

/// The finding for a control path longer than a Unix socket path allows.
pub(in crate::assess) fn path_too_long(words: Vocabulary, path: &str) -> Finding {
    Finding::new(
        Code::ControlPathTooLong,
        words,
        format!(
            "{} cannot use control pipe {path}: the path is {} bytes, longer than a Unix socket path allows ({MAX_SOCKET_PATH} bytes), so no daemon can listen there. Use a shorter CUDA_MPS_PIPE_DIRECTORY (for example /tmp/nvidia-mps).",
            words.mps(),
            path.len()
        ),
        format!("a {}-byte control path", path.len()),
        "export CUDA_MPS_PIPE_DIRECTORY=<a directory whose control path fits in 107 bytes> for the daemon and both processes".to_owned(),
    )
}

/// The finding for the first problem of an observed control pipe at `path`; `start` is asked
/// for the start command only when the message names it.
pub(in crate::assess) fn problem(
    words: Vocabulary,
    pipe: &PipeFacts,
    path: &str,
    problem: Problem<'_>,
    start: &dyn Fn() -> Start,
) -> Finding {
    let mps = words.mps();
    match problem {
        Problem::Missing { dangling } => {
            let dangling = if dangling {
                " (a dangling symbolic link)"
            } else {
                ""
            };
            let start = start();
            Finding::new(
                Code::ControlPipeMissing,
                words,
                [
                    mps,
                    " found no control pipe at ",
                    path,
                    dangling,
                    ". ",
                    &start_sentence(&start, START_LEAD),
                ]
                .concat(),
                ["nothing at ", path, dangling].concat(),
                start_fix(&start),
            )
        }
        Problem::Unexamined(error) => {
            let error = error.unwrap_or("unknown error");
            access_finding(
                words,
                path,
                &format!("it could not be examined: {error}"),
                pipe,
            )
        }
        Problem::NotAPipe(other) => not_a_pipe(words, path, other, &start()),
        Problem::DirectoryNotSearchable => access_finding(
            words,
            path,
            "its directory cannot be searched by the launching user",
            pipe,
        ),
        Problem::NotReadWrite => access_finding(
            words,
            path,
            "the launching user cannot read and write it",
            pipe,
        ),
        Problem::AccessUnknown(error) => {
            let why = format!(
                "access was not established{}",
                error.map(|e| format!(" ({e})")).unwrap_or_default()
            );
            access_finding(words, path, &why, pipe)
        }
    }
}

/// The finding for a path that holds something other than a socket or FIFO (`other`).
fn not_a_pipe(words: Vocabulary, path: &str, other: FileKind, start: &Start) -> Finding {
    Finding::new(
        Code::NotAControlPipe,
        words,
        [
            words.mps(),
            " requires a live control socket or FIFO at ",
            path,
            "; that path is not a daemon control pipe (it is ",
            describe_kind(other),
            "). Move it aside",
            &match start.not_runnable {
                None => [" and start a control daemon with: ", &start.command].concat(),
                Some(_) => [". ", &start_sentence(start, START_LEAD)].concat(),
            },
        ]
        .concat(),
        [path, " is ", describe_kind(other)].concat(),
        [
            "move ",
            &crate::shell_quote(path),
            " aside, then",
            if start.not_runnable.is_some() {
                " "
            } else {
                ": "
            },
            &start_fix(start),
        ]
        .concat(),
    )
}

/// The finding for a control pipe the launching user cannot use, and `why`.
fn access_finding(words: Vocabulary, path: &str, why: &str, pipe: &PipeFacts) -> Finding {
    let found = [why, "; ", &describe_owner(pipe)].concat();
    Finding::new(
        Code::ControlPipeInaccessible,
        words,
        [
            words.mps(),
            " cannot access control pipe ",
            path,
            "; the launching user must be able to read and write the daemon's explicitly owned pipe directory (",
            &found,
            "). Run as the daemon's user, or give the launching user access to the pipe directory.",
        ]
        .concat(),
        found,
        "run as the daemon's user, or give the launching user search access to the pipe directory and read-write access to its control socket".to_owned(),
    )
}
