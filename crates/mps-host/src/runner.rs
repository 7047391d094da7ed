//! The one place a process is spawned: a [`Query`] (data) goes in, a [`QueryRecord`] (facts)
//! comes out. Every run is bounded in time and in memory, and never fails: a spawn error, a
//! timeout, an exit code or a signal is recorded, not returned as an error.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use mps_protocol::{CapturedText, OsText, QueryOutcome, QueryRecord};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, WaitId, WaitIdOptions, pidfd_open};

use crate::children;

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
            earlier_attempts: Vec::new(),
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

/// One output stream of the child: its pipe until end of file, and what was kept of it.
struct Output {
    pipe: Option<OwnedFd>,
    bytes: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Output {
    /// A pipe that cannot be made non-blocking (never seen on Linux) is not read, so it cannot
    /// block the runner; its capture counts as cut short.
    fn new(pipe: Option<OwnedFd>, cap: usize) -> Self {
        let blocking = pipe
            .as_ref()
            .is_some_and(|pipe| rustix::io::ioctl_fionbio(pipe, true).is_err());
        Self {
            pipe: pipe.filter(|_| !blocking),
            bytes: Vec::new(),
            cap,
            truncated: blocking,
        }
    }

    /// Reads what the pipe holds now, keeping at most `cap` bytes in all and discarding the rest
    /// (it keeps reading, so the writer never blocks on a full pipe). End of file or an error
    /// closes the pipe.
    fn read_ready(&mut self, buffer: &mut [MaybeUninit<u8>]) {
        let Some(pipe) = &self.pipe else { return };
        match rustix::io::read(pipe, &mut *buffer) {
            Ok(([], _)) => self.pipe = None,
            Ok((chunk, _)) => {
                let room = self.cap.saturating_sub(self.bytes.len());
                if chunk.len() > room {
                    self.truncated = true;
                }
                self.bytes
                    .extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(_) => self.pipe = None,
        }
    }

    /// The capture. A stream that had not reached end of file counts as truncated (its writer
    /// escaped the process group).
    fn text(&self) -> CapturedText {
        CapturedText::from_bytes(&self.bytes, self.truncated || self.pipe.is_some())
    }
}

impl ProcessRunner {
    fn run_outcome(&self, query: &Query, started: Instant) -> QueryOutcome {
        let program = match self.resolve(&query.program) {
            Ok(program) => program,
            Err(error) => return QueryOutcome::SpawnFailed { error },
        };
        if let Some(why) = children::forbidden() {
            return QueryOutcome::SpawnFailed {
                error: why.to_owned(),
            };
        }
        let spawned = children::spawn_registered(
            || spawn(&program, query),
            |(child, _, _)| i32::try_from(child.id()).ok().and_then(Pid::from_raw),
        );
        let (mut child, stdin, input) = match spawned {
            Ok(spawned) => spawned,
            Err(error) => {
                return QueryOutcome::SpawnFailed {
                    error: error.to_string(),
                };
            }
        };
        let deadline = started + query.timeout;
        let mut io = ChildIo {
            stdin,
            input,
            stdout: Output::new(child.stdout.take().map(OwnedFd::from), self.stdout_cap),
            stderr: Output::new(child.stderr.take().map(OwnedFd::from), self.stderr_cap),
        };
        let group = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
        // Readable once the child has exited (Linux 5.3 and later); without it, exits are
        // noticed by polling every few milliseconds.
        let exit_fd = group.and_then(|pid| pidfd_open(pid, PidfdFlags::empty()).ok());
        let watch = group.map(|pid| (pid, exit_fd.as_ref()));
        let exited = io.pump(watch, deadline, false);
        // The leader is either a zombie (exited, not yet reaped) or still running, so its PID
        // and the group ID cannot have been reused: killing the group now is safe. After a normal
        // exit this removes anything the program left behind in its group.
        match group {
            Some(group) => children::kill_group(group),
            None => {
                let _ = child.kill();
            }
        }
        // Wait for the killed leader (unless already seen) and for both streams' end of file.
        let grace = Instant::now() + KILL_GRACE;
        let dead = if exited || group.is_none() {
            io.pump(None, grace, true);
            true
        } else {
            io.pump(watch, grace, true)
        };
        // A leader that did not die within the grace (stuck in the kernel) is left unreaped.
        let status = if dead { child.wait().ok() } else { None };
        if let Some(group) = group {
            children::forget(group);
        }
        let (stdout, stderr) = (io.stdout.text(), io.stderr.text());
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
fn spawn<'a>(
    program: &Path,
    query: &'a Query,
) -> std::io::Result<(Child, Option<OwnedFd>, &'a [u8])> {
    // Standard input is written into its pipe before the child exists, as far as the pipe takes
    // it (64 KiB on Linux; all of `probe`'s input), so the child never waits for this thread to
    // be scheduled again after the spawn; the rest, if any, is written by `ChildIo::pump`.
    let (reader, writer) = std::io::pipe()?;
    let mut stdin = Some(OwnedFd::from(writer));
    let mut input = query.stdin.as_bytes();
    if stdin
        .as_ref()
        .is_some_and(|stdin| rustix::io::ioctl_fionbio(stdin, true).is_err())
    {
        stdin = None;
    }
    while let Some(pipe) = &stdin
        && !input.is_empty()
    {
        match rustix::io::write(pipe, input) {
            Ok(written) => input = input.get(written..).unwrap_or_default(),
            Err(Errno::INTR) => {}
            Err(_) => break,
        }
    }
    if input.is_empty() {
        // All written (or nothing to write): closing now gives the child end of file.
        stdin = None;
    }
    let mut command = Command::new(program);
    command
        .args(&query.args)
        .stdin(Stdio::from(reader))
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
            // `command`, and with it this process's copy of the read end, is dropped on return:
            // once the child is gone, writing what is left fails (`EPIPE`) as before.
            other => return other.map(|child| (child, stdin, input)),
        }
    }
}

/// The child's end of the three pipes, driven by one thread with `poll`.
struct ChildIo<'a> {
    stdin: Option<OwnedFd>,
    input: &'a [u8],
    stdout: Output,
    stderr: Output,
}

