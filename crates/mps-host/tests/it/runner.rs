//! The process runner against real child processes: fake `nvidia-smi` / `nvidia-cuda-mps-control`
//! scripts that print, fail, hang, flood, and print bytes that are not UTF-8.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use crate::common::{fake_program, is_dead, query, read_pids, runner_in, short_tempdir};
use mps_host::{ProcessRunner, Runner};
use sharing_policy::{CapturedText, OsText, QueryOutcome};

/// A bound for "returned within the deadline": generous, because the machine is shared.
const MARGIN: Duration = Duration::from_secs(10);

fn exited(outcome: QueryOutcome) -> (Option<i32>, Option<i32>, CapturedText, CapturedText) {
    match outcome {
        QueryOutcome::Exited {
            code,
            signal,
            stdout,
            stderr,
        } => (code, signal, stdout, stderr),
        other => panic!("expected an exit, got {other:?}"),
    }
}

fn timed_out(outcome: QueryOutcome) -> (CapturedText, CapturedText) {
    match outcome {
        QueryOutcome::TimedOut { stdout, stderr } => (stdout, stderr),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn a_program_that_prints_is_recorded_byte_for_byte() {
    let dir = short_tempdir("fake");
    let row =
        "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:19:00.0";
    fake_program(
        dir.path(),
        "nvidia-smi",
        &format!("printf '%s\\n' '{row}'\nprintf 'warn' >&2"),
    );

    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", Duration::from_secs(20)));

    assert_eq!(record.program, "nvidia-smi");
    assert_eq!(record.timeout_ms, 20_000);
    assert!(record.elapsed_ms < 20_000);
    let (code, signal, stdout, stderr) = exited(record.outcome);
    assert_eq!((code, signal), (Some(0), None));
    assert_eq!(
        stdout,
        CapturedText {
            text: format!("{row}\n"),
            truncated: false,
            non_utf8: false
        }
    );
    assert_eq!(stderr.text, "warn");
}

#[test]
fn a_failing_program_records_its_exit_code_and_message() {
    let dir = short_tempdir("fake");
    let message = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. \
                   Make sure that the latest NVIDIA driver is installed and running.";
    fake_program(
        dir.path(),
        "nvidia-smi",
        &format!("echo \"{message}\"\necho >&2\nexit 9"),
    );

    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", Duration::from_secs(20)));

    let (code, signal, stdout, stderr) = exited(record.outcome);
    assert_eq!((code, signal), (Some(9), None));
    assert_eq!(stdout.text, format!("{message}\n"));
    assert_eq!(stderr.text, "\n");
}

#[test]
fn a_program_killed_by_a_signal_records_the_signal() {
    let dir = short_tempdir("fake");
    fake_program(dir.path(), "nvidia-smi", "echo before\nkill -KILL $$");

    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", Duration::from_secs(20)));

    let (code, signal, stdout, _) = exited(record.outcome);
    assert_eq!((code, signal), (None, Some(9)));
    assert_eq!(stdout.text, "before\n");
}

#[test]
fn a_missing_or_unusable_program_is_a_spawn_failure() {
    let dir = short_tempdir("fake");
    let not_executable = dir.path().join("nvidia-cuda-mps-control");
    std::fs::write(&not_executable, "#!/bin/sh\necho hi\n").unwrap();

    for program in ["nvidia-smi", "nvidia-cuda-mps-control"] {
        let record = runner_in(dir.path()).run(&query(program, "", Duration::from_secs(5)));
        let QueryOutcome::SpawnFailed { error } = &record.outcome else {
            panic!("{record:?}");
        };
        assert!(error.contains("not found in the search path"), "{error}");
    }
    // A path with `/` is spawned as given; the OS refuses it.
    let path = not_executable.to_str().unwrap();
    let record = ProcessRunner::default().run(&query(path, "", Duration::from_secs(5)));
    let QueryOutcome::SpawnFailed { error } = &record.outcome else {
        panic!("{record:?}")
    };
    assert!(error.contains("Permission denied"), "{error}");
}

#[test]
fn standard_input_is_written_then_closed() {
    let dir = short_tempdir("fake");
    // `cat` only ends at end of file: it would hang if standard input stayed open (X20).
    fake_program(dir.path(), "nvidia-cuda-mps-control", "exec cat");
    let stdin = "get_default_active_thread_percentage\nget_server_list\n";

    let record = runner_in(dir.path()).run(&query(
        "nvidia-cuda-mps-control",
        stdin,
        Duration::from_secs(20),
    ));

    let (code, _, stdout, _) = exited(record.outcome);
    assert_eq!(code, Some(0));
    assert_eq!(stdout.text, stdin);
    assert_eq!(record.stdin, stdin);
}

#[test]
fn a_program_that_ignores_a_large_standard_input_does_not_block_the_runner() {
    let dir = short_tempdir("fake");
    fake_program(dir.path(), "nvidia-cuda-mps-control", "echo ignored");
    let stdin = "get_server_list\n".repeat(100_000); // 1.6 MB, far more than a pipe buffer

    let record = runner_in(dir.path()).run(&query(
        "nvidia-cuda-mps-control",
        &stdin,
        Duration::from_secs(20),
    ));

    let (code, _, stdout, _) = exited(record.outcome);
    assert_eq!((code, stdout.text.as_str()), (Some(0), "ignored\n"));
}

#[test]
fn environment_overrides_are_applied_and_recorded() {
    let dir = short_tempdir("fake");
    fake_program(
        dir.path(),
        "nvidia-cuda-mps-control",
        "printf '%s|%s|' \"$CUDA_MPS_PIPE_DIRECTORY\" \"${HOME-unset}\"\nprintf '%s' \"$RAW\" | od -An -tx1",
    );
    let mut query = query("nvidia-cuda-mps-control", "", Duration::from_secs(20));
    query.env.insert(
        "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
        OsText::from("/tmp/pipe dir"),
    );
    query
        .env
        .insert("RAW".to_owned(), OsText::from_bytes(vec![b'a', 0xff, b'b']));
    query.env_removed.push("HOME".to_owned());

    let record = runner_in(dir.path()).run(&query);

    let (code, _, stdout, _) = exited(record.outcome);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout.text.split_whitespace().collect::<Vec<_>>(),
        ["/tmp/pipe", "dir|unset|", "61", "ff", "62"]
    );
    assert_eq!(record.env, query.env);
    assert_eq!(record.env_removed, ["HOME"]);
}

#[test]
fn output_that_is_not_utf8_is_flagged() {
    let dir = short_tempdir("fake");
    fake_program(dir.path(), "nvidia-smi", "printf '0, GPU-\\377\\376\\n'");

    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", Duration::from_secs(20)));

    let (_, _, stdout, _) = exited(record.outcome);
    assert!(stdout.non_utf8);
    assert!(!stdout.truncated);
    assert_eq!(stdout.text, "0, GPU-\u{fffd}\u{fffd}\n");
}

#[test]
fn a_hanging_program_and_its_children_are_killed_at_the_deadline() {
    let dir = short_tempdir("fake");
    let pids = dir.path().join("pids");
    // The program itself (exec sleep) and a background grandchild that holds the pipes.
    fake_program(
        dir.path(),
        "nvidia-cuda-mps-control",
        &format!(
            "echo $$ > '{pids}'\nsleep 30 &\necho $! >> '{pids}'\necho started\nexec sleep 30",
            pids = pids.display()
        ),
    );
    let timeout = Duration::from_secs(1);

    let started = Instant::now();
    let record = runner_in(dir.path()).run(&query("nvidia-cuda-mps-control", "", timeout));
    let elapsed = started.elapsed();

    assert!(elapsed < timeout + MARGIN, "took {elapsed:?}");
    assert!(record.elapsed_ms >= 1000, "{}", record.elapsed_ms);
    let (stdout, _) = timed_out(record.outcome);
    assert_eq!(
        stdout.text, "started\n",
        "output before the deadline is kept"
    );
    let pids = read_pids(&pids);
    assert_eq!(pids.len(), 2, "{pids:?}");
    for pid in pids {
        assert!(
            crate::common::eventually(Duration::from_secs(5), || is_dead(pid)),
            "{pid} survived"
        );
    }
}

#[test]
fn a_program_that_exits_but_leaves_a_child_holding_the_pipes_is_cleaned_up() {
    let dir = short_tempdir("fake");
    let pids = dir.path().join("pids");
    fake_program(
        dir.path(),
        "nvidia-smi",
        &format!("sleep 30 &\necho $! > '{}'\necho done", pids.display()),
    );
    let timeout = Duration::from_secs(20);

    let started = Instant::now();
    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", timeout));

    // It ends when the program exits, not at the deadline: the leftover child is killed.
    assert!(started.elapsed() < timeout, "took {:?}", started.elapsed());
    let (code, _, stdout, _) = exited(record.outcome);
    assert_eq!(
        (code, stdout.text.as_str(), stdout.truncated),
        (Some(0), "done\n", false)
    );
    let child = read_pids(&pids)[0];
    assert!(
        crate::common::eventually(Duration::from_secs(5), || is_dead(child)),
        "{child} survived"
    );
}

#[test]
fn a_child_that_escapes_the_process_group_cannot_hold_the_runner() {
    let dir = short_tempdir("fake");
    let pids = dir.path().join("pids");
    // `setsid` moves the child out of the group, so killing the group misses it; it still holds
    // standard output open.
    fake_program(
        dir.path(),
        "nvidia-smi",
        &format!(
            "setsid sh -c 'echo $$ > \"{pids}\"; exec sleep 30' &\n\
             while [ ! -s '{pids}' ]; do sleep 0.05; done\necho done",
            pids = pids.display()
        ),
    );
    let timeout = Duration::from_secs(2);

    let started = Instant::now();
    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", timeout));
    let elapsed = started.elapsed();

    assert!(elapsed < timeout + MARGIN, "took {elapsed:?}");
    let (code, _, stdout, _) = exited(record.outcome);
    assert_eq!(code, Some(0));
    assert_eq!(stdout.text, "done\n");
    assert!(stdout.truncated, "the stream never reached end of file");
    for pid in read_pids(&pids) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
}

#[test]
fn a_flood_is_capped_and_marked_truncated_until_the_deadline() {
    let dir = short_tempdir("fake");
    fake_program(dir.path(), "nvidia-smi", "exec yes");
    let runner = ProcessRunner {
        stdout_cap: 64 * 1024,
        search_path: Some(OsString::from(dir.path())),
        ..ProcessRunner::default()
    };
    let timeout = Duration::from_secs(1);

    let started = Instant::now();
    let record = runner.run(&query("nvidia-smi", "", timeout));

    assert!(started.elapsed() < timeout + MARGIN);
    let (stdout, stderr) = timed_out(record.outcome);
    assert_eq!(
        stdout.text.len(),
        64 * 1024,
        "memory stays bounded by the cap"
    );
    assert!(stdout.truncated);
    assert!(
        stdout
            .text
            .bytes()
            .all(|byte| byte == b'y' || byte == b'\n')
    );
    assert!(!stderr.truncated);
}

#[test]
fn a_flood_that_ends_is_drained_so_the_program_can_exit() {
    let dir = short_tempdir("fake");
    // 3 MB on stdout and 2 MB on stderr: both past the 1 MiB default cap. The program only
    // exits if both pipes keep being read after the cap.
    fake_program(
        dir.path(),
        "nvidia-smi",
        "yes | head -c 3000000\nyes e | head -c 2000000 >&2\necho end >&2",
    );

    let record = runner_in(dir.path()).run(&query("nvidia-smi", "", Duration::from_mins(1)));

    let (code, _, stdout, stderr) = exited(record.outcome);
    assert_eq!(code, Some(0));
    assert_eq!((stdout.text.len(), stdout.truncated), (1 << 20, true));
    assert_eq!((stderr.text.len(), stderr.truncated), (1 << 20, true));
}
