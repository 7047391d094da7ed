//! `test`: policy suites over captured hosts (issue 17). Each case of a `*.cases.json` file is
//! a snapshot, a request and the expected outcome; the same `sharing_policy::validate` as
//! `check` judges it, and nothing on this host is observed or run.
//!
//! Every case file is read and checked before any case runs, so an unreadable suite is exit 2
//! with nothing on stdout; then one `ok`/`FAIL` line per case and `N passed, N failed`.

mod cases;
mod junit;
mod request;

use std::fmt::Write as _;

use serde_json::Value;
use sharing_policy::{Evidence, Rejection};

use crate::cli::TestArgs;
use crate::output::{Output, Status};
use cases::{Case, CaseFile, Expect};

/// The outcome of one case file: each case's name and its differences (none: passed).
#[derive(Debug)]
pub(crate) struct FileResult {
    pub(crate) path: String,
    pub(crate) cases: Vec<(String, Vec<String>)>,
}

impl FileResult {
    pub(crate) fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|(_, diffs)| !diffs.is_empty())
            .count()
    }
}

pub(crate) fn test(args: &TestArgs) -> Output {
    let mut files = Vec::new();
    let loaded = cases::case_files(&args.paths).and_then(|paths| {
        paths
            .iter()
            .try_for_each(|path| cases::load(path).map(|file| files.push(file)))
    });
    if let Err(err) = loaded {
        return Output::input(err);
    }
    let results: Vec<FileResult> = files.iter().map(run_file).collect();
    let failed: usize = results.iter().map(FileResult::failures).sum();
    let total: usize = results.iter().map(|file| file.cases.len()).sum();
    let mut output = Output {
        status: if failed == 0 {
            Status::Ok
        } else {
            Status::Rejected
        },
        stdout: report(&results, total - failed, failed),
        ..Output::default()
    };
    if failed > 0 {
        let noun = if total == 1 { "case" } else { "cases" };
        output.errors.push(format!(
            "{failed} of {total} {noun} failed (the report is on stdout)"
        ));
    }
    if let Some(path) = &args.junit
        && let Err(err) = sharing_manifest::write_file(
            path,
            junit::report(&results).as_bytes(),
            "the JUnit report to --junit",
            sharing_manifest::WriteOptions::new(),
        )
    {
        output.status = Status::Input;
        output.errors.push(err.to_string());
    }
    output
}

fn run_file(file: &CaseFile) -> FileResult {
    FileResult {
        path: file.path.display().to_string(),
        cases: file
            .cases
            .iter()
            .map(|case| (case.name.clone(), differences(case)))
            .collect(),
    }
}

/// One line per case, then the counts.
fn report(results: &[FileResult], passed: usize, failed: usize) -> String {
    let mut text = String::new();
    for file in results {
        for (name, differences) in &file.cases {
            let _ = if differences.is_empty() {
                writeln!(text, "ok   {}: {name}", file.path)
            } else {
                writeln!(
                    text,
                    "FAIL {}: {name}: {}",
                    file.path,
                    differences.join("; ")
                )
            };
        }
    }
    let _ = writeln!(text, "{passed} passed, {failed} failed");
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
