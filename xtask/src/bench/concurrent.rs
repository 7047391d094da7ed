//! `cargo xtask bench` (or `--concurrent` alone): 64 ranks probing one real control daemon at
//! once. The real `nvidia-cuda-mps-control` of each Debian package the fetch script
//! cached (535 in `~/.cache/mps-preflight`, 550 in `~/.cache/mps-preflight-550`) is started
//! with `-d` in a private pipe directory; each round starts 64 `probe --request mps` processes
//! together, then 64 `capture`s together, whose snapshots say how many attempts the daemon
//! query needed and, through `check`, whether each would validate. Rounds alternate probes and
//! captures so drift on a shared machine hits both alike.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{GPU_ROW, REQUEST, Report, Stats, write_script};

/// Probes started together, as a node's ranks do at launch.
const PROBES: usize = 64;
/// Rounds of each.
const ROUNDS: usize = 5;

/// The daemons to measure: `(label, binary)` for each one the fetch script cached.
fn daemons() -> Vec<(String, PathBuf)> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    [
        ("535 (bookworm)", "mps-preflight"),
        ("550 (trixie)", "mps-preflight-550"),
    ]
    .into_iter()
    .map(|(label, cache)| {
        let binary = home
            .join(".cache")
            .join(cache)
            .join("nvidia-cuda-mps/usr/bin/nvidia-cuda-mps-control");
        (label.to_owned(), binary)
    })
    .filter(|(_, binary)| binary.is_file())
    .collect()
}

/// The concurrency section of the report.
pub(super) fn measure(binary: &Path, report: &mut Report) -> Result<(), String> {
    let daemons = daemons();
    report.heading(&format!(
        "{PROBES} concurrent probes of one real, idle control daemon ({ROUNDS} rounds)"
    ));
    if daemons.is_empty() {
        report
            .line("skipped: no cached nvidia-cuda-mps-control (run scripts/fetch-mps-control.sh)");
        return Ok(());
    }
    for (label, daemon_binary) in daemons {
        let daemon = RealDaemon::start(&daemon_binary)?;
        let mut probe_times = Vec::new();
        let mut capture_times = Vec::new();
        let (mut validated, mut probes) = (0, 0);
        let mut attempts: Vec<usize> = Vec::new();
        let mut checked = 0;
        for round in 0..ROUNDS {
            let (elapsed, codes) = daemon.at_once(binary, |_| probe_args())?;
            probe_times.push(elapsed);
            probes += codes.len();
            validated += codes.iter().filter(|code| **code == Some(0)).count();
            let snapshots = daemon.dir.join(format!("round{round}"));
            fs::create_dir(&snapshots).map_err(|err| format!("cannot create a dir: {err}"))?;
            let (elapsed, _) = daemon.at_once(binary, |index| {
                let out = snapshots.join(format!("{index}.json"));
                vec![
                    "capture".to_owned(),
                    "--output".to_owned(),
                    out.to_string_lossy().into_owned(),
                ]
            })?;
            capture_times.push(elapsed);
            for index in 0..PROBES {
                let path = snapshots.join(format!("{index}.json"));
                attempts.push(attempts_in(&path)?);
                if daemon.check(binary, &path)? {
                    checked += 1;
                }
            }
        }
        report.row(
            &format!("{label}: {PROBES} probes, first start to last exit"),
            &Stats::of(&mut probe_times)?,
        );
        report.row(
            &format!("{label}: {PROBES} captures, the same"),
            &Stats::of(&mut capture_times)?,
        );
        let total: usize = attempts.iter().sum();
        let most = attempts.iter().max().copied().unwrap_or(0);
        let retried = attempts.iter().filter(|count| **count > 1).count();
        report.line(&format!(
            "  daemon-query attempts per capture: {:.2} mean, {most} most; {retried} of {} captures retried",
            ratio(total, attempts.len()),
            attempts.len()
        ));
        report.verdict(
            &format!(
                "{validated} of {probes} probes validated, {checked} of {} captures check",
                attempts.len()
            ),
            "all",
            validated == probes && checked == attempts.len(),
        );
    }
    Ok(())
}

