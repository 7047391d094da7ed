//! The control pipe family: path length (deliberate change 5), presence, kind, access.

use gpu_uuid::GpuUuid;

use super::{Findings, control_path, inconsistent, start_command};
use crate::text::repr;
use crate::{
    Code, DAEMON_QUERY_PROGRAM, FileKind, Finding, HostFacts, OsText, PipeFacts, QueryOutcome,
    Vocabulary,
};

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

/// The start of a fix when the control front-end cannot be run.
const INSTALL: &str =
    "install nvidia-cuda-mps-control (the NVIDIA driver's MPS package) first, then ";

/// How to start a control daemon: the command, after installing the control front-end when the
/// probe could not run it (the daemon query's recorded spawn failure).
struct Start {
    command: String,
    /// Why `nvidia-cuda-mps-control` could not be started, when it could not.
    not_runnable: Option<String>,
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

    /// The fix: the command, or installing the front-end and then the command.
    fn fix(&self) -> String {
        match &self.not_runnable {
            None => self.command.clone(),
            Some(_) => [INSTALL, "start a control daemon with: ", &self.command].concat(),
        }
    }

    /// The message's closing sentence: `lead` (`"Start a control daemon with: "`) and the
    /// command, after saying that the front-end must be installed first when it must.
    fn sentence(&self, lead: &str) -> String {
        match &self.not_runnable {
            None => [lead, &self.command].concat(),
            Some(error) => [
                DAEMON_QUERY_PROGRAM,
                " could not be started (",
                super::clause(error),
                "), so it is not installed here or cannot be run. I",
                INSTALL.strip_prefix('i').unwrap_or(INSTALL),
                &super::request::lowercase_first(lead),
                &self.command,
            ]
            .concat(),
        }
    }
}

/// The finding for a pipe directory that is not UTF-8.
fn non_utf8_directory(words: Vocabulary, directory_raw: &OsText) -> Finding {
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

/// The control pipe: path length (deliberate change 5), presence, kind, access.
pub(super) fn check(
    facts: &HostFacts,
    directory_raw: &OsText,
    pin: Option<GpuUuid>,
    findings: &mut Findings,
) -> Option<PipeEvidence> {
    let (env, words) = (&facts.env, findings.words);
    let Some(directory) = directory_raw.as_str() else {
        findings.push(|| non_utf8_directory(words, directory_raw));
        return None;
    };
    let path = control_path(directory);
    let start = || Start::new(facts, start_command(directory, env, pin));
    let Some(pipe) = &facts.control_pipe else {
        findings.push(|| {
            let start = start();
            Finding::new(
                Code::ControlPipeMissing,
                words,
                [
                    words.mps(),
                    " found no control pipe at ",
                    &path,
                    ": the snapshot holds no observation of it. Capture the host again, or ",
                    &start.sentence("Start a control daemon with: "),
                ]
                .concat(),
                "the control pipe was not observed".to_owned(),
                start.fix(),
            )
        });
        return None;
    };
    let same_path = matches!(&pipe.path, OsText::Text(recorded) if *recorded == path);
    if pipe.directory != *directory_raw || !same_path {
        findings.push(|| {
            inconsistent(
                words,
                format!(
                    "its control pipe record is for {}, but the effective control pipe is {}",
                    repr(&pipe.path.to_string_lossy()),
                    repr(&path)
                ),
            )
        });
        return None;
    }
    if path.len() > MAX_SOCKET_PATH {
        findings.push(|| Finding::new(
            Code::ControlPathTooLong,
            words,
            format!(
                "{} cannot use control pipe {path}: the path is {} bytes, longer than a Unix socket path allows ({MAX_SOCKET_PATH} bytes), so no daemon can listen there. Use a shorter CUDA_MPS_PIPE_DIRECTORY (for example /tmp/nvidia-mps).",
                words.mps(),
                path.len()
            ),
            format!("a {}-byte control path", path.len()),
            "export CUDA_MPS_PIPE_DIRECTORY=<a directory whose control path fits in 107 bytes> for the daemon and both processes".to_owned(),
        ));
        if findings.settled() {
            return None;
        }
    }
    match examine(words, pipe, &path, &start) {
        Ok(kind) => Some(PipeEvidence {
            directory: directory.to_owned(),
            path,
            kind,
        }),
        Err(finding) => {
            findings.push(|| finding);
            None
        }
    }
}

/// Presence, kind and access of an observed control pipe: its kind for the evidence, or the
/// first problem.
fn examine(
    words: Vocabulary,
    pipe: &PipeFacts,
    path: &str,
    start: &dyn Fn() -> Start,
) -> Result<&'static str, Finding> {
    let mps = words.mps();
    let kind = match (pipe.lstat.kind, pipe.stat.kind) {
        (FileKind::Missing, _) | (FileKind::Symlink, FileKind::Missing) => {
            let dangling = if pipe.lstat.kind == FileKind::Symlink {
                " (a dangling symbolic link)"
            } else {
                ""
            };
            let start = start();
            return Err(Finding::new(
                Code::ControlPipeMissing,
                words,
                [
                    mps,
                    " found no control pipe at ",
                    path,
                    dangling,
                    ". ",
                    &start.sentence("Start a control daemon with: "),
                ]
                .concat(),
                ["nothing at ", path, dangling].concat(),
                start.fix(),
            ));
        }
        (FileKind::Unknown, _) | (_, FileKind::Unknown) => {
            let error = pipe
                .lstat
                .error
                .as_deref()
                .or(pipe.stat.error.as_deref())
                .unwrap_or("unknown error");
            return Err(access_finding(
                words,
                mps,
                path,
                &format!("it could not be examined: {error}"),
                pipe,
            ));
        }
        (_, FileKind::Socket) => "unix_socket",
        (_, FileKind::Fifo) => "fifo",
        (_, other) => {
            let start = start();
            return Err(Finding::new(
                Code::NotAControlPipe,
                words,
                [
                    mps,
                    " requires a live control socket or FIFO at ",
                    path,
                    "; that path is not a daemon control pipe (it is ",
                    describe_kind(other),
                    "). Move it aside",
                    &match start.not_runnable {
                        None => [" and start a control daemon with: ", &start.command].concat(),
                        Some(_) => {
                            [". ", &start.sentence("Start a control daemon with: ")].concat()
                        }
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
                    &start.fix(),
                ]
                .concat(),
            ));
        }
    };
    let traversable = pipe.access.directory_traversable;
    let read_write = pipe.access.read_write;
    if traversable != Some(true) || read_write != Some(true) {
        let why = match (traversable, read_write) {
            (Some(false), _) => "its directory cannot be searched by the launching user".to_owned(),
            (_, Some(false)) => "the launching user cannot read and write it".to_owned(),
            _ => format!(
                "access was not established{}",
                pipe.access
                    .error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            ),
        };
        return Err(access_finding(words, mps, path, &why, pipe));
    }
    Ok(kind)
}

fn access_finding(
    words: Vocabulary,
    mps: &str,
    path: &str,
    why: &str,
    pipe: &PipeFacts,
) -> Finding {
    let found = [why, "; ", &describe_owner(pipe)].concat();
    Finding::new(
        Code::ControlPipeInaccessible,
        words,
        [
            mps,
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
