//! What `cargo xtask bench` prints: medians, minimums and p90s, the targets' verdicts, and the
//! machine and its load.

use std::fmt::Write as _;
use std::fs;
use std::time::Duration;

use super::{Bench, SLOW_RUNS, WARM_UP};

pub(super) struct Stats {
    pub(super) median: Duration,
    pub(super) min: Duration,
    pub(super) p90: Duration,
    pub(super) runs: usize,
}

impl Stats {
    pub(super) fn of(times: &mut [Duration]) -> Result<Self, String> {
        if times.is_empty() {
            return Err("no runs measured".to_owned());
        }
        times.sort_unstable();
        let at = |fraction: f64| {
            // Nearest rank; the cast is of a small, non-negative count.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let rank = ((times.len() as f64 * fraction).ceil() as usize).saturating_sub(1);
            times.get(rank).copied()
        };
        let median = match times.len() % 2 {
            0 => times
                .get(times.len() / 2 - 1) // len >= 2 here
                .zip(times.get(times.len() / 2))
                .map(|(a, b)| (*a + *b) / 2),
            _ => times.get(times.len() / 2).copied(),
        };
        match (median, times.first(), at(0.9)) {
            (Some(median), Some(min), Some(p90)) => Ok(Self {
                median,
                min: *min,
                p90,
                runs: times.len(),
            }),
            _ => Err("no runs measured".to_owned()),
        }
    }
}

/// The printed table.
pub(super) struct Report {
    pub(super) text: String,
}

impl Report {
    pub(super) fn new(bench: &Bench) -> Self {
        let mut report = Self {
            text: String::new(),
        };
        report.heading("cargo xtask bench");
        report.line(&format!("binary: {}", bench.binary.display()));
        report.line(&format!("machine: {}", machine()));
        report.line(&format!("load average at start: {}", load_average()));
        report.line(&format!(
            "runs: {} measured after {WARM_UP} warm-up (hang and memory cases: {SLOW_RUNS})",
            bench.runs
        ));
        report
    }

    pub(super) fn heading(&mut self, title: &str) {
        let _ = writeln!(self.text, "\n{title}");
        let _ = writeln!(self.text, "{}", "-".repeat(title.chars().count()));
    }

    pub(super) fn line(&mut self, line: &str) {
        let _ = writeln!(self.text, "{line}");
    }

    pub(super) fn row(&mut self, label: &str, stats: &Stats) {
        let _ = writeln!(
            self.text,
            "{label:<48} median {:>9}  min {:>9}  p90 {:>9}  ({} runs)",
            millis(stats.median),
            millis(stats.min),
            millis(stats.p90),
            stats.runs
        );
    }

    pub(super) fn verdict(&mut self, measured: &str, target: &str, met: bool) {
        let verdict = if met { "met" } else { "NOT MET" };
        let _ = writeln!(self.text, "  {measured:<46} target {target:<32} {verdict}");
    }
}

pub(super) fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

#[allow(
    clippy::cast_precision_loss,
    reason = "memory sizes are far below 2^52 KiB"
)]
pub(super) fn kib_to_mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// `N cores, <CPU model>` from `available_parallelism` and /proc/cpuinfo.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let model = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cores} cores, {model}")
}

/// The 1, 5 and 15 minute load averages: other work on a shared machine skews the figures.
pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_median_min_p90() {
        let mut times: Vec<Duration> = (1..=10).rev().map(Duration::from_millis).collect();
        let stats = Stats::of(&mut times).unwrap();
        assert_eq!(stats.median, Duration::from_micros(5500));
        assert_eq!(stats.min, Duration::from_millis(1));
        assert_eq!(stats.p90, Duration::from_millis(9));
        let mut odd = vec![
            Duration::from_millis(3),
            Duration::from_millis(1),
            Duration::from_millis(2),
        ];
        assert_eq!(
            Stats::of(&mut odd).unwrap().median,
            Duration::from_millis(2)
        );
        assert!(Stats::of(&mut []).is_err());
    }
}
