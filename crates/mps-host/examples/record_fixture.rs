//! Records host snapshots from Debian's real `nvidia-cuda-mps-control` (no GPU) into
//! `fixtures/hosts/`:
//!
//! - `real-daemon-<suite>-<version>-idle.json`: a live, idle control daemon;
//! - `real-daemon-<suite>-<version>-stale.json`: the same pipe directory after `quit` (the
//!   socket is left behind, nothing answers).
//!
//! ```sh
//! scripts/fetch-mps-control.sh
//! cargo run -p mps-host --example record_fixture            # writes into fixtures/hosts/
//! cargo run -p mps-host --example record_fixture -- OUT_DIR  # writes elsewhere
//! ```
//!
//! `<suite>` is the Debian suite the package came from, `$MPS_PREFLIGHT_DEBIAN_SUITE` as for the
//! fetch script (default `bookworm`, 535; `trixie` brings 550, which writes a pid file):
//!
//! ```sh
//! export MPS_PREFLIGHT_DEBIAN_SUITE=trixie MPS_PREFLIGHT_CACHE=~/.cache/mps-preflight-550
//! scripts/fetch-mps-control.sh && cargo run -p mps-host --example record_fixture
//! ```
//!
//! The daemon runs in fixed directories under `/tmp/mps-preflight-fixture/` (so the recorded
//! paths are the same on every run) and is stopped again. `nvidia-smi` is deliberately not on the
//! probe's search path, so the GPU query records a spawn failure, as on a host without a driver.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use common::daemon::{Daemon, locate, package_version};
use mps_host::{ProcessRunner, capture_with};
use sharing_policy::HostFacts;

const ROOT: &str = "/tmp/mps-preflight-fixture";

fn main() -> ExitCode {
    let Some(binary) = locate() else {
        eprintln!("record_fixture: no nvidia-cuda-mps-control; run scripts/fetch-mps-control.sh");
        return ExitCode::FAILURE;
    };
    let Some(version) = package_version(&binary) else {
        eprintln!("record_fixture: no VERSION next to {}", binary.display());
        return ExitCode::FAILURE;
    };
    // The upstream driver version, without Debian's revision (`535.261.03-1` → `535.261.03`).
    let driver = version.split('-').next().unwrap_or(&version).to_owned();
    let suite =
        std::env::var("MPS_PREFLIGHT_DEBIAN_SUITE").unwrap_or_else(|_| "bookworm".to_owned());
    let out_dir = std::env::args_os().nth(1).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts"),
        PathBuf::from,
    );

    let root = Path::new(ROOT);
    let _ = std::fs::remove_dir_all(root);
    let dirs = ["pipe", "log", "bin"].map(|name| root.join(name));
    for dir in &dirs {
        std::fs::create_dir_all(dir).unwrap();
    }
    let [pipe, log, bin] = dirs;
    let daemon = Daemon::start_with(&binary, pipe, log, bin, None);
    let options = daemon.options(Duration::from_secs(5));
    let runner = ProcessRunner {
        search_path: options.search_path.clone(),
        ..ProcessRunner::default()
    };

    let idle = capture_with(daemon.env(), &runner, &options);
    write(
        &out_dir,
        &format!("real-daemon-{suite}-{driver}-idle.json"),
        &idle,
    );
    daemon.quit();
    let stale = capture_with(daemon.env(), &runner, &options);
    write(
        &out_dir,
        &format!("real-daemon-{suite}-{driver}-stale.json"),
        &stale,
    );

    drop(daemon);
    let _ = std::fs::remove_dir_all(root);
    ExitCode::SUCCESS
}

fn write(dir: &Path, name: &str, facts: &HostFacts) {
    let path = dir.join(name);
    let mut json = serde_json::to_string_pretty(facts).unwrap();
    json.push('\n');
    std::fs::write(&path, json).unwrap();
    eprintln!("record_fixture: wrote {}", path.display());
}
