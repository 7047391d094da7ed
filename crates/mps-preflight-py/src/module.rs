//! `mps_preflight._native`: the functions the Python package wraps. Each answers with plain
//! Python objects (a tagged tuple, a `dict`); `python/mps_preflight/__init__.py` turns the tags
//! into its exceptions and its `Evidence` and `Finding` objects.
//!
//! The host is observed with the GIL released, so a launcher's other threads keep running
//! during a query's deadline; the reference's drop-in with a `run_command` calls it from the
//! calling thread instead, as the reference does.
#![allow(
    clippy::needless_pass_by_value,
    reason = "pyo3 extracts a function's arguments as owned values"
)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use mps_host::ProbeOptions;
use mps_preflight::front::{self, HiArgs, Param, Refused, Snapshot, Wording};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyTuple};
use sharing_policy::HostFacts;

use crate::convert;
use crate::policy;
use crate::runner::{CallingThreadRunner, PyRunner};
use crate::spec::Spec;

/// Observes this host without the GIL: through mps-host's process runner, or through the
/// caller's `run_command` adapter when one is given.
///
/// The observation runs on a thread of its own while this one waits with the GIL released,
/// taking it back every [`SIGNAL_POLL`] to let Python run its signal handlers. When one raises
/// (Ctrl-C's `KeyboardInterrupt`), every running query's process group is killed and reaped,
/// the observation is joined, and the exception propagates: no query outlives the call.
///
/// With `run_command` and `reference` (the reference's drop-in asks, for this request and
/// what its torch reported), the reference's own queries are sent through it
/// ([`crate::reference`]) from this thread, with the GIL, one after the other, as the
/// reference sends them ([`CallingThreadRunner`]).
fn observe(
    py: Python<'_>,
    options: &ProbeOptions,
    run_command: Option<Py<PyAny>>,
    reference: Option<(&sharing_policy::Request, &Spec)>,
) -> PyResult<HostFacts> {
    if let (Some(call), Some((request, spec))) = (&run_command, reference) {
        // The reference's queries, one after the other on this thread, as the reference
        // sends them: no observation thread.
        let runner = CallingThreadRunner::new(call.clone_ref(py));
        let witness = Some(spec.cuda_device_uuids.clone()).filter(|uuids| !uuids.is_empty());
        let env = mps_host::read_env();
        let facts = crate::reference::capture(env, &runner, options, request, witness);
        return runner.take_interrupt().map_or(Ok(facts), Err);
    }
    let runner = run_command.map(PyRunner::new);
    let capture = |runner: &Option<PyRunner>| match runner {
        None => mps_host::capture(options),
        Some(runner) => {
            // As `mps_host::capture` does: the host name is no query's answer.
            let mut facts = mps_host::capture_with(mps_host::read_env(), runner, options);
            facts.host_name = Some(mps_host::read_host_name());
            facts
        }
    };
    std::thread::scope(|scope| {
        let (done, mut finished) = std::sync::mpsc::channel();
        let runner = std::sync::Arc::new(runner);
        let shared = std::sync::Arc::clone(&runner);
        let spawned = std::thread::Builder::new()
            .name("mps-preflight-observe".to_owned())
            .spawn_scoped(scope, move || {
                let facts = capture(&shared);
                let _ = done.send(());
                facts
            });
        // No thread (a process limit, RLIMIT_NPROC): observe on this one,
        // without the GIL. Each query keeps its deadline, but Ctrl-C waits for them.
        let Ok(observation) = spawned else {
            return Ok(py.detach(|| capture(&runner)));
        };
        loop {
            // The receiver travels into the GIL-free closure and back (it is not `Sync`).
            let (receiver, waited) = py.detach(move || {
                let waited = finished.recv_timeout(SIGNAL_POLL);
                (finished, waited)
            });
            finished = receiver;
            let ended = waited.is_ok();
            if ended || observation.is_finished() {
                return observation
                    .join()
                    .map_err(|_| PyRuntimeError::new_err("the host observation panicked"));
            }
            if let Err(interrupt) = py.check_signals() {
                // Kill again until the observation ends: a query whose child started just
                // before the signal may register only after the first kill, and a later step
                // may start another one.
                let _ = py.detach(|| {
                    while !observation.is_finished() {
                        drop(mps_host::stop_all_queries(REAP_GRACE));
                        std::thread::sleep(SIGNAL_POLL / 10);
                    }
                    observation.join()
                });
                return Err(interrupt);
            }
        }
    })
}

