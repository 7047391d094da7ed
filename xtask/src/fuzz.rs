//! `cargo xtask fuzz [--seconds N] [TARGET…]`: runs the cargo-fuzz targets of `fuzz/`
//! one after the other, each for N seconds (default 600), and prints
//! per target the runs, the seconds, libFuzzer's peak RSS and the result. Not part of `ci`.
//!
//! - cargo-fuzz is installed (`cargo install --locked cargo-fuzz`) when missing. It runs on the
//!   stable toolchain with `--sanitizer none`: no `-Z` flag is then needed, and the code under
//!   test forbids `unsafe`, so `AddressSanitizer` would find nothing a panic does not.
//! - Each target runs with `-max_total_time=N -rss_limit_mb=512 -timeout=5`: a panic, an input
//!   that takes over 5 s (a hang) or a process over 512 MiB (unbounded memory) is a failure,
//!   and libFuzzer writes the input to the scratch `artifacts/` directory.
//! - The committed seeds (`fuzz/seeds/<target>/`) are copied to a scratch corpus under the
//!   system temp directory, so the committed corpus never grows. The scratch directory is
//!   removed when the target passes and kept (with libFuzzer's log) when it fails.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The targets of `fuzz/Cargo.toml`, in the order they run.
const TARGETS: [&str; 6] = [
    "visible_devices",
    "gpu_table",
    "daemon_output",
    "host_facts_json",
    "manifest_merge",
    "attest_answers",
];
/// Seconds per target when `--seconds` is not given (at least 10 minutes each).
const DEFAULT_SECONDS: u64 = 600;
/// libFuzzer's limits: any input slower than this many seconds is a hang…
const TIMEOUT_S: u64 = 5;
/// …and a process above this many MiB is unbounded memory.
const RSS_LIMIT_MB: u64 = 512;
const USAGE: &str = "usage: cargo xtask fuzz [--seconds N] [TARGET…]
  targets: visible_devices gpu_table daemon_output host_facts_json manifest_merge (default: all)";

/// `cargo xtask fuzz [--seconds N] [TARGET…]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let (seconds, targets) = parse_args(args)?;
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?
        .join("fuzz");
    if !super::cargo_has("fuzz") {
        super::cargo(&["install", "--locked", "cargo-fuzz"], &[])?;
    }
    // `cargo fuzz build` takes one target, or none for all of them.
    let mut build = vec!["fuzz", "build", "--sanitizer", "none"];
    if let [only] = targets.as_slice() {
        build.push(only);
    }
    fuzz_cargo(&fuzz_dir, &build)?;

    let scratch = std::env::temp_dir().join(format!("mps-preflight-fuzz-{}", std::process::id()));
    let mut report = String::new();
    let _ = writeln!(
        report,
        "{:<16} {:>8} {:>12} {:>9}  result",
        "target", "seconds", "runs", "peak RSS"
    );
    let mut failed = Vec::new();
    for target in &targets {
        let outcome = run_target(&fuzz_dir, &scratch, target, seconds)?;
        let _ = writeln!(
            report,
            "{:<16} {:>8} {:>12} {:>9}  {}",
            target,
            outcome
                .seconds
                .map_or_else(|| "?".to_owned(), |s| s.to_string()),
            outcome
                .runs
                .map_or_else(|| "?".to_owned(), |r| r.to_string()),
            outcome
                .peak_rss_mb
                .map_or_else(|| "?".to_owned(), |mb| format!("{mb} MB")),
            outcome.result,
        );
        if !outcome.passed {
            failed.push(*target);
        }
    }
    let _ = writeln!(
        report,
        "(each: -max_total_time={seconds} -rss_limit_mb={RSS_LIMIT_MB} -timeout={TIMEOUT_S})"
    );
    print!("{report}");
    if failed.is_empty() {
        let _ = fs::remove_dir(&scratch);
        Ok(())
    } else {
        Err(format!(
            "fuzz target(s) failed: {}; inputs and logs under {}",
            failed.join(", "),
            scratch.display()
        ))
    }
}

fn parse_args(args: &[String]) -> Result<(u64, Vec<&'static str>), String> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--seconds" {
            let value = rest.next().ok_or_else(|| USAGE.to_owned())?;
            seconds = value
                .parse::<u64>()
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| format!("--seconds wants a positive integer, not {value:?}"))?;
        } else if let Some(target) = TARGETS.iter().find(|t| **t == arg.as_str()) {
            if !targets.contains(target) {
                targets.push(*target);
            }
        } else {
            return Err(format!("unknown fuzz target or option {arg:?}\n{USAGE}"));
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    Ok((seconds, targets))
}

/// What one target's run came to, from libFuzzer's final stats.
struct Outcome {
    passed: bool,
    result: String,
    runs: Option<u64>,
    seconds: Option<u64>,
    peak_rss_mb: Option<u64>,
}

