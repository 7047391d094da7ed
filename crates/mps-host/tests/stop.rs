//! `stop_all_queries` (issue 15, part 2), in a test binary of its own: it holds the process-wide
//! registry of running queries until it is dropped, which would stall other tests' spawns.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::time::{Duration, Instant};

use common::{eventually, fake_program, is_dead, query, read_pids, runner_in, short_tempdir};
use mps_host::{Runner, stop_all_queries};

#[test]
fn every_running_query_group_is_killed_and_reaped_and_none_starts_meanwhile() {
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
