//! `--help` teaches: snapshots of every help page, and `--version`.

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