#[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
fn ratio(total: usize, count: usize) -> f64 {
    total as f64 / count.max(1) as f64
}

fn probe_args() -> Vec<String> {
    std::iter::once("probe")
        .chain(REQUEST)
        .map(str::to_owned)
        .collect()
}

/// How many times the snapshot's daemon query was run.
fn attempts_in(path: &Path) -> Result<usize, String> {
    let text =
        fs::read_to_string(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?;
    let earlier = value
        .get("daemon_query")
        .and_then(|query| query.get("earlier_attempts"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    Ok(earlier + 1)
}

/// A real control daemon in private directories under `/tmp`, stopped on drop.
struct RealDaemon {
    binary: PathBuf,
    dir: PathBuf,
    pipe: PathBuf,
    bin: PathBuf,
}

impl RealDaemon {
    fn start(binary: &Path) -> Result<Self, String> {
        let dir = PathBuf::from(format!("/tmp/mpsb-{}-{}", std::process::id(), nanos()));
        let (pipe, log, bin) = (dir.join("p"), dir.join("l"), dir.join("bin"));
        for path in [&dir, &pipe, &log, &bin] {
            fs::create_dir(path)
                .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
        }
        std::os::unix::fs::symlink(binary, bin.join("nvidia-cuda-mps-control"))
            .map_err(|err| format!("cannot link the daemon binary: {err}"))?;
        write_script(
            &bin.join("nvidia-smi"),
            &format!("#!/bin/sh\nprintf '%s\\n' '{GPU_ROW}'\n"),
        )?;
        let daemon = Self {
            binary: binary.to_owned(),
            dir,
            pipe,
            bin,
        };
        let status = Command::new(binary)
            .arg("-d")
            .env("CUDA_MPS_PIPE_DIRECTORY", &daemon.pipe)
            .env("CUDA_MPS_LOG_DIRECTORY", &log)
            .env_remove("CUDA_MPS_PROTOCOL_VERSION")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|err| format!("cannot start {}: {err}", binary.display()))?;
        let started = Instant::now();
        while !daemon.pipe.join("control").exists() {
            if !status.success() || started.elapsed() > Duration::from_secs(10) {
                return Err(format!("{} -d did not start ({status})", binary.display()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(daemon)
    }

    /// The CLI in this daemon's environment only.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", &self.bin)
            .env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// Starts [`PROBES`] runs of `binary` with `args(index)`, then waits for all: the time from
    /// the first start to the last exit, and each exit code.
    fn at_once(
        &self,
        binary: &Path,
        args: impl Fn(usize) -> Vec<String>,
    ) -> Result<(Duration, Vec<Option<i32>>), String> {
        let started = Instant::now();
        let children: Vec<Child> = (0..PROBES)
            .map(|index| {
                self.command(binary)
                    .args(args(index))
                    .spawn()
                    .map_err(|err| format!("cannot run {}: {err}", binary.display()))
            })
            .collect::<Result<_, _>>()?;
        let mut codes = Vec::with_capacity(PROBES);
        for mut child in children {
            let status = child.wait().map_err(|err| format!("cannot wait: {err}"))?;
            codes.push(status.code());
        }
        Ok((started.elapsed(), codes))
    }

    /// Whether `check` of the snapshot with the probe's request validates.
    fn check(&self, binary: &Path, snapshot: &Path) -> Result<bool, String> {
        let status = self
            .command(binary)
            .arg("check")
            .arg("--snapshot")
            .arg(snapshot)
            .args(REQUEST)
            .status()
            .map_err(|err| format!("cannot run check: {err}"))?;
        Ok(status.success())
    }
}

impl Drop for RealDaemon {
    fn drop(&mut self) {
        // Only this harness sends `quit`; the probe cannot express it.
        if let Ok(mut child) = Command::new(&self.binary)
            .env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = std::io::Write::write_all(&mut stdin, b"quit\n");
            }
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos())
}