/// How often a waiting observation lets Python handle a signal.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// The longest an interrupted observation waits for its killed queries to be reaped.
const REAP_GRACE: Duration = Duration::from_millis(300);

/// The snapshot named by `path` or given as JSON `text`, with the call's learner UUID (when
/// given) replacing the recorded one, as the CLI's `check --learner-uuid` does.
fn load(spec: &Spec, path: Option<&PathBuf>, text: Option<&String>) -> Result<HostFacts, String> {
    let source = match (path, text) {
        (Some(path), _) => Snapshot::Path(path),
        (None, Some(text)) => Snapshot::Text(text),
        (None, None) => return Err("no snapshot given".to_owned()),
    };
    front::snapshot_facts(source, spec.learner_uuid.as_deref())
}

/// The request, and what `probe` observes for it: the front end's one conversion.
fn options(spec: &Spec) -> PyResult<HiArgs> {
    Ok(spec.low().map_err(PyValueError::new_err)?.to_high())
}

/// `probe`: observe, then validate. `("ok", evidence)` or `("rejected", code, message, findings)`.
#[pyfunction]
#[pyo3(signature = (spec, run_command=None))]
fn probe(
    py: Python<'_>,
    spec: Spec,
    run_command: Option<Py<PyAny>>,
) -> PyResult<Bound<'_, PyTuple>> {
    let HiArgs { request, probe } = options(&spec)?;
    let reference = spec.compat.then_some((&request, &spec));
    let mut facts = observe(py, &probe, run_command, reference)?;
    if spec.compat && facts.cuda_device_uuids.is_none() && !spec.cuda_device_uuids.is_empty() {
        // The drop-in's torch, on this project's own queries: what it reports proves index
        // order for its indices there too.
        facts.cuda_device_uuids = Some(spec.cuda_device_uuids.clone());
    }
    convert::verdict(py, &policy::judge(&request, &facts))
}

/// `check`: validate against a snapshot. As `probe`, or `("snapshot", message)`.
#[pyfunction]
#[pyo3(signature = (spec, *, path=None, text=None))]
fn check(
    py: Python<'_>,
    spec: Spec,
    path: Option<PathBuf>,
    text: Option<String>,
) -> PyResult<Bound<'_, PyTuple>> {
    let request = options(&spec)?.request;
    match load(&spec, path.as_ref(), text.as_ref()) {
        Ok(facts) => convert::verdict(py, &policy::judge(&request, &facts)),
        Err(message) => convert::failure(py, "snapshot", &message),
    }
}

/// `doctor`: one verdict's findings, warnings and evidence ([`front::diagnose`]).
/// `("ok", findings, evidence or None, warnings)` or `("snapshot", message)`. Without a
/// snapshot it observes this host.
#[pyfunction]
#[pyo3(signature = (spec, *, path=None, text=None))]
fn doctor(
    py: Python<'_>,
    spec: Spec,
    path: Option<PathBuf>,
    text: Option<String>,
) -> PyResult<Bound<'_, PyTuple>> {
    let HiArgs { request, probe } = options(&spec)?;
    let facts = if path.is_none() && text.is_none() {
        observe(py, &probe, None, None)?
    } else {
        match load(&spec, path.as_ref(), text.as_ref()) {
            Ok(facts) => facts,
            Err(message) => return convert::failure(py, "snapshot", &message),
        }
    };
    // One decision: a valid request has no finding, a rejected one no evidence.
    let diagnosis = front::diagnose(&request, &facts);
    let evidence = match &diagnosis.evidence {
        Some(evidence) => Some(convert::evidence(py, evidence)?),
        None => None,
    };
    (
        "ok",
        convert::findings(py, &diagnosis.findings)?,
        evidence,
        convert::findings(py, &diagnosis.warnings)?,
    )
        .into_pyobject(py)
}

