//! `test`: policy suites over captured hosts. Each case of a `*.cases.json` file is
//! a snapshot, a request and the expected outcome; the same `sharing_policy::validate` as
//! `check` judges it, and nothing on this host is observed or run.
//!
//! Every case file is read and checked before any of its cases runs. A file that cannot be read
//! (or a folder with none) does not stop the others: each is one `ERROR` line and one `JUnit`
//! `<error>`, and the run is exit 2. Then one `ok`/`FAIL` line per case and `N passed, N failed`.
//! Names are printed with control characters escaped, so a case name cannot forge a line. The
//! `JUnit` file (`--junit`, its missing folders created) is written first, and always: a failed
//! write prints nothing on stdout, and no earlier run's report is ever left in its place.

mod cases;
mod junit;
mod request;
mod schema;

pub(crate) use schema::{CASES_SCHEMA, cases_schema};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use sharing_policy::{Evidence, Rejection};

use clap::Args;

use crate::args::paragraphs;
use crate::output::{Output, Status, one_line};
use cases::{Case, CaseFile, Expect};

/// The outcome of one case file: each case's name, its differences (none: passed) and how
/// long it took.
#[derive(Debug)]
pub(crate) struct FileResult {
    pub(crate) path: String,
    pub(crate) cases: Vec<(String, Vec<String>, Duration)>,
}

impl FileResult {
    pub(crate) fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|(_, diffs, _)| !diffs.is_empty())
            .count()
    }
}

/// A case file (or folder) that could not be read: where, and why (the message names it).
#[derive(Debug)]
pub(crate) struct Unreadable {
    pub(crate) path: String,
    pub(crate) message: String,
}

pub(crate) fn test(args: &TestArgs) -> Output {
    let (paths, mut unreadable) = cases::case_files(&args.paths);
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        match cases::load(path) {
            Ok(file) => files.push(file),
            Err(message) => unreadable.push(Unreadable {
                path: path.display().to_string(),
                message,
            }),
        }
    }
    let results: Vec<FileResult> = files.iter().map(run_file).collect();
    if let Some(path) = &args.junit
        && let Err(message) = write_junit(path, &junit::report(&results, &unreadable))
    {
        return Output::input(message);
    }
    let failed: usize = results.iter().map(FileResult::failures).sum();
    let total: usize = results.iter().map(|file| file.cases.len()).sum();
    let status = if !unreadable.is_empty() {
        Status::Input
    } else if failed > 0 {
        Status::Rejected
    } else {
        Status::Ok
    };
    let mut output = Output {
        status,
        stdout: report(&results, &unreadable, total - failed, failed),
        ..Output::default()
    };
    if failed > 0 {
        let noun = if total == 1 { "case" } else { "cases" };
        output.errors.push(format!(
            "{failed} of {total} {noun} failed (the report is on stdout)"
        ));
    }
    // Unreadable files first: they are why the run is exit 2.
    let reasons = unreadable.iter().map(|file| file.message.clone());
    output.errors.splice(0..0, reasons);
    output
}

/// Writes the `JUnit` report to `path`, creating its missing folders; the error says what
/// failed and the file's state.
fn write_junit(path: &Path, xml: &str) -> Result<(), String> {
    sharing_manifest::write_file(
        path,
        xml.as_bytes(),
        "the JUnit report to --junit",
        sharing_manifest::WriteOptions::new().create_parents(true),
    )
    .map_err(|err| format!("{err}, and no case result is printed"))
}

fn run_file(file: &CaseFile) -> FileResult {
    FileResult {
        path: file.path.display().to_string(),
        cases: file
            .cases
            .iter()
            .map(|case| {
                let started = Instant::now();
                let diffs = differences(case);
                (case.name.clone(), diffs, started.elapsed())
            })
            .collect(),
    }
}

