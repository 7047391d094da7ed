//! `--snapshot -` and `/dev/stdin`: a snapshot through a real pipe or FIFO
//! checks exactly as the same file does, with the file reader's size cap.

use std::io::Write as _;
use std::process::Stdio;

use crate::support::{FakeHost, MPS_REQUEST, args, fixtures_dir, spawn};

const HEALTHY: &str = "healthy-socket-with-server.json";

/// Runs `check --snapshot <name>` with `input` written into its stdin through a pipe.
fn check_piped(host: &FakeHost, name: &str, input: &[u8]) -> (i32, String, String) {
    let mut command = host.command(&args("check", &MPS_REQUEST, &["--snapshot", name]));
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut command);
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A writer thread: the child may stop reading (the cap) before all of it is written.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn a_piped_snapshot_checks_like_the_file() {
    let host = FakeHost::new();
    let path = fixtures_dir().join(HEALTHY);
    let from_file = host.run(&args(
        "check",
        &MPS_REQUEST,
        &["--snapshot", path.to_str().unwrap()],
    ));
    assert_eq!(from_file.code, 0, "{}", from_file.render());
    let text = std::fs::read(&path).unwrap();
    for name in ["-", "/dev/stdin"] {
        let (code, stdout, stderr) = check_piped(&host, name, &text);
        assert_eq!(
            (code, stdout.as_str(), stderr.as_str()),
            (0, from_file.stdout.as_str(), ""),
            "{name}"
        );
    }
}

#[test]
fn a_fifo_as_dev_stdin_is_read_too() {
    let host = FakeHost::new();
    let fifo = host.root().join("snapshot.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let text = std::fs::read(fixtures_dir().join(HEALTHY)).unwrap();
    let fifo_writer = fifo.clone();
    let writer = std::thread::spawn(move || std::fs::write(fifo_writer, text).unwrap());
    let mut command = host.command(&args("check", &MPS_REQUEST, &["--snapshot", "/dev/stdin"]));
    command
        .stdin(std::fs::File::open(&fifo).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = spawn(&mut command).wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("\"validated\": true"));
}

#[test]
fn piped_input_is_capped_and_must_be_json() {
    let host = FakeHost::new();
    let huge = vec![b' '; 16 * 1024 * 1024 + 2];
    let (code, stdout, stderr) = check_piped(&host, "-", &huge);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.starts_with("error: standard input: more than 16777216 bytes"),
        "{stderr}"
    );
    let (code, _, stderr) = check_piped(&host, "-", b"schema: v1");
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: standard input: not JSON"),
        "{stderr}"
    );
    let (code, _, stderr) = check_piped(&host, "-", b"");
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: standard input: not JSON"),
        "{stderr}"
    );
}
