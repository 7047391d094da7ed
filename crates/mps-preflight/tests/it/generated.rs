//! `completions` and `man` (issue 16 part 7): generated from the clap definitions, checked by
//! the real shells and groff where installed (`.ci/run` installs groff-base; bash is always
//! there).

use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::support::FakeHost;

const COMMANDS: [&str; 10] = [
    "probe",
    "capture",
    "check",
    "visibility",
    "doctor",
    "merge",
    "test",
    "schema",
    "completions",
    "man",
];

/// Runs `program args` with `input` on stdin; its exit status and stderr.
fn feed(program: &str, args: &[&str], input: &str) -> Option<(bool, String)> {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().ok()?;
    child.stdin.take()?.write_all(input.as_bytes()).ok()?;
    let output = child.wait_with_output().ok()?;
    Some((
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

fn installed(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status();
    found.is_ok_and(|status| status.success())
}

#[test]
fn completions_parse_in_their_shells_and_name_every_command() {
    let host = FakeHost::new();
    for (shell, check) in [
        ("bash", ["-n"]),
        ("zsh", ["-n"]),
        ("fish", ["--no-execute"]),
    ] {
        let run = host.run(&["completions", shell]);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{shell}");
        for command in COMMANDS {
            assert!(run.stdout.contains(command), "{shell}: no {command}");
        }
        assert!(run.stdout.contains("learner-device"), "{shell}: no flags");
        if installed(shell) {
            let (ok, stderr) = feed(shell, &check, &run.stdout).expect("the shell runs");
            assert!(ok, "{shell} rejects its script: {stderr}");
        } else if shell == "bash" {
            panic!("bash is not installed");
        } else {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {shell} -n: {shell} is not installed"
            );
        }
    }
    let run = host.run(&["completions", "powershell"]);
    assert_eq!(run.code, 2, "{}", run.render());
}

#[test]
fn the_man_page_has_every_command_and_groff_reads_it_cleanly() {
    let host = FakeHost::new();
    let run = host.run(&["man"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    assert!(
        run.stdout.starts_with(".ie") || run.stdout.contains(".TH mps-preflight 1"),
        "{}",
        &run.stdout[..200]
    );
    for command in COMMANDS {
        let section = format!(".SH \"MPS-PREFLIGHT {}\"", command.to_uppercase());
        assert!(run.stdout.contains(&section), "no section {section}");
    }
    assert!(
        run.stdout.contains("require\\-verified"),
        "the flags are in it"
    );
    let ci = std::env::var_os("CI").is_some();
    if installed("groff") {
        // -k: preconv reads the UTF-8 (…, ≥); -ww: every warning; -z: no output.
        let (ok, stderr) =
            feed("groff", &["-k", "-man", "-Tutf8", "-ww", "-z"], &run.stdout).expect("groff runs");
        assert!(ok && stderr.is_empty(), "groff: {stderr}");
    } else {
        assert!(!ci, "groff is not installed; .ci/run installs groff-base");
        let _ = writeln!(std::io::stderr(), "SKIPPED groff: install groff-base");
    }
}
