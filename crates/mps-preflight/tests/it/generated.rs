//! `completions` and `man`: generated from the clap definitions, checked by
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
    // No reference to a page that does not exist (every command is a
    // section of this one), and the examples are under EXAMPLES.
    for line in run.stdout.lines() {
        assert!(
            !line.contains("mps\\-preflight\\-") || !line.contains("(1)"),
            "a reference to a page that does not exist: {line}"
        );
    }
    assert!(!run.stdout.contains(".SH EXTRA"));
    assert!(run.stdout.contains(".SH EXAMPLES\nExamples:"));
    assert!(
        run.stdout
            .contains("\\fBmps\\-preflight probe\\fR (section MPS\\-PREFLIGHT PROBE below)")
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

/// What bash completes for `words` (the cursor on the last word), with the generated script
/// sourced: `COMPREPLY`, one word per line.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
    let current = words.last().copied().unwrap_or_default();
    let previous = words
        .get(words.len().saturating_sub(2))
        .copied()
        .unwrap_or_default();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; _mps__preflight mps-preflight '{current}' '{previous}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let output = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `clap_complete`'s bash script with a hyphenated binary name stopped at the
/// subcommand (its `case` arms were named `mps__subcmd__preflight__…`); flags and values
/// complete after the workaround.
#[test]
fn bash_completes_flags_and_values_after_the_subcommand() {
    let host = FakeHost::new();
    let run = host.run(&["completions", "bash"]);
    assert_eq!(run.code, 0, "{}", run.render());
    assert!(
        !run.stdout.contains("mps__subcmd__preflight"),
        "the broken state names are gone"
    );
    let script = host.root().join("mps-preflight.bash");
    std::fs::write(&script, &run.stdout).unwrap();
    assert_eq!(
        bash_completes(&script, &["mps-preflight", "check", "--sn"]),
        ["--snapshot"]
    );
    let kinds = bash_completes(&script, &["mps-preflight", "schema", ""]);
    for kind in ["snapshot", "evidence", "doctor", "merge", "attestation"] {
        assert!(
            kinds.iter().any(|word| word == kind),
            "schema <TAB>: {kinds:?}"
        );
    }
    let shells = bash_completes(&script, &["mps-preflight", "completions", "f"]);
    assert_eq!(shells, ["fish"]);
    let subcommands = bash_completes(&script, &["mps-preflight", "ch"]);
    assert_eq!(subcommands, ["check"]);
}

/// `clap_complete`'s fish script completes no positional value; the added lines do.
#[test]
fn fish_completes_positional_values() {
    let host = FakeHost::new();
    let run = host.run(&["completions", "fish"]);
    assert_eq!(run.code, 0, "{}", run.render());
    for (sub, value) in [
        ("schema", "snapshot"),
        ("schema", "attestation"),
        ("completions", "bash"),
        ("completions", "fish"),
    ] {
        let line = format!(
            "complete -c mps-preflight -n \"__fish_mps_preflight_using_subcommand {sub}\" -f -a \"{value}\""
        );
        assert!(run.stdout.contains(&line), "no {line}");
    }
}