/// One line per unreadable file and per case, then the counts. Paths, names and differences
/// are printed with control characters escaped: one line each, whatever a case file holds.
fn report(
    results: &[FileResult],
    unreadable: &[Unreadable],
    passed: usize,
    failed: usize,
) -> String {
    let mut text = String::new();
    for file in unreadable {
        let _ = writeln!(text, "ERROR {}", one_line(&file.message));
    }
    for file in results {
        let path = one_line(&file.path);
        for (name, differences, _) in &file.cases {
            let name = one_line(name);
            let _ = if differences.is_empty() {
                writeln!(text, "ok   {path}: {name}")
            } else {
                writeln!(
                    text,
                    "FAIL {path}: {name}: {}",
                    one_line(&differences.join("; "))
                )
            };
        }
    }
    let _ = write!(text, "{passed} passed, {failed} failed");
    if !unreadable.is_empty() {
        let _ = write!(text, ", {} unreadable", unreadable.len());
    }
    text.push('\n');
    text
}

/// How the outcome differs from the expectation, as `field: expected X, got Y` (empty: pass).
fn differences(case: &Case) -> Vec<String> {
    let result = sharing_policy::validate(&case.request, &case.facts);
    match (&case.expect, result) {
        (Expect::Rejected(code), Err(rejection)) if rejection.code() == *code => Vec::new(),
        (Expect::Rejected(code), Err(rejection)) => {
            vec![format!(
                "rejected: expected {code}, got {}",
                rejection.code()
            )]
        }
        (Expect::Rejected(code), got) => {
            vec![format!("rejected: expected {code}, got {}", outcome(&got))]
        }
        (Expect::Validated { validated, .. }, got @ Err(_)) => {
            vec![format!(
                "validated: expected {validated}, got {}",
                outcome(&got)
            )]
        }
        (
            Expect::Validated {
                validated,
                evidence,
            },
            Ok(got),
        ) => {
            let json = sharing_manifest::evidence_to_json(&got);
            let mut diffs = Vec::new();
            if got.validated != *validated {
                diffs.push(format!(
                    "validated: expected {validated}, got {}",
                    got.validated
                ));
            }
            for (key, expected) in evidence {
                let actual = json.get(key).unwrap_or(&Value::Null);
                if actual != expected {
                    diffs.push(format!("evidence.{key}: expected {expected}, got {actual}"));
                }
            }
            diffs
        }
    }
}

fn outcome(result: &Result<Evidence, Rejection>) -> String {
    match result {
        Ok(evidence) if evidence.validated => "validated".to_owned(),
        Ok(_) => "evidence with validated false".to_owned(),
        Err(rejection) => format!("rejected {}", rejection.code()),
    }
}

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Run policy suites offline: each case of a `*.cases.json` file is a captured snapshot, a request
and the expected outcome (validated, with some evidence fields, or rejected with a code). Like
`check`, it touches nothing on this host. One `ok`/`FAIL` line per case, then `N passed, N failed`.
A case naming a snapshot of another schema, an unknown code, request flag or evidence key is an
error (exit 2), never a pass. The format: docs/offline-testing.md.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    "Examples:
  mps-preflight test fixtures/cases
  mps-preflight test fleet/gpu-hosts.cases.json --junit reports/policy.xml

Exit status:
  0  every case passed
  1  a case failed; stdout has the report, stderr `error: N of M cases failed`
  2  usage error, or a case that cannot be read (missing file, not JSON, an
     unknown key, code or evidence field, a snapshot of another schema version,
     a JUnit file that cannot be written)"
        .to_owned()
}

#[derive(Debug, Args)]
pub(crate) struct TestArgs {
    /// A case file (`*.cases.json`), or a folder whose `*.cases.json` files are all run
    #[arg(value_name = "PATH", required = true)]
    pub(crate) paths: Vec<PathBuf>,

    #[arg(
        long,
        value_name = "FILE",
        help = "Also write the results as JUnit XML to FILE (atomically), for CI dashboards"
    )]
    pub(crate) junit: Option<PathBuf>,
}
