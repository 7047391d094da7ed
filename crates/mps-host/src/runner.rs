//! The one place a process is spawned: a [`Query`] (data) goes in, a [`QueryRecord`] (facts)
//! comes out. Every run is bounded in time and in memory, and never fails: a spawn error, a
//! timeout, an exit code or a signal is recorded, not returned as an error.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use sharing_policy::{CapturedText, OsText, QueryOutcome, QueryRecord};

/// The default deadline of one run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The default cap on each of standard output and standard error (1 MiB).
pub const DEFAULT_OUTPUT_CAP: usize = 1 << 20;

/// How long the runner waits, after it has killed a run's process group, for the group leader to
/// be reaped and for the output pipes to close. Only a process that escaped the group (`setsid`)
/// or one stuck in the kernel can use it up; the run then returns without it.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// How often a spawn that failed with `ETXTBSY` is retried. A script written by another thread
/// of this process can be briefly "busy" while a concurrent `fork` holds its descriptor.
const TEXT_BUSY_RETRIES: u32 = 20;

/// One subprocess run, as data. A [`Runner`] turns it into a process and a [`QueryRecord`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The program: a name looked up on the search path, or a path containing `/`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Written to its standard input, which is then closed.
    pub stdin: String,
    /// Environment variables set for the child (the rest is inherited).
    pub env: BTreeMap<String, OsText>,
    /// Environment variables removed from the child's environment.
    pub env_removed: Vec<String>,
    /// The deadline: when it passes, the process group is killed.
    pub timeout: Duration,
}

impl Query {
    /// The record of this query with the given outcome, before any run (elapsed 0).
    pub fn record(&self, outcome: QueryOutcome, elapsed: Duration) -> QueryRecord {
        QueryRecord {
            program: self.program.clone(),
            args: self.args.clone(),
            stdin: self.stdin.clone(),
            env: self.env.clone(),
            env_removed: self.env_removed.clone(),
            timeout_ms: millis(self.timeout),
            elapsed_ms: millis(elapsed),
            outcome,
        }
    }
}

/// Runs [`Query`]s. The real one is [`ProcessRunner`]; unit tests use a mock.
#[cfg_attr(test, mockall::automock)]
pub trait Runner: Send + Sync {
    /// Runs `query` to completion or to its deadline and records what happened. Never fails.
    fn run(&self, query: &Query) -> QueryRecord;
}

/// The real runner: spawns the program in its own process group, writes standard input and
/// closes it, reads standard output and standard error concurrently with a cap, and kills the
/// whole group when the deadline passes (or, once the program has exited, any process it left
/// behind in its group), so no orphan keeps running or holds the pipes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRunner {
    /// The most bytes of standard output kept; the rest is read and discarded.
    pub stdout_cap: usize,
    /// The most bytes of standard error kept; the rest is read and discarded.
    pub stderr_cap: usize,
    /// Where to look for a program name without `/`, in `PATH` syntax. `None`: the `PATH` this
    /// process inherited. Tests point it at a folder of fake programs instead of changing the
    /// process-wide environment.
    pub search_path: Option<OsString>,
}

impl Default for ProcessRunner {
    fn default() -> Self {
        Self {
            stdout_cap: DEFAULT_OUTPUT_CAP,
            stderr_cap: DEFAULT_OUTPUT_CAP,
            search_path: None,
        }
    }
}

impl Runner for ProcessRunner {
    fn run(&self, query: &Query) -> QueryRecord {
        let started = Instant::now();
        let outcome = self.run_outcome(query, started);
        query.record(outcome, started.elapsed())
    }
}

/// What a reader thread has read so far.
#[derive(Debug, Default)]
struct Capture {
    bytes: Vec<u8>,
    truncated: bool,
    finished: bool,
}

/// A shared capture plus the signal that its reader reached end of file.
struct Reader {
    capture: Arc<Mutex<Capture>>,
    done: mpsc::Receiver<()>,
}

impl Reader {
    /// Waits until `deadline` for end of file, then snapshots what was read. A stream that had
    /// not reached end of file counts as truncated (its writer escaped the process group).
    fn finish(&self, deadline: Instant) -> CapturedText {
        let wait = deadline.saturating_duration_since(Instant::now());
        let _ = self.done.recv_timeout(wait);
        let capture = self.capture.lock().unwrap_or_else(PoisonError::into_inner);
        CapturedText::from_bytes(&capture.bytes, capture.truncated || !capture.finished)
    }
}

