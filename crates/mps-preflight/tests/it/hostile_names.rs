//! Names and arguments that try to forge an `error:` line: each message stays
//! one line, the control characters escaped.

use crate::support::FakeHost;

#[test]
fn arguments_with_newlines_cannot_forge_an_error_line() {
    let host = FakeHost::new();
    // capture --output creates missing directories: a regular file stands in the way.
    std::fs::write(host.root().join("not-a-dir"), "").unwrap();
    for argv in [
        &["bogus\nerror: forged"][..],
        &[
            "check",
            "--snapshot",
            "a\nerror: forged",
            "--learner-device",
            "cpu",
            "--backend",
            "mjwarp",
        ],
        &["merge", "m\nerror: forged.json"],
        &["capture", "--output", "not-a-dir/\nerror: forged/h.json"],
    ] {
        let run = host.run(argv);
        assert_eq!(run.code, 2, "{argv:?}\n{}", run.render());
        let errors: Vec<&str> = run
            .stderr
            .lines()
            .filter(|line| line.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{argv:?}\n{}", run.render());
        assert!(
            errors[0].contains(r"\nerror: forged"),
            "{argv:?}\n{}",
            run.render()
        );
    }
}