/// `capture`: this host's raw facts, as the `dict` of the CLI's snapshot JSON.
#[pyfunction]
#[pyo3(signature = (learner_uuid, timeout, run_command=None))]
fn capture(
    py: Python<'_>,
    learner_uuid: Option<String>,
    timeout: f64,
    run_command: Option<Py<PyAny>>,
) -> PyResult<Bound<'_, PyAny>> {
    let options = ProbeOptions {
        timeout: front::deadline(timeout).map_err(PyValueError::new_err)?,
        learner_uuid,
        observe_cuda: true,
        ..ProbeOptions::default()
    };
    let facts = observe(py, &options, run_command, None)?;
    let value = serde_json::to_value(&facts)
        .map_err(|err| PyRuntimeError::new_err(format!("cannot encode the snapshot: {err}")))?;
    convert::to_py(py, &value)
}

/// `write_manifest`: the CLI's atomic manifest write. `("ok",)`, `("manifest", message)`, or
/// `("evidence", message)` when `evidence_json` is not evidence.
#[pyfunction]
fn write_manifest<'py>(
    py: Python<'py>,
    path: PathBuf,
    evidence_json: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let evidence = serde_json::from_str(evidence_json)
        .map_err(|err| err.to_string())
        .and_then(|value| sharing_manifest::evidence_from_json(&value));
    let evidence = match evidence {
        Ok(evidence) => evidence,
        Err(message) => return convert::failure(py, "evidence", &message),
    };
    // Judged before the write, as the CLI does: the one error shape ends with the file's state.
    let state = sharing_manifest::FileState::before_writing(&path);
    match py.detach(|| sharing_manifest::record_in_manifest(&path, &evidence)) {
        Ok(()) => ("ok",).into_pyobject(py),
        Err(err) => convert::failure(py, "manifest", &format!("{err}; {state}")),
    }
}

/// `merge`: the per-rank check of one run. `("ok", report)` or `("manifest", message)`.
#[pyfunction]
fn merge(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Bound<'_, PyTuple>> {
    let mut inputs = Vec::with_capacity(paths.len());
    for path in &paths {
        match sharing_manifest::read_json_file(path) {
            Ok(value) => inputs.push((path.display().to_string(), value)),
            Err(err) => return convert::failure(py, "manifest", &err.to_string()),
        }
    }
    let report = sharing_manifest::merge(&inputs);
    ("ok", convert::to_py(py, &report.to_json())?).into_pyobject(py)
}

/// The compat layer's `resolve_mps_visibility_entries`: the `nvidia-smi` table query (the
/// reference's own, through an injected `run_command`, followed by the models query where it
/// shows several GPUs and the order is not `PCI_BUS_ID`; this project's, run by the process
/// runner, without one), then the entries are rewritten by gpu-uuid's `mps_visibility_entries`
/// and index order is checked by the policy's rule, as `visibility` does. Messages name the
/// entries, as the reference's do. `("ok", entries)` or `("rejected", code, message, [])`.
#[pyfunction]
#[pyo3(signature = (mask, run_command, timeout))]
fn visibility_with<'py>(
    py: Python<'py>,
    mask: &str,
    run_command: Option<Py<PyAny>>,
    timeout: f64,
) -> PyResult<Bound<'py, PyTuple>> {
    let rejected = |message: String| ("rejected", VISIBILITY_CODE, message, Vec::<String>::new());
    match gpu_uuid::mps_visibility_entries(mask, None) {
        Ok(entries) => return ("ok", entries).into_pyobject(py),
        Err(gpu_uuid::VisibilityError::NoTable { .. }) => {} // indices: the table is needed
        Err(err) => return rejected(err.to_string()).into_pyobject(py),
    }
    let timeout = front::deadline(timeout).map_err(PyValueError::new_err)?;
    let env = mps_host::read_env();
    let tables = if let Some(run_command) = run_command {
        let runner = PyRunner::new(run_command);
        reference_tables(py, &runner, &env, timeout)
    } else {
        let query = mps_host::gpu_query(timeout);
        let (record, _) =
            py.detach(|| mps_host::run_gpu_query(&mps_host::ProcessRunner::default(), &query));
        sharing_policy::host_gpu_table(&record).map(|table| {
            let doubt = (!sharing_policy::index_order_trusted(&env, &table)).then(|| {
                let names: Vec<&str> = table.rows().iter().map(|row| row.name.as_str()).collect();
                format!("the host GPUs are different models ({})", names.join(", "))
            });
            (table, doubt)
        })
    };
    let (table, doubt) = match tables {
        Ok(tables) => tables,
        Err(why) => {
            let what = match gpu_uuid::mps_visibility_entries(mask, None) {
                Err(err) => reference_unresolved(&err),
                Ok(_) => String::new(),
            };
            return rejected(format!("{what} (the table is unavailable because {why})"))
                .into_pyobject(py);
        }
    };
    let entries = match gpu_uuid::mps_visibility_entries(mask, Some(&table)) {
        Ok(entries) => entries,
        Err(err) => return rejected(reference_unresolved(&err)).into_pyobject(py),
    };
    if let Some(why) = doubt {
        let order = env.cuda_device_order.as_ref().map_or_else(
            || "CUDA_DEVICE_ORDER is unset".to_owned(),
            |order| {
                format!(
                    "CUDA_DEVICE_ORDER={}",
                    sharing_policy::quote_name(order.as_bytes())
                )
            },
        );
        return rejected(format!(
            "CUDA_VISIBLE_DEVICES entries {mask:?} select GPUs by index, but index order cannot be trusted on this host: {why}, and {order}, so CUDA's device order may differ from nvidia-smi's. Set CUDA_DEVICE_ORDER=PCI_BUS_ID, or write the entries as `GPU-` UUIDs from `nvidia-smi -L`"
        ))
        .into_pyobject(py);
    }
    ("ok", entries).into_pyobject(py)
}

