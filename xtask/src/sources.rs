//! The source rules of `cargo xtask layers`, which `cargo metadata` cannot see:
//!
//! - no Rust source file of the repository is over [`MAX_LINES`] lines (split it by
//!   responsibility; the two sharing-policy test files that were over it when the rule came in
//!   have been split since, so there is no exception);
//! - the render modules of the command line ([`RENDER_MODULES`]) never name `mps_host` or
//!   `HostFacts` (they render the one decision, `sharing_policy::judge`, never raw facts): what
//!   they print comes from the one decision (`sharing_policy`), not from observing the host.
//!   The check reads the text, so it sees `use mps_host::…`, `mps_host::` paths and
//!   `extern crate mps_host`; a re-export through another module of the crate is not seen, and
//!   is for review to catch;
//! - mps-host ([`JUDGE_FREE_MODULES`]) never calls the judge (`sharing_policy::attest`,
//!   `validate`, `explain`, `judge`): it records what it saw, and a decision that steers what
//!   it observes next is handed in by the caller;
//! - no Rust or Python source and no Markdown file but `CHANGELOG.md` mentions an issue by its number
//!   (the word `issue` or `issues` in any case, then blanks, an optional `#` and a digit): a
//!   reader has no tracker to look it up in, so a comment says what the code does and why.
//!   The changelog may keep the numbers. The check reads one line at a time, so a number
//!   wrapped onto the next line is not seen.

use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a Rust source file may have.
pub(crate) const MAX_LINES: usize = 600;

/// The render modules of `crates/mps-preflight/src` (files, or directories of them) and the
/// names they may not use. They turn a verdict, evidence and findings into text (JSON, `--format
/// brief`, the Prometheus textfile, doctor's report, stdout/stderr and exit status).
const RENDER_MODULES: &[(&str, &[&str])] = &[
    (
        "crates/mps-preflight/src/brief.rs",
        &["mps_host", "HostFacts"],
    ),
    (
        "crates/mps-preflight/src/prom.rs",
        &["mps_host", "HostFacts"],
    ),
    (
        "crates/mps-preflight/src/report.rs",
        &["mps_host", "HostFacts"],
    ),
    (
        "crates/mps-preflight/src/output.rs",
        &["mps_host", "HostFacts"],
    ),
];

/// Why a render module may not name what it names.
const RENDER_RULE: &str = "a render module names `{name}`; render the decision (sharing_policy's verdict), not what mps-host observed";

/// The modules that observe and must never judge, and the judge's entry points they may not call.
const JUDGE_FREE_MODULES: &[(&str, &[&str])] = &[(
    "crates/mps-host/src",
    &[
        "sharing_policy::attest",
        "sharing_policy::attest_worded",
        "sharing_policy::validate",
        "sharing_policy::explain",
        "sharing_policy::judge",
    ],
)];

/// Why mps-host may not call the judge.
const JUDGE_FREE_RULE: &str = "mps-host calls `{name}`; it records what it saw, and a decision that steers the next observation is handed in by its caller";

/// Directories never walked: build output, VCS and tool state.
const SKIPPED_DIRS: &[&str] = &["target", "node_modules", "corpus", "artifacts"];

/// The one Markdown file that may name issues by number.
const ISSUE_LOG: &str = "CHANGELOG.md";

/// How deep the walk goes; the repository is far shallower.
const MAX_DEPTH: usize = 24;

/// Every source-rule violation under the workspace `root`.
pub(crate) fn violations(root: &Path) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    walk(root, 0, &mut files)?;
    files.sort();
    let mut found = Vec::new();
    for path in &files {
        let relative = relative_text(root, path);
        let text = read(path)?;
        found.extend(issue_violations(&relative, &text));
        if path.extension().is_some_and(|ext| ext == "rs") {
            found.extend(size_violation(&relative, &text));
        }
    }
    for (rules, why) in [
        (RENDER_MODULES, RENDER_RULE),
        (JUDGE_FREE_MODULES, JUDGE_FREE_RULE),
    ] {
        for (module, forbidden) in rules {
            found.extend(module_violations(root, &files, module, forbidden, why)?);
        }
    }
    Ok(found)
}

