//! Reading `*.cases.json` files. Every case is checked when it is read: an unknown key, code or
//! evidence field, a snapshot that cannot be used, a request that is not a request: each is an
//! error naming the file and the case, never a case that silently passes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sharing_policy::{Code, EnvFacts, HostFacts, Request};

use super::{Unreadable, request};
use crate::{commands, snapshot};

/// The file suffix a folder's case files carry.
pub(crate) const SUFFIX: &str = ".cases.json";

/// One case file: where it is (as given) and its cases, in file order.
#[derive(Debug)]
pub(crate) struct CaseFile {
    pub(crate) path: PathBuf,
    pub(crate) cases: Vec<Case>,
}

/// A snapshot, a request, and what the policy must answer.
#[derive(Debug)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) facts: HostFacts,
    pub(crate) request: Request,
    pub(crate) expect: Expect,
}

/// The expected outcome.
#[derive(Debug, PartialEq)]
pub(crate) enum Expect {
    /// `validate` returns evidence whose `validated` is this, and whose keys include these values.
    Validated {
        validated: bool,
        evidence: Map<String, Value>,
    },
    /// `validate` rejects with this code.
    Rejected(Code),
}

/// The case files named by `paths`: a file as given, a folder's `*.cases.json` files in name
/// order (not its subfolders), and each folder that could not be listed or holds none (a suite
/// that runs nothing must not pass): those are reported, and the other paths still run.
pub(crate) fn case_files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Unreadable>) {
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        match folder_files(path) {
            Ok(found) => files.extend(found),
            Err(message) => unreadable.push(Unreadable {
                path: path.display().to_string(),
                message,
            }),
        }
    }
    (files, unreadable)
}

/// A folder's `*.cases.json` files, in name order; none is an error.
fn folder_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(path)
        .map_err(|err| format!("{}: cannot list the folder: {err}", path.display()))?;
    let mut found = Vec::new();
    let mut subfolders = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|err| format!("{}: cannot list the folder: {err}", path.display()))?;
        let name = entry.file_name();
        if name.to_str().is_some_and(|name| name.ends_with(SUFFIX)) {
            found.push(path.join(name));
        } else if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            subfolders.push(path.join(name));
        }
    }
    if found.is_empty() {
        // Say so when the cases are one level down: subfolders are not searched.
        subfolders.sort();
        let below: Vec<String> = subfolders
            .iter()
            .filter(|folder| folder_files_here(folder))
            .map(|folder| folder.display().to_string())
            .collect();
        let hint = if below.is_empty() {
            String::new()
        } else {
            format!(
                " (subfolders are not searched; these hold some: {})",
                below.join(", ")
            )
        };
        return Err(format!(
            "{}: no *{SUFFIX} file in this folder{hint}; name a case file or a folder that holds some",
            path.display()
        ));
    }
    found.sort();
    Ok(found)
}

/// Whether `folder` directly holds a `*.cases.json` file (bounded: one listing, no recursion).
fn folder_files_here(folder: &Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.ends_with(SUFFIX))
        })
    })
}

/// Reads and checks the case file at `path` (regular files only, size-capped).
pub(crate) fn load(path: &Path) -> Result<CaseFile, String> {
    let shown = path.display();
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    let mut top = object(value, "the case file")
        .map_err(|err| format!("{shown}: {err} (expected {{\"cases\": [...]}})"))?;
    top.remove("description");
    // Defaults for every case's request: a case's own keys win.
    let defaults = match top.remove("request") {
        None => None,
        Some(Value::Object(defaults)) => Some(defaults),
        Some(_) => {
            return Err(format!(
                "{shown}: the top-level \"request\" (defaults for every case's request) must be an object"
            ));
        }
    };
    let cases = match top.remove("cases") {
        Some(Value::Array(cases)) if !cases.is_empty() => cases,
        Some(Value::Array(_)) => return Err(format!("{shown}: \"cases\" is empty")),
        _ => {
            return Err(format!(
                "{shown}: expected {{\"cases\": [...]}}, a list of cases"
            ));
        }
    };
    no_other_keys(&top, "the case file").map_err(|err| format!("{shown}: {err}"))?;
    let directory = path.parent().unwrap_or_else(|| Path::new(""));
    let evidence_keys = evidence_keys();
    let mut names = BTreeSet::new();
    let mut loaded = Vec::with_capacity(cases.len());
    for (number, case) in cases.into_iter().enumerate() {
        let case = read_case(case, directory, &evidence_keys, defaults.as_ref()).map_err(
            |(name, err)| {
                let name =
                    name.map_or_else(|| format!("case {}", number + 1), |n| format!("case {n:?}"));
                format!("{shown}: {name}: {err}")
            },
        )?;
        if !names.insert(case.name.clone()) {
            return Err(format!(
                "{shown}: case {:?} appears twice; names must be unique",
                case.name
            ));
        }
        loaded.push(case);
    }
    Ok(CaseFile {
        path: path.to_owned(),
        cases: loaded,
    })
}