/// The reference's GPU table through the caller's `run_command`, and why index order is in
/// doubt on it, if it is. Where it shows more than one GPU and `CUDA_DEVICE_ORDER` is not
/// `PCI_BUS_ID`, the models query follows ([`crate::reference::models_query`]): GPUs of one
/// model are numbered alike by CUDA and `nvidia-smi`.
fn reference_tables(
    py: Python<'_>,
    runner: &PyRunner,
    env: &sharing_policy::EnvFacts,
    timeout: Duration,
) -> Result<(gpu_uuid::GpuTable, Option<String>), sharing_policy::HostTableError> {
    let run = |query: mps_host::Query| py.detach(|| mps_host::Runner::run(runner, &query));
    let record = run(crate::reference::gpu_query(timeout));
    let (table, doubt) = sharing_policy::reference_gpu_table(env, &record, None)?;
    if doubt.is_none() {
        return Ok((table, doubt));
    }
    let models = run(crate::reference::models_query(timeout));
    sharing_policy::reference_gpu_table(env, &record, Some(&models))
}

/// The reference's message for an index entry with no host UUID, word for word, then what was
/// found: the drop-in speaks the reference's words.
fn reference_unresolved(err: &gpu_uuid::VisibilityError) -> String {
    use gpu_uuid::VisibilityError::{NoHostUuid, NoTable};
    let (NoTable { entry, .. } | NoHostUuid { entry, .. }) = err else {
        return err.to_string();
    };
    format!(
        "training.cuda_process_sharing='mps' could not resolve CUDA_VISIBLE_DEVICES entry {} to a host GPU UUID; MPS clients require UUID visibility entries. Check nvidia-smi --query-gpu=index,uuid --format=csv,noheader. Found: {err}.",
        sharing_policy::quote_name(entry.as_bytes())
    )
}

/// The code of a `visibility` rejection.
const VISIBILITY_CODE: &str = front::VISIBILITY_CODE;

/// The CUDA device index a device string names, as the validator reads it
/// (`sharing_policy::cuda_index`); `None` for anything else. The drop-in asks the caller's
/// torch about these indices only.
#[pyfunction]
fn cuda_index(device: &str) -> Option<u32> {
    sharing_policy::cuda_index(device)
}

/// The comparison token of a GPU UUID (upper case, no `GPU-`, no dashes), as the reference's
/// `canonicalize_gpu_uuid`.
#[pyfunction]
fn canonicalize_gpu_uuid(value: &str) -> String {
    gpu_uuid::canonicalize_gpu_uuid(value)
}

/// The command line: `mps_preflight::run_status` on `argv` (program name first), without
/// the GIL. Returns the exit status.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| mps_preflight::run_status(argv))
}

