//! Rust values as Python objects: JSON values, findings and verdicts.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value;
use sharing_policy::Finding;

use crate::policy::Verdict;

/// A JSON value as the Python object `json.loads` would make of it (objects keep key order).
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => flag.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(int), _) => int.into_pyobject(py)?.into_any(),
            (None, Some(int)) => int.into_pyobject(py)?.into_any(),
            (None, None) => number
                .as_f64()
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any(),
        },
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// The evidence as a `dict`: exactly the keys of the CLI's JSON, in its order.
pub(crate) fn evidence<'py>(
    py: Python<'py>,
    evidence: &sharing_policy::Evidence,
) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &sharing_manifest::evidence_to_json(evidence))
}

/// Findings as a list of `dict`s with `code`, `message`, `found`, `why`, `fix`.
pub(crate) fn findings<'py>(py: Python<'py>, findings: &[Finding]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for finding in findings {
        let dict = PyDict::new(py);
        dict.set_item("code", finding.code.as_str())?;
        dict.set_item("message", &finding.message)?;
        dict.set_item("found", &finding.found)?;
        dict.set_item("why", &finding.why)?;
        dict.set_item("fix", &finding.fix)?;
        list.append(dict)?;
    }
    Ok(list)
}

/// `("ok", evidence)` or `("rejected", code, message, findings)`.
pub(crate) fn verdict<'py>(py: Python<'py>, verdict: &Verdict) -> PyResult<Bound<'py, PyTuple>> {
    match verdict {
        Verdict::Valid(found) => ("ok", evidence(py, found)?).into_pyobject(py),
        Verdict::Rejected {
            code,
            message,
            findings: all,
        } => ("rejected", *code, message, findings(py, all)?).into_pyobject(py),
    }
}

/// `(kind, message)`: an input the Python side raises as its exception for `kind`.
pub(crate) fn failure<'py>(
    py: Python<'py>,
    kind: &str,
    message: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    (kind, message).into_pyobject(py)
}
