//! The process groups of the queries running now, so that an interrupted CLI can end them.
//! Each query runs in its own process group, so a Ctrl-C to the CLI's group
//! never reaches it: without this, a hung query outlives the CLI until its own deadline.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// The leaders (= group IDs) of the running queries' process groups.
static RUNNING: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

fn running() -> MutexGuard<'static, Vec<Pid>> {
    // The list stays meaningful even if a holder panicked: use it as it is.
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why no query may start in this process, once [`forbid_queries`] said so.
static FORBIDDEN: OnceLock<String> = OnceLock::new();

/// From now on, no query of this process starts: each is recorded as a spawn failure saying
/// `why`. For a process that could not install its signal handler (no thread under a process
/// limit): a query it started could outlive an interrupted run, one that never
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
    let child = spawn()?;
    running.extend(group_of(&child));
    Ok(child)
}

/// Kills `group`, unless [`stop_all_queries`] holds the registry (it has killed it, and may
/// have reaped its leader, after which the group ID could name someone else).
pub(crate) fn kill_group(group: Pid) {
    let running = running();
    if running.contains(&group) {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
}

/// Forgets `group` once its leader has been reaped.
pub(crate) fn forget(group: Pid) {
    running().retain(|pid| *pid != group);
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
