//! The control pipe family: path length (deliberate change 5), presence, kind, access. Decides
//! only; the words are in `message/pipe.rs`.

use gpu_uuid::GpuUuid;

use super::{Findings, control_path, message, start_command};
use crate::{FileKind, HostFacts, OsText, PipeFacts, QueryOutcome};

/// The longest path an `AF_UNIX` socket accepts (`sun_path` is 108 bytes with the terminator).
pub(crate) const MAX_SOCKET_PATH: usize = 107;

/// The pipe facts that made it into the evidence.
pub(super) struct PipeEvidence {
    directory: String,
    path: String,
    kind: &'static str,
}

impl PipeEvidence {
    /// The evidence's `pipe_directory`, `control_pipe` and `control_pipe_kind`, moved out.
    pub(super) fn fields(pipe: Option<Self>) -> (Option<String>, Option<String>, Option<String>) {
        match pipe {
            Some(Self {
                directory,
                path,
                kind,
            }) => (Some(directory), Some(path), Some(kind.to_owned())),
            None => (None, None, None),
        }
    }
}

/// How to start a control daemon: the command, after installing the control front-end when the
/// probe could not run it (the daemon query's recorded spawn failure).
pub(super) struct Start {
    /// The command that starts a daemon on the pipe directory.
    pub(super) command: String,
    /// Why `nvidia-cuda-mps-control` could not be started, when it could not.
    pub(super) not_runnable: Option<String>,
}

impl Start {
    fn new(facts: &HostFacts, command: String) -> Self {
        let not_runnable = facts
            .daemon_query
            .as_ref()
            .and_then(|query| match &query.outcome {
                QueryOutcome::SpawnFailed { error } => Some(error.clone()),
                _ => None,
            });
        Self {
            command,
            not_runnable,
        }
    }
}

/// The first problem of an observed control pipe.
#[derive(Clone, Copy)]
pub(super) enum Problem<'a> {
    /// Nothing is there; `dangling` when a symbolic link is, pointing nowhere.
    Missing { dangling: bool },
    /// It could not be examined: the error, when one was recorded.
    Unexamined(Option<&'a str>),
    /// Something other than a socket or FIFO is there.
    NotAPipe(FileKind),
    /// The launching user cannot search its directory.
    DirectoryNotSearchable,
    /// The launching user cannot read and write it.
    NotReadWrite,
    /// Its access was not established: the error, when one was recorded.
    AccessUnknown(Option<&'a str>),
}

/// The control pipe: path length (deliberate change 5), presence, kind, access.
pub(super) fn check(
    facts: &HostFacts,
    directory_raw: &OsText,
    pin: Option<GpuUuid>,
    findings: &mut Findings,
) -> Option<PipeEvidence> {
    let (env, words) = (&facts.env, findings.words);
    let Some(directory) = directory_raw.as_str() else {
        findings.push(|| message::pipe::non_utf8_directory(words, directory_raw));
        return None;
    };
    let path = control_path(directory);
    let start = || Start::new(facts, start_command(directory, env, pin));
    let Some(pipe) = &facts.control_pipe else {
        findings.push(|| message::pipe::not_observed(words, &path, &start()));
        return None;
    };
    let same_path = matches!(&pipe.path, OsText::Text(recorded) if *recorded == path);
    if pipe.directory != *directory_raw || !same_path {
        findings.push(|| message::pipe::record_elsewhere(words, &pipe.path, &path));
        return None;
    }
    if path.len() > MAX_SOCKET_PATH {
        findings.push(|| message::pipe::path_too_long(words, &path));
        if findings.settled() {
            return None;
        }
    }
    match examine(pipe) {
        Ok(kind) => Some(PipeEvidence {
            directory: directory.to_owned(),
            path,
            kind,
        }),
        Err(problem) => {
            findings.push(|| message::pipe::problem(words, pipe, &path, problem, &start));
            None
        }
    }
}

/// Presence, kind and access of an observed control pipe: its kind for the evidence, or the
/// first problem.
fn examine(pipe: &PipeFacts) -> Result<&'static str, Problem<'_>> {
    let kind = match (pipe.lstat.kind, pipe.stat.kind) {
        (FileKind::Missing, _) | (FileKind::Symlink, FileKind::Missing) => {
            return Err(Problem::Missing {
                dangling: pipe.lstat.kind == FileKind::Symlink,
            });
        }
        (FileKind::Unknown, _) | (_, FileKind::Unknown) => {
            let error = pipe.lstat.error.as_deref().or(pipe.stat.error.as_deref());
            return Err(Problem::Unexamined(error));
        }
        (_, FileKind::Socket) => "unix_socket",
        (_, FileKind::Fifo) => "fifo",
        (_, other) => return Err(Problem::NotAPipe(other)),
    };
    let traversable = pipe.access.directory_traversable;
    let read_write = pipe.access.read_write;
    if traversable != Some(true) || read_write != Some(true) {
        return Err(match (traversable, read_write) {
            (Some(false), _) => Problem::DirectoryNotSearchable,
            (_, Some(false)) => Problem::NotReadWrite,
            _ => Problem::AccessUnknown(pipe.access.error.as_deref()),
        });
    }
    Ok(kind)
}