fn run_target(
    fuzz_dir: &Path,
    scratch: &Path,
    target: &str,
    seconds: u64,
) -> Result<Outcome, String> {
    let dir = scratch.join(target);
    let corpus = dir.join("corpus");
    let artifacts = dir.join("artifacts");
    for path in [&corpus, &artifacts] {
        fs::create_dir_all(path)
            .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
    }
    let seeds = fuzz_dir.join("seeds").join(target);
    copy_files(&seeds, &corpus)?;
    let log_path = dir.join("libfuzzer.log");
    let log = fs::File::create(&log_path)
        .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|err| format!("cannot share {}: {err}", log_path.display()))?;

    eprintln!(
        "xtask: fuzzing {target} for {seconds} s (log: {})",
        log_path.display()
    );
    let started = Instant::now();
    let status = Command::new(super::cargo_program())
        .current_dir(fuzz_dir)
        // cargo fuzz builds into fuzz/target; a workspace CARGO_TARGET_DIR would mix the two.
        .env_remove("CARGO_TARGET_DIR")
        .args(["fuzz", "run", "--sanitizer", "none", target])
        .arg(&corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-timeout={TIMEOUT_S}"))
        .arg("-print_final_stats=1")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .status()
        .map_err(|err| format!("cannot run cargo fuzz: {err}"))?;
    let wall = started.elapsed().as_secs();
    let text = fs::read(&log_path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|err| format!("cannot read {}: {err}", log_path.display()))?;

    let passed = status.success();
    let result = if passed {
        "ok: no crash, hang or memory blow-up".to_owned()
    } else {
        let kind = if text.contains("ERROR: libFuzzer: timeout") {
            "hang (an input took over the timeout)"
        } else if text.contains("ERROR: libFuzzer: out-of-memory") {
            "out of memory (over the RSS limit)"
        } else if text.contains("panicked at") || text.contains("deadly signal") {
            "crash (panic)"
        } else {
            "failed"
        };
        let inputs = list_files(&artifacts);
        format!(
            "{kind} [{status}]; input(s): {inputs}; log: {}",
            log_path.display()
        )
    };
    if passed {
        let _ = fs::remove_dir_all(&dir);
    }
    Ok(Outcome {
        passed,
        result,
        runs: stat(&text, "stat::number_of_executed_units:"),
        seconds: done_seconds(&text).or(Some(wall)),
        peak_rss_mb: stat(&text, "stat::peak_rss_mb:"),
    })
}

/// `cargo <args>` in `fuzz/`, outside the root workspace's target directory.
fn fuzz_cargo(fuzz_dir: &Path, args: &[&str]) -> Result<(), String> {
    eprintln!("xtask: (in fuzz/) cargo {}", args.join(" "));
    let status = Command::new(super::cargo_program())
        .current_dir(fuzz_dir)
        .env_remove("CARGO_TARGET_DIR")
        .args(args)
        .status()
        .map_err(|err| format!("cannot run cargo: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

fn copy_files(from: &Path, to: &Path) -> Result<(), String> {
    let entries =
        fs::read_dir(from).map_err(|err| format!("cannot read seeds {}: {err}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|err| format!("cannot read seeds {}: {err}", from.display()))?;
        let source = entry.path();
        if source.is_file() {
            fs::copy(&source, to.join(entry.file_name()))
                .map_err(|err| format!("cannot copy seed {}: {err}", source.display()))?;
        }
    }
    Ok(())
}

fn list_files(dir: &Path) -> String {
    let names: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "none written".to_owned()
    } else {
        names
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The number after `key` on libFuzzer's final-stats line (`stat::…: N`).
fn stat(log: &str, key: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix(key))
        .and_then(|value| value.trim().parse().ok())
}

/// The seconds of libFuzzer's closing `Done N runs in S second(s)` line.
fn done_seconds(log: &str) -> Option<u64> {
    log.lines().rev().find_map(|line| {
        let rest = line.strip_prefix("Done ")?;
        let (_, after) = rest.split_once(" runs in ")?;
        after.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_final_stats() {
        let log = "#758382\tDONE   cov: 690 ft: 2473 corp: 763/21Kb exec/s: 84264 rss: 35Mb\n\
                   Done 758382 runs in 9 second(s)\n\
                   stat::number_of_executed_units: 758382\n\
                   stat::average_exec_per_sec:     84264\n\
                   stat::peak_rss_mb:              35\n";
        assert_eq!(stat(log, "stat::number_of_executed_units:"), Some(758_382));
        assert_eq!(stat(log, "stat::peak_rss_mb:"), Some(35));
        assert_eq!(done_seconds(log), Some(9));
        assert_eq!(stat("", "stat::peak_rss_mb:"), None);
    }

    #[test]
    fn parses_arguments() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(parse_args(&[]), Ok((DEFAULT_SECONDS, TARGETS.to_vec())));
        assert_eq!(
            parse_args(&args(&["--seconds", "30", "gpu_table", "gpu_table"])),
            Ok((30, vec!["gpu_table"]))
        );
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["--seconds"])).is_err());
        assert!(parse_args(&args(&["no_such_target"])).is_err());
    }
}
