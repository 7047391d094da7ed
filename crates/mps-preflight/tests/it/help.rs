//! `--help` teaches: snapshots of every help page, no orphan line at any width it renders at,
//! and `--version`.

use crate::support::FakeHost;

#[test]
fn help_pages() {
    let host = FakeHost::new();
    let pages: &[&[&str]] = &[
        &["--help"],
        &["probe", "--help"],
        &["capture", "--help"],
        &["check", "--help"],
        &["visibility", "--help"],
        &["doctor", "--help"],
        &["merge", "--help"],
        &["test", "--help"],
        &["attest", "--help"],
    ];
    for args in pages {
        let run = host.run(args);
        assert_eq!(run.code, 0, "{args:?}");
        assert!(run.stderr.is_empty(), "{args:?}");
        insta::assert_snapshot!(format!("help {}", args.join(" ")), run.stdout);
    }
}

#[test]
fn short_help_and_help_subcommand() {
    let host = FakeHost::new();
    let short = host.run(&["-h"]);
    assert_eq!(short.code, 0);
    assert!(short.stdout.contains("Exit status:"), "{}", short.stdout);
    let via_help = host.run(&["help", "probe"]);
    assert_eq!(via_help.code, 0);
    assert_eq!(via_help.stdout, host.run(&["probe", "--help"]).stdout);
}

