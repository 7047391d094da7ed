//! `stop_all_queries` acts on the whole process: it kills every running query and holds the
//! process-wide registry until it is dropped, which would kill or stall other tests' queries.
//! So the test runs alone, in a child run of this test binary.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{
    eventually, fake_program, is_dead, query, read_pids, runner_in, short_tempdir,
};
use mps_host::{Runner, stop_all_queries};

/// Set in the child run, which alone runs [`inner_stop_all_queries`].
const INNER_ENV: &str = "MPS_PREFLIGHT_TEST_STOP_INNER";

#[test]
fn every_running_query_group_is_killed_and_reaped_and_none_starts_meanwhile() {
    #[allow(
        clippy::disallowed_methods,
        reason = "test harness: a child run of this binary"
    )]
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stop::inner_stop_all_queries",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(INNER_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "the child run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The test itself: only in the child run (it passes without doing anything elsewhere, where
/// the test above runs it).
#[test]
fn inner_stop_all_queries() {
    if std::env::var_os(INNER_ENV).is_none() {
        return;
    }
    let dir = short_tempdir("mpss");
    let pids = dir.path().join("pids");
    fake_program(
        dir.path(),
        "hung",
        &format!(
            "sleep 60 &\necho $! >> '{file}'\necho $$ >> '{file}'\nexec sleep 60",
            file = pids.display()
        ),
    );
    let runner = runner_in(dir.path());
    let hung = query("hung", "", Duration::from_mins(1));
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2).map(|_| scope.spawn(|| runner.run(&hung))).collect();
        assert!(eventually(Duration::from_secs(20), || read_pids(&pids)
            .len()
            == 4));
        let queries = read_pids(&pids);

        let stopping = Instant::now();
        let stopped = stop_all_queries(Duration::from_secs(5));
        assert_eq!((stopped.killed, stopped.survivors), (2, 0), "{stopped:?}");
        assert!(stopping.elapsed() < Duration::from_secs(5));
        for pid in &queries {
            assert!(
                eventually(Duration::from_secs(5), || is_dead(*pid)),
                "{pid} survived"
            );
        }
        // While `stopped` lives, no new query starts.
        let blocked = scope.spawn(|| runner.run(&query("hung", "", Duration::from_millis(1))));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!blocked.is_finished(), "a query started while stopped");
        assert_eq!(read_pids(&pids).len(), 4);
        drop(stopped);

        for run in runs {
            let record = run.join().unwrap();
            // Promptly, even when the stop reaped the leader before its runner saw it exit.
            assert!(record.elapsed_ms < 10_000, "{record:?}");
        }
        blocked.join().unwrap();
    });
}
