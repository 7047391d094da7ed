//! Names and arguments that try to forge an `error:` line (issue 15, part 3): each message stays
//! one line, the control characters escaped.

use crate::support::FakeHost;

#[test]
fn arguments_with_newlines_cannot_forge_an_error_line() {
    let host = FakeHost::new();
    // A regular file where a folder should be: `capture --output` cannot create it.
    std::fs::write(host.root().join("blocker"), "a file").unwrap();
    let output = format!(
        "{}/\nerror: forged.json",
        host.root().join("blocker").display()
    );
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
        &["capture", "--output", &output],
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
