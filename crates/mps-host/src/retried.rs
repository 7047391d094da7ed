//! The daemon query, asked again while its outcome is transient. Which outcomes are
//! transient, and how long to wait, is `mps_protocol::retry`'s decision; this loop only runs
//! the attempts, sleeps, and records every attempt in the one [`QueryRecord`].

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use mps_protocol::retry::RetryPolicy;
use mps_protocol::{Attempt, QueryRecord};

use crate::runner::{Query, Runner};

/// Runs `query` through `runner`, again after each transient outcome as `policy` allows, all
/// within `query.timeout` counted from the first start. The record is the last attempt's, with
/// the earlier ones in `earlier_attempts`, `timeout_ms` the whole deadline and `elapsed_ms`
/// the time since the first start.
pub fn run_retried(runner: &dyn Runner, query: &Query, policy: &RetryPolicy) -> QueryRecord {
    let started = Instant::now();
    let mut earlier = Vec::new();
    let mut attempts = 0_u32;
    loop {
        attempts += 1;
        // The first attempt gets the whole deadline as given; later ones what is left of it.
        let timeout = if attempts == 1 {
            query.timeout
        } else {
            query.timeout.saturating_sub(started.elapsed())
        };
        let attempt = Query {
            timeout,
            ..query.clone()
        };
        let mut record = runner.run(&attempt);
        let delay = policy.next_delay(
            &record.outcome,
            attempts,
            started.elapsed(),
            query.timeout,
            jitter(),
        );
        let Some(delay) = delay else {
            record.timeout_ms = millis(query.timeout);
            record.elapsed_ms = millis(started.elapsed());
            record.earlier_attempts = earlier;
            return record;
        };
        earlier.push(Attempt {
            elapsed_ms: record.elapsed_ms,
            backoff_ms: millis(delay),
            outcome: record.outcome,
        });
        std::thread::sleep(delay);
    }
}

/// A random number without a dependency: std's hasher keys are seeded from the OS per process
/// and differ for every `RandomState`; the clock is mixed in too.
fn jitter() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU32, Ordering};

    use mps_protocol::retry::{CANNOT_SEND, DAEMON_RETRY};
    use mps_protocol::{CapturedText, QueryOutcome};

    use super::*;
    use crate::runner::MockRunner;

    fn query(timeout: Duration) -> Query {
        Query {
            program: "nvidia-cuda-mps-control".to_owned(),
            args: vec![],
            stdin: "get_default_active_thread_percentage\nget_server_list\n".to_owned(),
            env: BTreeMap::new(),
            env_removed: vec![],
            timeout,
        }
    }

    #[test]
    fn transient_outcomes_are_retried_and_every_attempt_is_kept() {
        let calls = AtomicU32::new(0);
        let mut runner = MockRunner::new();
        runner.expect_run().times(4).returning(move |query| {
            let outcome = match calls.fetch_add(1, Ordering::SeqCst) {
                0 => QueryOutcome::exited(1, "", CANNOT_SEND),
                1 => QueryOutcome::exited(0, "", ""),
                2 => QueryOutcome::exited(1, "", ""),
                _ => QueryOutcome::exited(0, "100.0\n", ""),
            };
            assert!(query.timeout <= Duration::from_secs(5));
            query.record(outcome, Duration::from_millis(2))
        });
        let record = run_retried(&runner, &query(Duration::from_secs(5)), &DAEMON_RETRY);
        assert_eq!(record.outcome, QueryOutcome::exited(0, "100.0\n", ""));
        assert_eq!(record.timeout_ms, 5000);
        let earlier: Vec<_> = record.earlier_attempts.iter().map(|a| &a.outcome).collect();
        assert_eq!(
            earlier,
            [
                &QueryOutcome::exited(1, "", CANNOT_SEND),
                &QueryOutcome::exited(0, "", ""),
                &QueryOutcome::exited(1, "", "")
            ]
        );
        assert!(
            record
                .earlier_attempts
                .iter()
                .all(|a| a.elapsed_ms == 2 && a.backoff_ms >= 5)
        );
    }

    #[test]
    fn a_clear_answer_is_final_at_once() {
        for outcome in [
            QueryOutcome::exited(1, "", "Cannot find MPS control daemon process\n"),
            QueryOutcome::exited(0, "Unknown command\n", ""),
            QueryOutcome::TimedOut {
                stdout: CapturedText::default(),
                stderr: CapturedText::default(),
            },
        ] {
            let mut runner = MockRunner::new();
            let answer = outcome.clone();
            runner
                .expect_run()
                .times(1)
                .returning(move |query| query.record(answer.clone(), Duration::from_millis(1)));
            let record = run_retried(&runner, &query(Duration::from_secs(5)), &DAEMON_RETRY);
            assert_eq!(record.outcome, outcome);
            assert!(record.earlier_attempts.is_empty());
        }
    }

    #[test]
    fn a_busy_daemon_is_asked_only_within_the_one_deadline() {
        let mut runner = MockRunner::new();
        runner.expect_run().returning(|query| {
            query.record(QueryOutcome::exited(1, "", CANNOT_SEND), Duration::ZERO)
        });
        let started = Instant::now();
        let record = run_retried(&runner, &query(Duration::from_millis(400)), &DAEMON_RETRY);
        assert!(started.elapsed() < Duration::from_millis(400));
        assert_eq!(record.outcome, QueryOutcome::exited(1, "", CANNOT_SEND));
        assert!(!record.earlier_attempts.is_empty());
        let slept: u64 = record.earlier_attempts.iter().map(|a| a.backoff_ms).sum();
        assert!(slept <= 300, "{slept}");
    }
}
