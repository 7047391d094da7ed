//! The reference module's test seam: host queries sent through a Python `run_command` instead
//! of spawned by mps-host's process runner.

use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

use mps_host::{DEFAULT_OUTPUT_CAP, Query, Runner};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sharing_policy::QueryRecord;

use crate::reply::{self, Ending, Reply};

/// How long past a query's deadline a `run_command` may take to return (`subprocess.run` kills
/// its child at the deadline, then reaps it) before the query is recorded as timed out.
const RETURN_GRACE: Duration = Duration::from_millis(500);

/// Runs each [`Query`] by calling `call(argv, stdin, env_set, env_removed, timeout)` (the
/// compat layer's adapter around the caller's `run_command`), which answers
/// `(kind, code, stdout, stderr, error)`. Only the probe's queries are ever sent: read-only
/// `sharing_policy::ReadOnlyCommand`s to the daemon, and the `nvidia-smi` table query.
///
/// The call runs on a thread of its own and is waited for until the query's deadline (plus
/// [`RETURN_GRACE`]): a callable that keeps running past it is recorded as timed out and
/// left to finish on its own, so the probe stays bounded in time.
pub(crate) struct PyRunner {
    call: Py<PyAny>,
}

impl PyRunner {
    pub(crate) fn new(call: Py<PyAny>) -> Self {
        Self { call }
    }

    fn ask(call: &Py<PyAny>, py: Python<'_>, query: &Query) -> PyResult<Reply> {
        let argv: Vec<&str> = std::iter::once(query.program.as_str())
            .chain(query.args.iter().map(String::as_str))
            .collect();
        let env_set = PyDict::new(py);
        for (name, value) in &query.env {
            env_set.set_item(name, PyBytes::new(py, value.as_bytes()))?;
        }
        let answer = call.bind(py).call1((
            argv,
            &query.stdin,
            env_set,
            &query.env_removed,
            query.timeout.as_secs_f64(),
        ))?;
        let (kind, code, stdout, stderr, error): (String, i64, Vec<u8>, Vec<u8>, String) =
            answer.extract()?;
        let ending = match kind.as_str() {
            "exited" => Ending::Exited(code),
            "timed_out" => Ending::TimedOut,
            _ => Ending::Failed(error),
        };
        Ok(Reply {
            ending,
            stdout,
            stderr,
        })
    }
}

impl Runner for PyRunner {
    fn run(&self, query: &Query) -> QueryRecord {
        let started = Instant::now();
        let (sender, receiver) = mpsc::channel();
        let call = Python::attach(|py| self.call.clone_ref(py));
        let asked = query.clone();
        let spawned = std::thread::Builder::new()
            .name("mps-preflight-run-command".to_owned())
            .spawn(move || {
                let reply = Python::attach(|py| Self::ask(&call, py, &asked));
                // The receiver is gone when the deadline passed first: nothing is waiting.
                let _ = sender.send(reply);
            });
        let reply = match spawned.map(|_| receiver.recv_timeout(query.timeout + RETURN_GRACE)) {
            Ok(Ok(Ok(reply))) => reply,
            Ok(Ok(Err(err))) => {
                silent(Ending::Failed(format!("run_command adapter failed: {err}")))
            }
            Ok(Err(_)) => silent(Ending::TimedOut),
            Err(err) => silent(Ending::Failed(format!(
                "cannot start a thread for run_command: {err}"
            ))),
        };
        query.record(
            reply::outcome(&reply, DEFAULT_OUTPUT_CAP),
            started.elapsed(),
        )
    }
}

/// The reference's drop-in. The reference calls `run_command` on the
/// calling thread, one query after the other, and trusts it to honour the `timeout` it passes;
/// so does this runner, which starts no thread (starting threads and waking them across CPUs
/// made the drop-in 1.75 times slower than the reference, BENCHMARKS.md). What it adds: a reply that comes back after the
/// deadline and its grace is recorded as timed out, never read; and an exception that is not
/// an `Exception` (Ctrl-C's `KeyboardInterrupt`, `SystemExit`) is kept, no later query is
/// made, and the caller raises it once the observation returns.
pub(crate) struct CallingThreadRunner {
    call: Py<PyAny>,
    interrupt: Mutex<Option<PyErr>>,
}

impl CallingThreadRunner {
    pub(crate) fn new(call: Py<PyAny>) -> Self {
        Self {
            call,
            interrupt: Mutex::new(None),
        }
    }

    /// The exception that ended a call and must reach the caller, if one did.
    pub(crate) fn take_interrupt(&self) -> Option<PyErr> {
        lock(&self.interrupt).take()
    }

    fn reply(&self, query: &Query) -> Reply {
        if lock(&self.interrupt).is_some() {
            return silent(Ending::Failed(
                "interrupted before run_command was called".to_owned(),
            ));
        }
        let started = Instant::now();
        Python::attach(|py| match PyRunner::ask(&self.call, py, query) {
            Ok(_) if started.elapsed() > query.timeout + RETURN_GRACE => silent(Ending::TimedOut),
            Ok(reply) => reply,
            Err(err) if !err.is_instance_of::<PyException>(py) => {
                *lock(&self.interrupt) = Some(err);
                silent(Ending::Failed("interrupted".to_owned()))
            }
            Err(err) => silent(Ending::Failed(format!("run_command adapter failed: {err}"))),
        })
    }
}

impl Runner for CallingThreadRunner {
    fn run(&self, query: &Query) -> QueryRecord {
        let started = Instant::now();
        let reply = self.reply(query);
        query.record(
            reply::outcome(&reply, DEFAULT_OUTPUT_CAP),
            started.elapsed(),
        )
    }
}

/// A reply with nothing printed.
fn silent(ending: Ending) -> Reply {
    Reply {
        ending,
        stdout: Vec::new(),
        stderr: Vec::new(),
    }
}

/// The value behind `mutex`, even if a holder panicked (each is replaced whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