impl ProcessRunner {
    fn run_outcome(&self, query: &Query, started: Instant) -> QueryOutcome {
        let program = match self.resolve(&query.program) {
            Ok(program) => program,
            Err(error) => return QueryOutcome::SpawnFailed { error },
        };
        let mut child = match spawn(&program, query) {
            Ok(child) => child,
            Err(error) => {
                return QueryOutcome::SpawnFailed {
                    error: error.to_string(),
                };
            }
        };
        let deadline = started + query.timeout;
        let stdout = child
            .stdout
            .take()
            .map(|out| start_reader(out, self.stdout_cap));
        let stderr = child
            .stderr
            .take()
            .map(|err| start_reader(err, self.stderr_cap));
        if let Some(stdin) = child.stdin.take() {
            start_writer(stdin, query.stdin.clone().into_bytes());
        }
        let group = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
        let exit = group.map(watch_exit);
        let exited = exit.as_ref().is_some_and(|exit| {
            let wait = deadline.saturating_duration_since(Instant::now());
            matches!(exit.recv_timeout(wait), Ok(true))
        });
        // The leader is either a zombie (exited, not yet reaped) or still running, so its PID
        // and the group ID cannot have been reused: killing the group now is safe. After a normal
        // exit this removes anything the program left behind in its group.
        if let Some(group) = group {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
        let status = reap(&mut child, exit.as_ref(), exited);
        let grace = Instant::now() + KILL_GRACE;
        let stdout = stdout.map_or_else(CapturedText::default, |reader| reader.finish(grace));
        let stderr = stderr.map_or_else(CapturedText::default, |reader| reader.finish(grace));
        match (exited, status) {
            (true, Some(status)) => QueryOutcome::Exited {
                code: status.code(),
                signal: status.signal(),
                stdout,
                stderr,
            },
            _ => QueryOutcome::TimedOut { stdout, stderr },
        }
    }

    /// Finds `program` on the search path, as `execvp` would.
    fn resolve(&self, program: &str) -> Result<PathBuf, String> {
        let Some(search_path) = &self.search_path else {
            return Ok(PathBuf::from(program));
        };
        if program.contains('/') {
            return Ok(PathBuf::from(program));
        }
        std::env::split_paths(search_path)
            .map(|dir| dir.join(program))
            .find(|candidate| is_executable_file(candidate))
            .ok_or_else(|| {
                format!(
                    "{program}: not found in the search path {}",
                    search_path.to_string_lossy()
                )
            })
    }
}

fn is_executable_file(path: &Path) -> bool {
    path.is_file() && rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_ok()
}

#[allow(
    clippy::disallowed_methods,
    reason = "the one place mps-host spawns a process (ARCHITECTURE.md); every run is bounded"
)]
fn spawn(program: &Path, query: &Query) -> std::io::Result<Child> {
    let mut command = Command::new(program);
    command
        .args(&query.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in &query.env_removed {
        command.env_remove(name);
    }
    for (name, value) in &query.env {
        command.env(name, OsStr::from_bytes(value.as_bytes()));
    }
    let mut retries = 0;
    loop {
        match command.spawn() {
            Err(err)
                if err.raw_os_error() == Some(rustix::io::Errno::TXTBSY.raw_os_error())
                    && retries < TEXT_BUSY_RETRIES =>
            {
                retries += 1;
                thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// Reads `stream` to end of file in a thread, keeping at most `cap` bytes and discarding the
/// rest (it keeps reading, so the writer never blocks on a full pipe).
fn start_reader<R: Read + Send + 'static>(mut stream: R, cap: usize) -> Reader {
    let capture = Arc::new(Mutex::new(Capture::default()));
    let (done_tx, done) = mpsc::channel();
    let shared = Arc::clone(&capture);
    thread::spawn(move || {
        let mut buffer = [0_u8; 8192];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => {
                    let mut capture = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    let room = cap.saturating_sub(capture.bytes.len());
                    let chunk = buffer.get(..read).unwrap_or_default();
                    if chunk.len() > room {
                        capture.truncated = true;
                    }
                    capture
                        .bytes
                        .extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
                }
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finished = true;
        let _ = done_tx.send(());
    });
    Reader { capture, done }
}

/// Writes `input` to the child's standard input in a thread, then closes it. A child that never
/// reads cannot block the runner: the write fails (`EPIPE`) once the group is killed.
fn start_writer(mut stdin: ChildStdin, input: Vec<u8>) {
    thread::spawn(move || {
        let _ = stdin.write_all(&input);
        drop(stdin);
    });
}

/// Watches `pid` in a thread: the receiver gets `true` once it has exited. The watcher does not
/// reap it (`WNOWAIT`), so its PID (and its process group ID) stays reserved until
/// [`Child::wait`].
fn watch_exit(pid: Pid) -> mpsc::Receiver<bool> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let exited = loop {
            match rustix::process::waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {
                Err(rustix::io::Errno::INTR) => {}
                Ok(_) => break true,
                Err(_) => break false,
            }
        };
        let _ = tx.send(exited);
    });
    rx
}

/// Reaps the child once its group has been killed. Returns its status, or `None` when it did
/// not die within [`KILL_GRACE`] (a process stuck in the kernel); it is then left unreaped.
fn reap(
    child: &mut Child,
    exit: Option<&mpsc::Receiver<bool>>,
    exited: bool,
) -> Option<std::process::ExitStatus> {
    match exit {
        None => {
            let _ = child.kill();
        }
        Some(exit) if !exited => {
            if !matches!(exit.recv_timeout(KILL_GRACE), Ok(true)) {
                return None;
            }
        }
        Some(_) => {}
    }
    child.wait().ok()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_a_spawn_failure_not_an_error() {
        let runner = ProcessRunner {
            search_path: Some(OsString::from("/nonexistent")),
            ..ProcessRunner::default()
        };
        let query = Query {
            program: "nvidia-smi".to_owned(),
            args: vec![],
            stdin: String::new(),
            env: BTreeMap::new(),
            env_removed: vec![],
            timeout: Duration::from_secs(1),
        };
        let record = runner.run(&query);
        assert!(
            matches!(record.outcome, QueryOutcome::SpawnFailed { .. }),
            "{record:?}"
        );
    }
}
