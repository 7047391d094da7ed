//! `cargo bench -p sharing-manifest`: `merge` of a 1,024-rank run (the fleet-scale
//! target: under 100 ms), the way `mps-preflight merge run/rank*/manifest.json` does it.
//!
//! The run is 1,024 manifests, one per rank, written once into a temp directory before any
//! timing: ranks on `hosts` hosts (8 ranks per host for 128 hosts; all on one for 1), each
//! host with its own daemon and server PIDs, every manifest holding other run keys besides the
//! evidence. Measured:
//!
//! - `files`: read and parse the 1,024 files ([`sharing_manifest::read_json_file`]), merge,
//!   and render the merged run as JSON text (the CLI's whole work but process start and print);
//! - `parsed`: [`sharing_manifest::merge`] alone, on the parsed values.
//!
//! BENCHMARKS.md at the repository root has the figures.

// A benchmark is not shipped code: setup failures should fail loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::LazyLock;

use divan::Bencher;
use serde_json::{Value, json};
use sharing_manifest::{MANIFEST_KEY, evidence_to_json, merge, read_json_file};
use sharing_policy::Evidence;

const RANKS: i64 = 1024;
const RANKS_PER_HOST: [i64; 2] = [8, 1024];

fn main() {
    divan::main();
}

fn evidence(rank: i64, ranks_per_host: i64) -> Evidence {
    let host = rank / ranks_per_host;
    let gpu = format!("{:032X}", 0x8932_F937_u64 + u64::try_from(rank).unwrap());
    Evidence {
        configured: Some("mps".to_owned()),
        effective: Some("mps".to_owned()),
        validated: true,
        learner_device: Some("cuda:0".to_owned()),
        collector_device: Some("cuda:0".to_owned()),
        learner_gpu_uuid: Some(gpu.clone()),
        collector_gpu_uuid: Some(gpu),
        pipe_directory: Some("/tmp/nvidia-mps".to_owned()),
        control_pipe: Some("/tmp/nvidia-mps/control".to_owned()),
        control_pipe_kind: Some("unix_socket".to_owned()),
        server_pid: Some(5000 + host),
        daemon_pid: Some(2000 + host),
        caller_uid: Some(1000),
        judged_for_uid: Some(1000),
        server_uids: vec![1000],
        daemon_multiuser: Some(false),
        compute_mode: Some("Exclusive_Process".to_owned()),
        driver_version: Some("550.163.01".to_owned()),
        host_name: Some(format!("gpu-node-{host:03}")),
        ..Evidence::unobserved(rank, RANKS)
    }
}

/// One temp directory per layout, holding `rank<N>/manifest.json`; kept for the whole run.
struct Run {
    _dir: tempfile::TempDir,
    files: Vec<PathBuf>,
    parsed: Vec<(String, Value)>,
}

fn build(ranks_per_host: i64) -> Run {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files = Vec::new();
    for rank in 0..RANKS {
        let rank_dir = dir.path().join(format!("rank{rank}"));
        std::fs::create_dir(&rank_dir).expect("rank dir");
        let manifest = json!({
            "run_id": "bench-1024",
            "seed": rank,
            "config": {"learner": "sac", "collector_envs": 4096},
            MANIFEST_KEY: evidence_to_json(&evidence(rank, ranks_per_host)),
        });
        let path = rank_dir.join("manifest.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).expect("write");
        files.push(path);
    }
    let parsed = read_all(&files);
    assert!(
        merge(&parsed).is_consistent(),
        "the bench run must be consistent"
    );
    Run {
        _dir: dir,
        files,
        parsed,
    }
}

static RUNS: LazyLock<Vec<(i64, Run)>> =
    LazyLock::new(|| RANKS_PER_HOST.iter().map(|n| (*n, build(*n))).collect());

fn run(ranks_per_host: i64) -> &'static Run {
    &RUNS.iter().find(|(n, _)| *n == ranks_per_host).unwrap().1
}

fn read_all(files: &[PathBuf]) -> Vec<(String, Value)> {
    files
        .iter()
        .map(|path| (path.display().to_string(), read_json_file(path).unwrap()))
        .collect()
}

/// Read, parse, merge and render 1,024 rank manifests.
#[divan::bench(args = RANKS_PER_HOST, sample_count = 30)]
fn files(bencher: Bencher, ranks_per_host: i64) {
    let run = run(ranks_per_host);
    bencher.bench(|| {
        let report = merge(&read_all(black_box(&run.files)));
        serde_json::to_string_pretty(&report.to_json()).unwrap()
    });
}

/// `merge` alone on the 1,024 parsed manifests.
#[divan::bench(args = RANKS_PER_HOST, sample_count = 30)]
fn parsed(bencher: Bencher, ranks_per_host: i64) {
    let run = run(ranks_per_host);
    bencher.bench(|| merge(black_box(&run.parsed)));
}