/// Each line of the Rust files under `module` that names one of `forbidden`; a module that is
/// gone is a violation too, so a rule never silently checks nothing.
fn module_violations(
    root: &Path,
    files: &[PathBuf],
    module: &str,
    forbidden: &[&str],
    why: &str,
) -> Result<Vec<String>, String> {
    let path = root.join(module);
    let module_files: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.starts_with(&path) && f.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    if module_files.is_empty() {
        return Ok(vec![format!(
            "module `{module}` is gone; update the rules in xtask/src/sources.rs"
        )]);
    }
    let mut found = Vec::new();
    for file in module_files {
        let text = read(file)?;
        found.extend(import_violations(
            &relative_text(root, file),
            &text,
            forbidden,
            why,
        ));
    }
    Ok(found)
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|err| format!("cannot read {}: {err}", path.display()))
}

fn relative_text(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The `.rs`, `.py` and `.md` files under `dir` (but [`ISSUE_LOG`]), skipping hidden directories and
/// [`SKIPPED_DIRS`].
fn walk(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("{} is nested too deep to walk", dir.display()));
    }
    let entries =
        fs::read_dir(dir).map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry
            .file_type()
            .map_err(|err| format!("cannot stat {}: {err}", path.display()))?;
        if kind.is_dir() {
            if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_ref()) {
                walk(&path, depth + 1, files)?;
            }
        } else if kind.is_file()
            && [".rs", ".py", ".md"]
                .iter()
                .any(|extension| name.ends_with(extension))
            && name != ISSUE_LOG
        {
            files.push(path);
        }
    }
    Ok(())
}

/// A file over [`MAX_LINES`].
fn size_violation(path: &str, text: &str) -> Option<String> {
    let lines = text.lines().count();
    (lines > MAX_LINES)
        .then(|| format!("{path} has {lines} lines, over {MAX_LINES}; split it by responsibility"))
}

/// Each line of `text` that mentions an issue by its number.
fn issue_violations(path: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| names_issue_number(line))
        .map(|(number, _)| {
            format!(
                "{path}:{}: names an issue by its number; say what the code does and why \
                 (only {ISSUE_LOG} keeps issue numbers)",
                number + 1
            )
        })
        .collect()
}

