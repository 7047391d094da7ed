//! SIGINT, SIGTERM and SIGHUP while a query hangs: the CLI kills every
//! running query's process group (the hung front-end and the child it started), reaps, and
//! exits 128 + the signal, long before the query's own deadline.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use crate::support::{FakeHost, MPS_REQUEST, args, spawn, system_program};

/// Whether `pid` still runs (a zombie does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

fn pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.parse().ok())
        .collect()
}

#[test]
fn a_signal_ends_the_hung_queries_and_exits_128_plus_the_signal() {
    let sleep = system_program("sleep");
    for (signal, to_group) in [
        (Signal::INT, true),
        (Signal::TERM, false),
        (Signal::HUP, false),
    ] {
        let mut host = FakeHost::new();
        host.one_gpu().socket();
        let started = host.root().join("started");
        // The front-end hangs, with a child of its own in its process group.
        host.script(
            "nvidia-cuda-mps-control",
            &format!(
                "{sleep} 60 &\necho $! >> '{file}'\necho $$ >> '{file}'\nexec {sleep} 60",
                sleep = sleep.display(),
                file = started.display()
            ),
        );
        let mut command = host.command(&args("probe", &MPS_REQUEST, &["--timeout-ms", "60000"]));
        // Its own group, as a shell gives a foreground job: Ctrl-C is a SIGINT to the group.
        command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut cli = spawn(&mut command);
        let cli_pid = Pid::from_raw(i32::try_from(cli.id()).unwrap()).unwrap();
        let waiting = Instant::now();
        while pids(&started).len() < 2 {
            assert!(
                waiting.elapsed() < Duration::from_secs(20),
                "the query never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let queries = pids(&started);

        if to_group {
            rustix::process::kill_process_group(cli_pid, signal).unwrap();
        } else {
            rustix::process::kill_process(cli_pid, signal).unwrap();
        }
        let signalled = Instant::now();
        let status = cli.wait().unwrap();

        // Far below the 60 s deadline: the signal, not the deadline, ended the run.
        assert!(signalled.elapsed() < Duration::from_secs(10), "{signal:?}");
        assert_eq!(
            status.code(),
            Some(128 + signal.as_raw()),
            "{signal:?}: {status}"
        );
        for pid in queries {
            // SIGKILL to a group is sent at once but each member dies when next scheduled: on
            // a loaded machine the orphaned grandchild may take a moment to go.
            let killed = Instant::now();
            while running(pid) && killed.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(!running(pid), "{signal:?}: query process {pid} survived");
        }
    }
}
