//! The reference module's test seam: host queries sent through a Python `run_command` instead
//! of spawned by mps-host's process runner.

use std::time::Instant;

use mps_host::{DEFAULT_OUTPUT_CAP, Query, Runner};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use sharing_policy::QueryRecord;

use crate::reply::{self, Ending, Reply};

/// Runs each [`Query`] by calling `call(argv, stdin, env_set, env_removed, timeout)` (the
/// compat layer's adapter around the caller's `run_command`), which answers
/// `(kind, code, stdout, stderr, error)`. Only the probe's queries are ever sent: read-only
/// `sharing_policy::ReadOnlyCommand`s to the daemon, and the `nvidia-smi` table query.
pub(crate) struct PyRunner {
    call: Py<PyAny>,
}

impl PyRunner {
    pub(crate) fn new(call: Py<PyAny>) -> Self {
        Self { call }
    }

    fn ask(&self, py: Python<'_>, query: &Query) -> PyResult<Reply> {
        let argv: Vec<&str> = std::iter::once(query.program.as_str())
            .chain(query.args.iter().map(String::as_str))
            .collect();
        let env_set = PyDict::new(py);
        for (name, value) in &query.env {
            env_set.set_item(name, PyBytes::new(py, value.as_bytes()))?;
        }
        let answer = self.call.bind(py).call1((
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
        let reply = Python::attach(|py| self.ask(py, query)).unwrap_or_else(|err| Reply {
            ending: Ending::Failed(format!("run_command adapter failed: {err}")),
            stdout: Vec::new(),
            stderr: Vec::new(),
        });
        query.record(
            reply::outcome(&reply, DEFAULT_OUTPUT_CAP),
            started.elapsed(),
        )
    }
}
