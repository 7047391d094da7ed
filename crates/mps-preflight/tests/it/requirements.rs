//! `--min-active-thread-percentage` and `--min-pinned-mem`: values the flags
//! refuse are usage errors, and a daemon default below them is a rejection naming the value.

use crate::support::{FakeHost, MPS_REQUEST, args, fixtures_dir};

#[test]
fn the_minimums_are_checked_against_the_daemon_s_defaults() {
    let host = FakeHost::new();
    let snapshot = |name: &str| fixtures_dir().join(name).display().to_string();
    let (limit, share) = (
        snapshot("v3-pinned-limit-512m.json"),
        snapshot("v3-no-pinned-limit.json"),
    );
    for (extra, code, needle) in [
        (
            vec!["--snapshot", &limit, "--min-pinned-mem", "512M"],
            0,
            "",
        ),
        (
            vec!["--snapshot", &limit, "--min-pinned-mem", "1g"],
            1,
            "is 512M, below the required 1G",
        ),
        (
            vec!["--snapshot", &share, "--min-pinned-mem", "900G"],
            0,
            "",
        ),
        (
            vec!["--snapshot", &share, "--min-active-thread-percentage", "33"],
            0,
            "",
        ),
        (
            vec![
                "--snapshot",
                &share,
                "--min-active-thread-percentage",
                "33.5",
            ],
            1,
            "is 33.0, below the required 33.5",
        ),
        (
            vec!["--snapshot", &share, "--min-active-thread-percentage", "0"],
            2,
            "--min-active-thread-percentage",
        ),
        (
            vec![
                "--snapshot",
                &share,
                "--min-active-thread-percentage",
                "12.25",
            ],
            2,
            "--min-active-thread-percentage",
        ),
        (
            vec!["--snapshot", &share, "--min-pinned-mem", "10GB"],
            2,
            "--min-pinned-mem",
        ),
    ] {
        let run = host.run(&args("check", &MPS_REQUEST, &extra));
        assert_eq!(run.code, code, "{extra:?}\n{}", run.render());
        assert!(run.stderr.contains(needle), "{extra:?}\n{}", run.render());
    }
}