#[test]
fn version() {
    let host = FakeHost::new();
    for args in [&["--version"][..], &["-V"]] {
        let run = host.run(args);
        assert_eq!(run.code, 0, "{args:?}");
        // `mps-preflight 0.2.0 (3a62974, x86_64-unknown-linux-gnu)`: the commit is whatever
        // this checkout's HEAD is (or "unknown commit" outside git).
        let line = run.stdout.strip_suffix('\n').unwrap();
        let rest = line
            .strip_prefix(&format!("mps-preflight {} (", env!("CARGO_PKG_VERSION")))
            .unwrap_or_else(|| panic!("{line:?}"));
        let (commit, target) = rest.strip_suffix(')').unwrap().split_once(", ").unwrap();
        assert!(
            commit == "unknown commit"
                || (commit.len() == 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
            "{line:?}"
        );
        assert!(target.contains("-linux-"), "{line:?}");
    }
}

/// Every fixture an example names exists, so the examples can be pasted.
#[test]
fn examples_name_real_fixtures() {
    let host = FakeHost::new();
    let help = host.run(&["check", "--help"]).stdout;
    let mut named = 0;
    for word in help.split_whitespace() {
        let word = word.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
        if let Some(rest) = word
            .strip_prefix("fixtures/hosts/")
            .filter(|rest| !rest.contains('*'))
        {
            assert!(
                crate::support::fixtures_dir().join(rest).is_file(),
                "{word} does not exist"
            );
            named += 1;
        }
    }
    assert!(named > 0, "the check help names no fixture");
}

/// The subcommands whose `--help` is checked for orphan lines (every one but `help`).
const PAGES: &[&str] = &[
    "",
    "probe",
    "capture",
    "check",
    "visibility",
    "doctor",
    "merge",
    "test",
    "attest",
    "schema",
    "completions",
    "man",
];

/// The width hand-formatted blocks (examples, exit status) are written for: a terminal's and
/// `man`'s.
const AUTHORED_WIDTH: usize = 80;

/// Whether `line` starts an item of an exit-status block: `  0  …`, `  128+N  …`.
fn is_exit_item(line: &str) -> bool {
    line.strip_prefix("  ")
        .and_then(|rest| rest.split_once("  "))
        .is_some_and(|(code, _)| {
            !code.is_empty() && code.chars().all(|c| c.is_ascii_digit() || "+N".contains(c))
        })
}

/// The orphan lines of a help page rendered at `width` columns, each described:
/// - a line wider than `width` (clap would have wrapped it);
/// - inside a paragraph that clap fills (a description at column 0 or at an option's column
///   10 or more, not a list item), a line that is not full: the next word would have fitted,
///   so the break is a hard one in the text and leaves a short line wherever clap wraps first;
/// - in the exit-status block, a line that is neither an item (`  1  …`) nor its hanging
///   continuation (column 5): clap wrapped a line too long for `width` (`stderr` alone on a
///   line); and a continuation that was not needed at 80 columns (a ragged hand break).
fn orphans(page: &str, width: usize) -> Vec<String> {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let columns = |line: &str| line.chars().count();
    let first_word = |line: &str| columns(line.split_whitespace().next().unwrap_or_default());
    let mut found = Vec::new();
    let lines: Vec<&str> = page.lines().collect();
    for line in &lines {
        if columns(line) > width {
            found.push(format!("{} columns: {line}", columns(line)));
        }
    }
    for pair in lines.windows(2) {
        let (line, next) = (pair[0], pair[1]);
        let same_paragraph = (indent(line) == 0 || indent(line) >= 10)
            && !line.trim().is_empty()
            && !next.trim().is_empty()
            && indent(line) == indent(next)
            && !line.trim_start().starts_with('-')
            && !next.trim_start().starts_with('-');
        if same_paragraph && columns(line) + 1 + first_word(next) <= width {
            found.push(format!("a short line inside a paragraph:\n{line}\n{next}"));
        }
    }
    let exit_block = lines
        .iter()
        .skip_while(|line| **line != "Exit status:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty());
    // The line before, and whether it was clap's wrap (whose continuation is reported with it).
    let mut previous: Option<(&str, bool)> = None;
    for line in exit_block {
        let wrapped = if is_exit_item(line) {
            false
        } else if let (Some((before, wrapped_before)), 5) = (previous, indent(line)) {
            if !wrapped_before && columns(before) + 1 + first_word(line) <= AUTHORED_WIDTH {
                found.push(format!(
                    "a ragged break in the exit status:\n{before}\n{line}"
                ));
            }
            false
        } else {
            found.push(format!("wrapped into the exit status: {line:?}"));
            true
        };
        previous = Some((line, wrapped));
    }
    found
}

/// No help page leaves an orphan line, at 80 columns (what a terminal and `man` give) and at
/// the width it renders at without a terminal (100).
#[test]
fn help_has_no_orphan_lines_at_80_columns_or_without_a_terminal() {
    let mut narrow = FakeHost::new();
    narrow.env("COLUMNS", "80");
    let mut wide = FakeHost::new();
    wide.unset("COLUMNS");
    let mut failures = Vec::new();
    for (host, width) in [(&narrow, 80), (&wide, 100)] {
        for page in PAGES {
            let args: Vec<&str> = page.split_whitespace().chain(["--help"]).collect();
            let run = host.run(&args);
            assert_eq!(run.code, 0, "{args:?}\n{}", run.render());
            assert!(run.stdout.contains("Exit status:"), "{args:?}");
            for orphan in orphans(&run.stdout, width) {
                failures.push(format!("`{}` at {width} columns: {orphan}", args.join(" ")));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The check finds what it is for: `stderr` wrapped alone onto a line of the exit status, a
/// hard break inside a paragraph, and a ragged hand break.
#[test]
fn the_orphan_check_finds_wrapped_and_ragged_lines() {
    let wrapped = "Exit status:\n  1  rejected: an unmet prerequisite or an inconsistency; stdout is empty and\n  stderr\n     begins with `error: `";
    assert_eq!(orphans(wrapped, 80).len(), 1, "{:?}", orphans(wrapped, 80));
    let hard_break = "Print the evidence\nof the probe.\n";
    assert_eq!(orphans(hard_break, 80).len(), 1);
    let ragged = "Exit status:\n  1  an inconsistency: stdout is empty, and each finding is one\n     `error: <code>: <message>` line on stderr";
    assert_eq!(orphans(ragged, 80).len(), 1);
    let good = "Exit status:\n  0  fine\n  1  a finding blocks the request; the report is on stdout, and stderr says\n     `error: N unmet prerequisites block the request (the report is on stdout)`\n  128+N  ended by signal N";
    assert_eq!(orphans(good, 80), Vec::<String>::new());
}