/// One case; the error carries the case's name when it has one.
fn read_case(
    value: Value,
    directory: &Path,
    evidence_keys: &[String],
    defaults: Option<&Map<String, Value>>,
) -> Result<Case, (Option<String>, String)> {
    let mut case = object(value, "a case").map_err(|err| (None, err))?;
    let name = match case.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        _ => return Err((None, "needs a \"name\" (a non-empty string)".to_owned())),
    };
    let fail = |err: String| (Some(name.clone()), err);
    case.remove("description");
    let args = request::from_json(with_defaults(case.remove("request"), defaults)).map_err(fail)?;
    let facts = match case.remove("snapshot") {
        Some(Value::String(file)) => snapshot::load(&directory.join(file)),
        Some(inline @ Value::Object(_)) => snapshot::from_value(inline, &"its inline snapshot"),
        _ => Err(
            "needs a \"snapshot\": a path relative to the case file, or a snapshot object"
                .to_owned(),
        ),
    }
    .map_err(fail)?;
    let expect = read_expect(case.remove("expect"), evidence_keys).map_err(fail)?;
    no_other_keys(&case, "a case").map_err(fail)?;
    Ok(Case {
        facts: commands::with_learner_uuid(facts, &args),
        request: args.to_request(),
        expect,
        name,
    })
}

/// A case's request over the file's defaults: each key the case sets replaces the default's.
/// A request that is not an object is left for [`request::from_json`] to refuse.
fn with_defaults(request: Option<Value>, defaults: Option<&Map<String, Value>>) -> Option<Value> {
    let Some(defaults) = defaults else {
        return request;
    };
    match request {
        None => Some(Value::Object(defaults.clone())),
        Some(Value::Object(own)) => {
            let mut merged = defaults.clone();
            merged.extend(own);
            Some(Value::Object(merged))
        }
        other => other,
    }
}

/// `{"validated": bool, "evidence": {...}?}` or `{"rejected": "<code>"}`.
fn read_expect(value: Option<Value>, evidence_keys: &[String]) -> Result<Expect, String> {
    const SHAPE: &str = "\"expect\" must be {\"validated\": true|false, \"evidence\": {...}} or {\"rejected\": \"<code>\"}";
    let mut expect = value.map_or_else(
        || Err(SHAPE.to_owned()),
        |value| object(value, "\"expect\""),
    )?;
    let outcome = match (expect.remove("validated"), expect.remove("rejected")) {
        (Some(Value::Bool(validated)), None) => {
            let evidence = match expect.remove("evidence") {
                None => Map::new(),
                Some(Value::Object(evidence)) => evidence,
                Some(_) => {
                    return Err(
                        "\"expect\".\"evidence\" must be an object of evidence keys".to_owned()
                    );
                }
            };
            if let Some(unknown) = evidence.keys().find(|key| !evidence_keys.contains(key)) {
                return Err(format!(
                    "{unknown:?} is not an evidence key; the keys are {}",
                    evidence_keys.join(", ")
                ));
            }
            Expect::Validated {
                validated,
                evidence,
            }
        }
        (None, Some(Value::String(code))) => Expect::Rejected(parse_code(&code)?),
        _ => return Err(SHAPE.to_owned()),
    };
    no_other_keys(&expect, "\"expect\"")?;
    Ok(outcome)
}

/// A code `sharing_policy` can reject with; anything else is a typo, not a pass.
fn parse_code(code: &str) -> Result<Code, String> {
    Code::ALL
        .into_iter()
        .find(|known| known.as_str() == code)
        .ok_or_else(|| {
            let known: Vec<&str> = Code::ALL.iter().map(|code| code.as_str()).collect();
            format!(
                "{code:?} is not a rejection code; the codes are {}",
                known.join(", ")
            )
        })
}

/// The evidence keys, in order, as `sharing_manifest` writes them: taken from real evidence,
/// so a key added to the evidence is known here without a change.
pub(super) fn evidence_keys() -> Vec<String> {
    let facts = HostFacts::unobserved("linux", EnvFacts::default());
    let request = Request::new(None, "cpu", None, sharing_policy::DEFAULT_SUPPORTED_BACKEND);
    sharing_policy::validate(&request, &facts)
        .map(|evidence| sharing_manifest::evidence_to_json(&evidence))
        .ok()
        .and_then(|json| json.as_object().map(|map| map.keys().cloned().collect()))
        .unwrap_or_default()
}

fn object(value: Value, what: &str) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(format!("{what} must be a JSON object")),
    }
}

fn no_other_keys(map: &Map<String, Value>, what: &str) -> Result<(), String> {
    match map.keys().next() {
        None => Ok(()),
        Some(key) => Err(format!("{what} has an unknown key {key:?}")),
    }
}
