//! The process groups of the queries running now, so that an interrupted CLI can end them.
//! Each query runs in its own process group, so a Ctrl-C to the CLI's group
//! never reaches it: without this, a hung query outlives the CLI until its own deadline.
//!
//! How a front end is told of a signal while queries run, with no thread waiting for it: its
//! signal handlers exit at once while [`no_query_running`] is true (there is nothing to end),
//! and otherwise wake the descriptor given to [`watch_interrupts`], which every runner polls
//! beside its child's pipes; the runner that sees it calls the front end's action (which ends
//! the queries with [`stop_all_queries`] and exits). A signal that arrives as the last query
//! ends is acted on when the registry empties.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// The leaders (= group IDs) of the running queries' process groups.
static RUNNING: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

fn running() -> MutexGuard<'static, Vec<Pid>> {
    // The list stays meaningful even if a holder panicked: use it as it is.
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True while no query of this process runs: changed only with the registry held.
static IDLE: AtomicBool = AtomicBool::new(true);

/// Whether no query runs now, for the front end's signal handlers: while it is true a signal
/// may end the process at once (no query is left behind); while it is false, the handlers
/// must wake the descriptor given to [`watch_interrupts`] instead.
pub fn no_query_running() -> &'static AtomicBool {
    &IDLE
}

/// A signal's wake-up descriptor and what to do when it is readable.
struct Interrupt {
    wake: OwnedFd,
    act: fn(),
}

static INTERRUPT: OnceLock<Interrupt> = OnceLock::new();

/// From now on, every runner polls `wake` beside its child's pipes and calls `act` once it is
/// readable: the front end's handlers make it readable on a signal that arrives while a query
/// runs. `act` is expected to end the queries ([`stop_all_queries`]) and exit; the wake-up is
/// drained before it is called, so `wake` must be non-blocking. The first call stays.
pub fn watch_interrupts(wake: OwnedFd, act: fn()) {
    let _ = INTERRUPT.set(Interrupt { wake, act });
}

/// The descriptor a runner polls for a signal, once [`watch_interrupts`] gave one.
pub(crate) fn wake_fd() -> Option<&'static OwnedFd> {
    INTERRUPT.get().map(|interrupt| &interrupt.wake)
}

/// Calls the front end's action when a signal's wake-up is waiting (a poll that does not
/// wait). Never with the registry held: the action takes it.
pub(crate) fn act_if_interrupted() {
    let Some(interrupt) = INTERRUPT.get() else {
        return;
    };
    let mut fds = [PollFd::new(&interrupt.wake, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if rustix::event::poll(&mut fds, Some(&now)).is_ok_and(|ready| ready > 0) {
        // Drained first: an action that returns must not leave every poll awake at once.
        let mut buffer = [0_u8; 64];
        while rustix::io::read(&interrupt.wake, &mut buffer).is_ok_and(|read| read > 0) {}
        (interrupt.act)();
    }
}

/// Why no query may start in this process, once [`forbid_queries`] said so.
static FORBIDDEN: OnceLock<String> = OnceLock::new();

/// From now on, no query of this process starts: each is recorded as a spawn failure saying
/// `why`. For a process that could not install its signal handlers (no descriptor left for
/// their wake-up): a query it started could outlive an interrupted run, one that never
/// starts cannot. The observation is then unrecorded, which no request passes on; a null
/// request still never fails. The first reason given stays.
pub fn forbid_queries(why: String) {
    let _ = FORBIDDEN.set(why);
}

/// The reason given to [`forbid_queries`], if it was called.
pub(crate) fn forbidden() -> Option<&'static str> {
    FORBIDDEN.get().map(String::as_str)
}

/// Spawns with the registry held, so no query can start unseen by [`stop_all_queries`], and
/// records the new group; `group_of` names the spawned child's group.
pub(crate) fn spawn_registered<T, E>(
    spawn: impl FnOnce() -> Result<T, E>,
    group_of: impl FnOnce(&T) -> Option<Pid>,
) -> Result<T, E> {
    let mut running = running();
    // Before the child exists: from here a signal wakes the runners instead of exiting.
    IDLE.store(false, Ordering::SeqCst);
    let child = spawn();
    if let Ok(child) = &child {
        running.extend(group_of(child));
    }
    let idle = running.is_empty();
    IDLE.store(idle, Ordering::SeqCst);
    drop(running);
    if idle {
        act_if_interrupted();
    }
    child
}

/// Kills `group`, unless [`stop_all_queries`] holds the registry (it has killed it, and may
/// have reaped its leader, after which the group ID could name someone else).
pub(crate) fn kill_group(group: Pid) {
    let running = running();
    if running.contains(&group) {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
}

/// Forgets `group` once its leader has been reaped; the last one forgotten makes the process
/// idle again, and a signal that came meanwhile is acted on now.
pub(crate) fn forget(group: Pid) {
    let mut running = running();
    running.retain(|pid| *pid != group);
    let idle = running.is_empty();
    if idle {
        IDLE.store(true, Ordering::SeqCst);
    }
    drop(running);
    if idle {
        act_if_interrupted();
    }
}

/// What [`stop_all_queries`] did. While it lives, no query starts and none is killed again.
#[derive(Debug)]
pub struct StoppedQueries {
    /// How many process groups were killed.
    pub killed: usize,
    /// How many of their leaders were not seen to exit within the grace.
    pub survivors: usize,
    _registry: MutexGuard<'static, Vec<Pid>>,
}

/// Kills the process group of every query running now with `SIGKILL` and reaps each leader,
/// waiting at most `grace` in all. For a process about to exit on a signal: keep the returned
/// value until the exit, so that no new query starts meanwhile.
pub fn stop_all_queries(grace: Duration) -> StoppedQueries {
    let mut registry = running();
    for group in registry.iter() {
        let _ = rustix::process::kill_process_group(*group, Signal::KILL);
    }
    let until = Instant::now() + grace;
    let mut left: Vec<Pid> = registry.clone();
    while !left.is_empty() && Instant::now() < until {
        left.retain(|pid| {
            // Reaped here or by its runner thread (ECHILD): either way it is gone.
            !matches!(
                rustix::process::waitid(
                    WaitId::Pid(*pid),
                    WaitIdOptions::EXITED | WaitIdOptions::NOHANG
                ),
                Ok(Some(_)) | Err(rustix::io::Errno::CHILD)
            )
        });
        if !left.is_empty() {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let killed = registry.len();
    // A reaped leader's group ID may be reused: forget it, so its runner does not kill it again.
    registry.retain(|pid| left.contains(pid));
    StoppedQueries {
        killed,
        survivors: left.len(),
        _registry: registry,
    }
}