/// Whether `line` holds the word `issue` or `issues` (any case), then optional blanks and `#`,
/// then a digit.
fn names_issue_number(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.match_indices("issue").any(|(at, word)| {
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
        let rest = &lower[at + word.len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let rest = rest.trim_start_matches([' ', '\t']);
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Each line of `text` (comments aside) that names one of `forbidden` as a whole identifier,
/// said with `why` (its `{name}` is the name found).
fn import_violations(path: &str, text: &str, forbidden: &[&str], why: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split_once("//").map_or(line, |(code, _)| code);
        for name in forbidden {
            if names(code, name) {
                found.push(format!(
                    "{path}:{}: {}",
                    number + 1,
                    why.replace("{name}", name)
                ));
            }
        }
    }
    found
}

/// Whether `code` holds `name` with no identifier character on either side.
fn names(code: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let before = code.get(..at).and_then(|s| s.chars().next_back());
        let after = code.get(at + name.len()..).and_then(|s| s.chars().next());
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_module_may_not_import_mps_host() {
        let forbidden = &["mps_host"];
        for code in [
            "use mps_host::capture;",
            "use mps_host;",
            "    let facts = mps_host::capture(&options);",
            "pub(crate) fn f(x: &::mps_host::Options) {}",
            "extern crate mps_host as host;",
            "use {sharing_policy::Evidence, mps_host::Options};",
        ] {
            assert_eq!(
                import_violations("brief.rs", code, forbidden, RENDER_RULE).len(),
                1,
                "{code}"
            );
        }
        for code in [
            "use sharing_policy::{Evidence, Finding};",
            "// mps_host observes; this module renders",
            "/// Unlike mps_host::capture, this reads nothing.",
            "let my_mps_host_count = 1;",
            "use crate::mps_hostile;",
        ] {
            assert_eq!(
                import_violations("brief.rs", code, forbidden, RENDER_RULE),
                Vec::<String>::new(),
                "{code}"
            );
        }
        let text = "//! Renders.\n\nuse sharing_policy::Evidence;\nuse mps_host::Options;\n";
        let found = import_violations(
            "crates/mps-preflight/src/prom.rs",
            text,
            forbidden,
            RENDER_RULE,
        );
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("crates/mps-preflight/src/prom.rs:4: "),
            "{}",
            found[0]
        );
    }

    #[test]
    fn mps_host_may_not_call_the_judge() {
        let forbidden = JUDGE_FREE_MODULES[0].1;
        let text = "fn f() {\n    if !sharing_policy::attest(&facts).worth_waiting() {}\n}\n";
        let found = import_violations(
            "crates/mps-host/src/attest.rs",
            text,
            forbidden,
            JUDGE_FREE_RULE,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with(
            "crates/mps-host/src/attest.rs:2: mps-host calls `sharing_policy::attest`"
        ));
        for code in [
            "let commands = sharing_policy::attest_settings_commands(&facts);",
            "use sharing_policy::{AttestFacts, ATTEST_SCHEMA};",
            "// sharing_policy::attest(facts) decides",
        ] {
            assert_eq!(
                import_violations("attest.rs", code, forbidden, JUDGE_FREE_RULE),
                Vec::<String>::new(),
                "{code}"
            );
        }
    }

    #[test]
    fn a_mention_of_an_issue_number_fails() {
        // Built from pieces, so that this file does not fail its own check.
        let issue = |rest: &str| format!("{}{rest}", "Issue");
        for line in [
            format!("/// {}", issue(" 20: the server's state.")),
            format!(
                "// the lock stays ({}).",
                issue(" 15, part 5").to_lowercase()
            ),
            format!("//! fake hosts ({}).", issue("s 12 and 13").to_lowercase()),
            format!("## Merge at fleet scale ({})", issue(" #14")),
            format!("    {}", issue("\t7").to_uppercase()),
        ] {
            let found = issue_violations("docs/a.md", &format!("# Title\n\n{line}\n"));
            assert_eq!(found.len(), 1, "{line}");
            assert!(
                found[0].starts_with("docs/a.md:3: names an issue"),
                "{}",
                found[0]
            );
        }
        for line in [
            "// Issues with the daemon's answer are reported as findings.",
            "/// See clap-rs/clap#6421: the issue is upstream.",
            "let tissue_2 = 1; // no issue here, 20 times",
            "misissue 4",
            "issue_20()",
        ] {
            assert_eq!(
                issue_violations("a.rs", line),
                Vec::<String>::new(),
                "{line}"
            );
        }
    }

    #[test]
    fn a_file_over_the_line_limit_fails() {
        let lines = |n: usize| "x\n".repeat(n);
        assert_eq!(size_violation("crates/a/src/b.rs", &lines(MAX_LINES)), None);
        let over = size_violation("crates/a/src/b.rs", &lines(MAX_LINES + 1));
        assert!(over.is_some_and(|message| message.contains("601 lines, over 600")));
    }

    /// The rules hold on this repository as it is (run by `cargo test`, and by `cargo xtask
    /// layers`).
    #[test]
    fn the_repository_follows_the_source_rules() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace root");
        assert_eq!(violations(root), Ok(Vec::new()));
    }

    #[test]
    fn the_walk_finds_rust_files_and_skips_target() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask sits in the workspace root");
        let mut files = Vec::new();
        walk(root, 0, &mut files).unwrap();
        assert!(files.iter().any(|f| f.ends_with("xtask/src/sources.rs")));
        assert!(
            files
                .iter()
                .any(|f| f.ends_with("crates/mps-preflight/src/brief.rs"))
        );
        assert!(
            files
                .iter()
                .any(|f| f.ends_with("crates/mps-preflight-py/tests/conftest.py")),
            "the Python sources are walked too"
        );
        assert!(!files.iter().any(|f| f.starts_with(root.join("target"))));
    }
}