/// `visibility`: the front end's rewrite ([`front::visibility`]) in the native API's words,
/// without the GIL. `("ok", mask)` or `("rejected", code, message, [])`.
#[pyfunction]
#[pyo3(signature = (mask, timeout))]
fn visibility(py: Python<'_>, mask: Option<String>, timeout: f64) -> PyResult<Bound<'_, PyTuple>> {
    let timeout = front::rounded_deadline(timeout).map_err(PyValueError::new_err)?;
    let visible = py.detach(|| front::visibility(mask.as_deref(), timeout, Wording::Python));
    match visible {
        Ok(visible) => ("ok", visible.mask).into_pyobject(py),
        Err(refused) => refusal(py, refused, false),
    }
}

/// `attest`: the front end's attestation ([`front::attest`]) in the native API's words,
/// without the GIL. `("ok", attestation)`, `("rejected", code, message, [])` (the first code,
/// every message), or `("input", message)`. The PIDs and the wait are checked here, in Rust.
#[pyfunction]
#[pyo3(signature = (learner_pid, collector_pid, *, wait, timeout, manifest=None))]
fn attest<'py>(
    py: Python<'py>,
    learner_pid: Bound<'py, PyAny>,
    collector_pid: Bound<'py, PyAny>,
    wait: Bound<'py, PyAny>,
    timeout: f64,
    manifest: Option<PathBuf>,
) -> PyResult<Bound<'py, PyTuple>> {
    let spec = front::AttestSpec {
        learner: pid(&learner_pid, Param::LearnerPid)?,
        collector: pid(&collector_pid, Param::CollectorPid)?,
        wait: front::wait(wait.extract()?, &wait.repr()?.to_string(), Wording::Python)
            .map_err(PyValueError::new_err)?,
        timeout: front::rounded_deadline(timeout).map_err(PyValueError::new_err)?,
        manifest,
    };
    match py.detach(|| front::attest(&spec, Wording::Python)) {
        Ok(attestation) => {
            let value = serde_json::to_value(&attestation).map_err(|err| {
                PyRuntimeError::new_err(format!("cannot encode the attestation: {err}"))
            })?;
            ("ok", convert::to_py(py, &value)?).into_pyobject(py)
        }
        Err(refused) => refusal(py, refused, true),
    }
}

/// A PID argument: an `int` (never a `bool`) the front end accepts as a PID.
fn pid(value: &Bound<'_, PyAny>, param: Param) -> PyResult<sharing_policy::Pid> {
    let number = if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        None
    } else {
        value.extract::<i64>().ok()
    };
    front::pid(number, &value.repr()?.to_string(), param, Wording::Python)
        .map_err(PyValueError::new_err)
}

/// A refusal as the Python side raises it: `("rejected", first code, every message joined by
/// `; `, [])` (each message after its code when `coded`, as attest's lines are), or
/// `("input", message)` (a `ValueError`).
fn refusal(py: Python<'_>, refused: Refused, coded: bool) -> PyResult<Bound<'_, PyTuple>> {
    match refused {
        Refused::Rejected(errors) => {
            let code = errors.first().map_or("", |(code, _)| *code);
            let messages: Vec<String> = errors
                .iter()
                .map(|(code, message)| {
                    if coded {
                        format!("{code}: {message}")
                    } else {
                        message.clone()
                    }
                })
                .collect();
            ("rejected", code, messages.join("; "), Vec::<String>::new()).into_pyobject(py)
        }
        Refused::Input(message) => convert::failure(py, "input", &message),
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(probe, module)?)?;
    module.add_function(wrap_pyfunction!(check, module)?)?;
    module.add_function(wrap_pyfunction!(doctor, module)?)?;
    module.add_function(wrap_pyfunction!(capture, module)?)?;
    module.add_function(wrap_pyfunction!(write_manifest, module)?)?;
    module.add_function(wrap_pyfunction!(merge, module)?)?;
    module.add_function(wrap_pyfunction!(visibility_with, module)?)?;
    module.add_function(wrap_pyfunction!(canonicalize_gpu_uuid, module)?)?;
    module.add_function(wrap_pyfunction!(cuda_index, module)?)?;
    module.add_function(wrap_pyfunction!(run_cli, module)?)?;
    module.add_function(wrap_pyfunction!(visibility, module)?)?;
    module.add_function(wrap_pyfunction!(attest, module)?)?;
    module.add("SCHEMA", sharing_policy::SCHEMA)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
