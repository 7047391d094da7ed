//! `cargo xtask bench`: `mps-preflight merge` of 1,024 and 10,000 rank manifests,
//! the whole process, spawn to reaped. The manifests are one probe's, written by the binary on
//! the compiled fake host with `--manifest`, then copied once per rank with the rank, world
//! size, host (8 ranks to a host, so servers and daemons are per host), PIDs and GPU changed,
//! as a fleet's ranks write them; the merge must exit 0 and find the run consistent.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::host::{Host, timed_output};
use super::{REQUEST, Report, Stats};

/// Rank counts and their targets.
const CASES: [(usize, Duration); 2] = [
    (1024, Duration::from_millis(100)),
    (10_000, Duration::from_secs(1)),
];
/// Ranks on one host.
const RANKS_PER_HOST: usize = 8;
/// Timed merges of each size, after one unmeasured.
const RUNS: usize = 5;

pub(super) fn measure(binary: &Path, host: &Host, report: &mut Report) -> Result<(), String> {
    let template = probe_manifest(binary, host)?;
    report.heading(&format!(
        "merge of rank manifests (the whole process, {RUNS} runs after one unmeasured)"
    ));
    for (ranks, target) in CASES {
        let files = write_ranks(&host.dir.join(format!("merge-{ranks}")), &template, ranks)?;
        let mut times = Vec::new();
        for run in 0..=RUNS {
            let elapsed = merge(binary, host, &files)?;
            if run > 0 {
                times.push(elapsed);
            }
        }
        let stats = Stats::of(&mut times)?;
        report.row(&format!("merge, {ranks} ranks"), &stats);
        report.verdict(
            &format!("{ranks} ranks: median {}", super::millis(stats.median)),
            &format!("< {}", super::millis(target)),
            stats.median < target,
        );
    }
    Ok(())
}

/// The manifest one healthy probe writes on `host`.
fn probe_manifest(binary: &Path, host: &Host) -> Result<Value, String> {
    let path = host.dir.join("probe-manifest.json");
    let output = host
        .command(binary)
        .arg("probe")
        .args(REQUEST)
        .arg("--manifest")
        .arg(&path)
        .output()
        .map_err(|err| format!("cannot run {}: {err}", binary.display()))?;
    if !output.status.success() {
        return Err(format!(
            "the probe for the merge manifests exited {}",
            output.status
        ));
    }
    let text = fs::read_to_string(&path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))
}

/// `ranks` manifests under `dir`, `rank<N>/manifest.json`, each the template as rank N wrote it.
fn write_ranks(dir: &Path, template: &Value, ranks: usize) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::with_capacity(ranks);
    for rank in 0..ranks {
        let mut manifest = template.clone();
        let host = rank / RANKS_PER_HOST;
        let gpu = format!("{:032X}", 0x8932_F937_usize + rank);
        if let Some(evidence) = manifest.get_mut("cuda_process_sharing") {
            for (key, value) in [
                ("rank", json!(rank)),
                ("world_size", json!(ranks)),
                ("host_name", json!(format!("gpu-node-{host:04}"))),
                ("server_pid", json!(5000 + host)),
                ("daemon_pid", json!(2000 + host)),
                ("learner_gpu_uuid", json!(gpu)),
                ("collector_gpu_uuid", json!(gpu)),
            ] {
                evidence[key] = value;
            }
        }
        let rank_dir = dir.join(format!("rank{rank}"));
        fs::create_dir_all(&rank_dir)
            .map_err(|err| format!("cannot create {}: {err}", rank_dir.display()))?;
        let path = rank_dir.join("manifest.json");
        let text = serde_json::to_string_pretty(&manifest).map_err(|err| err.to_string())?;
        fs::write(&path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        files.push(path);
    }
    Ok(files)
}

/// One `merge` of `files`: its wall time; it must exit 0 (a consistent run).
fn merge(binary: &Path, host: &Host, files: &[PathBuf]) -> Result<Duration, String> {
    let mut command = host.command(binary);
    command.arg("merge").args(files);
    let (elapsed, output) = timed_output(&mut command)?;
    if !output.status.success() {
        return Err(format!(
            "merge of {} manifests exited {}: {}",
            files.len(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(elapsed)
}