impl ChildIo<'_> {
    /// Writes standard input (then closes it) and reads both outputs until `until`, and until
    /// `watch`'s process has exited or, with `drain`, both outputs have also reached end of file.
    /// Returns whether the process was seen to exit. A child that never reads its input cannot
    /// block this: the pipe is non-blocking, and the write fails (`EPIPE`) once it is gone.
    fn pump(
        &mut self,
        watch: Option<(Pid, Option<&OwnedFd>)>,
        until: Instant,
        drain: bool,
    ) -> bool {
        // Uninitialised: the kernel writes what is read, and only that is looked at. A zeroed
        // 64 KiB buffer per call was a sixth of a probe's own instructions.
        let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
        let buffer = buffer.spare_capacity_mut();
        let mut exited = false;
        loop {
            if let Some((pid, _)) = watch
                && !exited
            {
                // ECHILD: already reaped, by `children::stop_all_queries` on an interrupt.
                exited = matches!(
                    rustix::process::waitid(
                        WaitId::Pid(pid),
                        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
                    ),
                    Ok(Some(_)) | Err(Errno::CHILD)
                );
            }
            let open = self.stdout.pipe.is_some() || self.stderr.pipe.is_some();
            let done = match watch {
                Some(_) if !exited => false,
                _ => !drain || !open,
            };
            let left = until.saturating_duration_since(Instant::now());
            if done || left.is_zero() {
                return exited;
            }
            let exit_fd = watch.and_then(|(_, fd)| fd).filter(|_| !exited);
            // Without an exit descriptor, look again at the process every 5 ms.
            let wait = if watch.is_some() && !exited && exit_fd.is_none() {
                left.min(Duration::from_millis(5))
            } else {
                left
            };
            // First, so its readiness is `fds[0]`'s: a signal while this query runs.
            let wake = crate::children::wake_fd();
            let mut fds = Vec::with_capacity(5);
            fds.extend(wake.map(|fd| PollFd::new(fd, PollFlags::IN)));
            fds.extend(
                self.stdin
                    .as_ref()
                    .map(|fd| PollFd::new(fd, PollFlags::OUT)),
            );
            fds.extend(
                self.stdout
                    .pipe
                    .as_ref()
                    .map(|fd| PollFd::new(fd, PollFlags::IN)),
            );
            fds.extend(
                self.stderr
                    .pipe
                    .as_ref()
                    .map(|fd| PollFd::new(fd, PollFlags::IN)),
            );
            fds.extend(exit_fd.map(|fd| PollFd::new(fd, PollFlags::IN)));
            let timeout = Timespec::try_from(wait).ok();
            let _ = rustix::event::poll(&mut fds, timeout.as_ref());
            let signalled =
                wake.is_some() && fds.first().is_some_and(|fd| !fd.revents().is_empty());
            drop(fds);
            if signalled {
                crate::children::act_if_interrupted();
            }
            self.write_ready();
            self.stdout.read_ready(buffer);
            self.stderr.read_ready(buffer);
        }
    }

    /// Writes what standard input's pipe takes now; closes it when all is written or the child
    /// is gone.
    fn write_ready(&mut self) {
        let Some(stdin) = &self.stdin else { return };
        match rustix::io::write(stdin, self.input) {
            Ok(written) => self.input = self.input.get(written..).unwrap_or_default(),
            Err(Errno::AGAIN | Errno::INTR) => return,
            Err(_) => self.input = &[],
        }
        if self.input.is_empty() {
            self.stdin = None;
        }
    }
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

    /// A front end's wake-up while a query runs reaches the runner's poll at once: its action
    /// is called (the wake-up is drained, so a returning action does not leave the poll
    /// spinning), and the process is not idle while the query runs. The only test that calls
    /// `watch_interrupts` in this binary; its action only counts.
    #[test]
    fn a_wake_up_during_a_query_calls_the_front_ends_action() {
        use std::io::Write as _;
        use std::sync::atomic::{AtomicUsize, Ordering};

        static ACTED: AtomicUsize = AtomicUsize::new(0);
        fn act() {
            ACTED.fetch_add(1, Ordering::SeqCst);
        }
        let (wake, mut notify) = std::os::unix::net::UnixStream::pair().unwrap();
        wake.set_nonblocking(true).unwrap();
        crate::watch_interrupts(OwnedFd::from(wake), act);
        let query = Query {
            program: "/bin/sh".to_owned(),
            args: vec!["-c".to_owned(), "sleep 0.4".to_owned()],
            stdin: String::new(),
            env: BTreeMap::new(),
            env_removed: vec![],
            timeout: Duration::from_secs(10),
        };
        let started = Instant::now();
        let running = thread::spawn(move || ProcessRunner::default().run(&query));
        thread::sleep(Duration::from_millis(150));
        assert!(!crate::no_query_running().load(Ordering::SeqCst));
        notify.write_all(b"x").unwrap();
        let waited = Instant::now();
        while ACTED.load(Ordering::SeqCst) == 0 && waited.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(5));
        }
        assert!(
            ACTED.load(Ordering::SeqCst) > 0,
            "the action was not called"
        );
        assert!(
            waited.elapsed() < Duration::from_millis(200),
            "{:?}",
            waited.elapsed()
        );
        // Another test's runner may have seen the same wake-up; after it, no more calls.
        thread::sleep(Duration::from_millis(50));
        let calls = ACTED.load(Ordering::SeqCst);
        let record = running.join().unwrap();
        assert!(
            matches!(record.outcome, QueryOutcome::Exited { code: Some(0), .. }),
            "{record:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            ACTED.load(Ordering::SeqCst),
            calls,
            "called again: the wake-up was not drained"
        );
    }
}
