//! `cargo xtask bench [--concurrent] [--runs N]`: whole-process figures of the release
//! `mps-preflight` on a fake host (issue 6, "Performance"), and (`concurrent`, alone with
//! `--concurrent`) 64 probes at once against the real control daemons (issue 15). A measurement, not a test: it prints a table with each
//! target and whether this machine met it, and fails only when the binary misbehaves (a
//! healthy fake host rejected, say) or the fake host cannot be built.
//!
//! The fake host lives in a temp directory: a pipe directory holding a real listening Unix
//! socket at `control` (kept open for the whole run), and a `bin/` that is the only `PATH`
//! entry, with `nvidia-smi` and `nvidia-cuda-mps-control` shell scripts printing what the real
//! tools print on an idle one-H100 host. Measured, interleaved, after a warm-up:
//!
//! - `check --snapshot fixtures/hosts/healthy-idle-daemon.json` with an explicit request;
//! - `probe` with the same request on the fake host (both queries, concurrently);
//! - the floor: the same two fake tools spawned directly, one after the other;
//! - `probe --timeout-ms 1000` with both tools hung (`exec sleep 30`): one deadline, not two;
//! - peak resident memory (`/usr/bin/time -f %M`) of `check`, `probe`, and `probe` while
//!   `nvidia-smi` (then both tools) flood their output with `yes`.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod concurrent;

/// Runs of each whole-process measurement when `--runs` is not given.
const DEFAULT_RUNS: usize = 50;
/// Unmeasured runs of each before measuring (page cache, binary loaded, fork paths warm).
const WARM_UP: usize = 3;
/// Runs of the slow cases (a hang costs a deadline; a flood costs one too).
const SLOW_RUNS: usize = 3;
/// The deadline of each host query in the hang and flood cases.
const SLOW_TIMEOUT_MS: u64 = 1000;

/// One row of the v2 GPU query (issue 10): compute mode and driver version, then the table.
const GPU_ROW: &str = "Default, 550.163.01, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0";
const GPU_QUERY_ARGS: [&str; 2] = [
    "--query-gpu=compute_mode,driver_version,index,uuid,name,pci.bus_id",
    "--format=csv,noheader",
];
/// What `probe` writes to the daemon front-end (sharing-policy's `DAEMON_PROBE`).
const DAEMON_STDIN: &str = "get_default_active_thread_percentage\nget_server_list\n";
const FIXTURE: &str = "fixtures/hosts/healthy-idle-daemon.json";
const REQUEST: [&str; 8] = [
    "--request",
    "mps",
    "--learner-device",
    "cuda:0",
    "--collector-device",
    "cuda:0",
    "--backend",
    "mjwarp",
];

/// The targets of issue 6.
const RATIO_TARGET: f64 = 1.3;
const CHECK_TARGET: Duration = Duration::from_millis(3);
const MEMORY_TARGET_KIB: u64 = 16 * 1024;

/// `cargo xtask bench [--runs N]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    // `--concurrent`: only the real-daemon concurrency section (issue 15).
    let only_concurrent = args.first().is_some_and(|arg| arg == "--concurrent");
    let runs = parse_runs(args.get(usize::from(only_concurrent)..).unwrap_or_default())?;
    let metadata = super::layers::cargo_metadata()?;
    let root = PathBuf::from(json_str(&metadata, "workspace_root")?);
    let target = PathBuf::from(json_str(&metadata, "target_directory")?);
    super::cargo(&["build", "--release", "-p", "mps-preflight"], &[])?;
    let binary = target.join("release").join("mps-preflight");
    if !binary.is_file() {
        return Err(format!("no release binary at {}", binary.display()));
    }
    let sandbox = Sandbox::new()?;
    let sleep = find_program(&["/bin/sleep", "/usr/bin/sleep"])?;
    let yes = find_program(&["/usr/bin/yes", "/bin/yes"])?;
    let healthy = sandbox.host("healthy", &smi_script(), &daemon_script())?;
    let hung_script = format!("#!/bin/sh\nexec {} 30\n", sleep.display());
    let hung = sandbox.host("hung", &hung_script, &hung_script)?;
    let flood_script = format!("#!/bin/sh\nexec {}\n", yes.display());
    let flood_smi = sandbox.host("flood-smi", &flood_script, &daemon_script())?;
    let flood_both = sandbox.host("flood-both", &flood_script, &flood_script)?;

    let bench = Bench { binary, root, runs };
    let mut report = Report::new(&bench);
    if only_concurrent {
        concurrent::measure(&bench.binary, &mut report)?;
        print!("{}", report.text);
        return Ok(());
    }
    bench.whole_process(&healthy, &mut report)?;
    bench.hang(&hung, &mut report)?;
    bench.memory(&healthy, &flood_smi, &flood_both, &mut report)?;
    concurrent::measure(&bench.binary, &mut report)?;
    report.line(&format!("\nload average at end: {}", load_average()));
    print!("{}", report.text);
    Ok(())
}

fn parse_runs(args: &[String]) -> Result<usize, String> {
    match args {
        [] => Ok(DEFAULT_RUNS),
        [flag, value] if flag == "--runs" => value
            .parse::<usize>()
            .ok()
            .filter(|runs| *runs > 0)
            .ok_or_else(|| format!("--runs wants a positive integer, not {value:?}")),
        _ => Err("usage: cargo xtask bench [--concurrent] [--runs N]".to_owned()),
    }
}

struct Bench {
    binary: PathBuf,
    root: PathBuf,
    runs: usize,
}

impl Bench {
    /// `check`, `probe` and the floor, interleaved so that drift on a shared machine hits all
    /// of them alike; two more rows split `probe`'s cost: the binary's own start (`--version`)
    /// and the two tools spawned concurrently (what `probe` does) instead of one after the other.
    fn whole_process(&self, host: &Host, report: &mut Report) -> Result<(), String> {
        type Measure<'a> = Box<dyn Fn() -> Result<Duration, String> + 'a>;
        let check_args = self.check_args();
        let probe_args = probe_args(&[]);
        let version_args = vec!["--version".to_owned()];
        let measures: [(&str, Measure<'_>); 5] = [
            (
                "check --snapshot healthy-idle-daemon.json",
                Box::new(|| self.timed(host, &check_args, Some(0))),
            ),
            (
                "probe (nvidia-smi + mps-control, concurrent)",
                Box::new(|| self.timed(host, &probe_args, Some(0))),
            ),
            (
                "floor (the two fake tools, one after the other)",
                Box::new(|| floor(host, false)),
            ),
            (
                "  context: the two fake tools, concurrently",
                Box::new(|| floor(host, true)),
            ),
            (
                "  context: mps-preflight --version (start+exit)",
                Box::new(|| self.timed(host, &version_args, Some(0))),
            ),
        ];
        for _ in 0..WARM_UP {
            for (_, measure) in &measures {
                measure()?;
            }
        }
        let mut times: Vec<Vec<Duration>> = measures.iter().map(|_| Vec::new()).collect();
        for _ in 0..self.runs {
            for ((_, measure), times) in measures.iter().zip(&mut times) {
                times.push(measure()?);
            }
        }
        let mut stats = Vec::new();
        for times in &mut times {
            stats.push(Stats::of(times)?);
        }
        report.heading("Whole process, fake host (interleaved runs)");
        for ((label, _), stats) in measures.iter().zip(&stats) {
            report.row(label, stats);
        }
        let (Some(check), Some(probe), Some(floor)) = (stats.first(), stats.get(1), stats.get(2))
        else {
            return Err("missing measurements".to_owned());
        };
        let ratio = probe.median.as_secs_f64() / floor.median.as_secs_f64();
        report.verdict(
            &format!("probe / floor = {ratio:.2}x (medians)"),
            &format!("<= {RATIO_TARGET}x"),
            ratio <= RATIO_TARGET,
        );
        report.verdict(
            &format!("check median = {}", millis(check.median)),
            &format!("< {}", millis(CHECK_TARGET)),
            check.median < CHECK_TARGET,
        );
        Ok(())
    }

    /// Both tools hung: the queries run concurrently, so `probe` should cost one deadline.
    fn hang(&self, host: &Host, report: &mut Report) -> Result<(), String> {
        let timeout = SLOW_TIMEOUT_MS.to_string();
        let args = probe_args(&["--timeout-ms", &timeout]);
        let mut times = Vec::new();
        for _ in 0..SLOW_RUNS {
            times.push(self.timed(host, &args, Some(1))?);
        }
        let stats = Stats::of(&mut times)?;
        report.heading(&format!(
            "Hung nvidia-smi and hung daemon together (exec sleep 30), --timeout-ms {SLOW_TIMEOUT_MS}"
        ));
        report.row("probe (rejected, exit 1)", &stats);
        let deadline = Duration::from_millis(SLOW_TIMEOUT_MS);
        report.verdict(
            &format!(
                "{:.2} deadlines",
                stats.median.as_secs_f64() / deadline.as_secs_f64()
            ),
            "one deadline, not two (< 1.5)",
            stats.median < deadline.mul_f64(1.5),
        );
        Ok(())
    }

    /// Peak resident set size under `/usr/bin/time -f %M`, or "unavailable" without it.
    fn memory(
        &self,
        healthy: &Host,
        flood_smi: &Host,
        flood_both: &Host,
        report: &mut Report,
    ) -> Result<(), String> {
        report.heading("Peak resident memory (/usr/bin/time -f %M, the largest of the runs)");
        let time = Path::new("/usr/bin/time");
        if !time.is_file() {
            report.line("unavailable: /usr/bin/time is not installed (apt-get install time)");
            return Ok(());
        }
        let timeout = SLOW_TIMEOUT_MS.to_string();
        let flood_args = probe_args(&["--timeout-ms", &timeout]);
        let cases: [(&str, &Host, Vec<String>, i32); 4] = [
            ("check", healthy, self.check_args(), 0),
            ("probe, healthy fake host", healthy, probe_args(&[]), 0),
            (
                "probe, nvidia-smi floods stdout (yes)",
                flood_smi,
                flood_args.clone(),
                1,
            ),
            (
                "probe, both tools flood stdout (yes)",
                flood_both,
                flood_args,
                1,
            ),
        ];
        let mut worst = 0;
        for (label, host, args, code) in &cases {
            let mut peak = 0;
            for _ in 0..SLOW_RUNS {
                peak = peak.max(self.peak_kib(time, host, args, *code)?);
            }
            worst = worst.max(peak);
            report.line(&format!("{label:<48} {:>8.1} MiB", kib_to_mib(peak)));
        }
        report.verdict(
            &format!("worst = {:.1} MiB", kib_to_mib(worst)),
            &format!("< {} MiB", MEMORY_TARGET_KIB / 1024),
            worst < MEMORY_TARGET_KIB,
        );
        Ok(())
    }

    fn check_args(&self) -> Vec<String> {
        let fixture = self.root.join(FIXTURE).to_string_lossy().into_owned();
        let mut args = vec!["check".to_owned(), "--snapshot".to_owned(), fixture];
        args.extend(REQUEST.iter().map(|arg| (*arg).to_owned()));
        args
    }

    /// One run of the binary on `host`: its wall time, spawn to reaped, output read.
    fn timed(&self, host: &Host, args: &[String], code: Option<i32>) -> Result<Duration, String> {
        let mut command = host.command(&self.binary);
        command.args(args);
        let started = Instant::now();
        let output = command
            .output()
            .map_err(|err| format!("cannot run {}: {err}", self.binary.display()))?;
        let elapsed = started.elapsed();
        expect_exit(&output, code, args)?;
        Ok(elapsed)
    }

    fn peak_kib(
        &self,
        time: &Path,
        host: &Host,
        args: &[String],
        code: i32,
    ) -> Result<u64, String> {
        let report = host.dir.join("time.out");
        let mut command = host.command(time);
        command
            .arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&report)
            .arg(&self.binary)
            .args(args);
        let output = command
            .output()
            .map_err(|err| format!("cannot run {}: {err}", time.display()))?;
        expect_exit(&output, Some(code), args)?;
        let text = fs::read_to_string(&report)
            .map_err(|err| format!("cannot read {}: {err}", report.display()))?;
        // GNU time writes "Command exited with non-zero status N" first when the exit is not 0.
        text.lines()
            .rev()
            .find_map(|line| line.trim().parse::<u64>().ok())
            .ok_or_else(|| format!("/usr/bin/time wrote no peak: {text:?}"))
    }
}

fn probe_args(extra: &[&str]) -> Vec<String> {
    std::iter::once("probe")
        .chain(REQUEST)
        .chain(extra.iter().copied())
        .map(str::to_owned)
        .collect()
}

fn expect_exit(output: &Output, code: Option<i32>, args: &[String]) -> Result<(), String> {
    if code.is_some() && output.status.code() != code {
        return Err(format!(
            "`mps-preflight {}` exited {} (expected {}):\nstdout: {}\nstderr: {}",
            args.join(" "),
            output.status,
            code.map_or_else(String::new, |code| code.to_string()),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        ));
    }
    Ok(())
}

/// The floor of `probe`'s process cost: `nvidia-smi` with the table query and the daemon
/// front-end with the probe's commands on stdin, each with its output read; one after the other
/// (the floor of issue 6) or, with `concurrent`, both spawned before either is waited for.
fn floor(host: &Host, concurrent: bool) -> Result<Duration, String> {
    let started = Instant::now();
    let smi = spawn_tool(host, "nvidia-smi", &GPU_QUERY_ARGS, "")?;
    let (smi, daemon) = if concurrent {
        let daemon = spawn_tool(host, "nvidia-cuda-mps-control", &[], DAEMON_STDIN)?;
        (finish_tool(smi)?, finish_tool(daemon)?)
    } else {
        let smi = finish_tool(smi)?;
        let daemon = spawn_tool(host, "nvidia-cuda-mps-control", &[], DAEMON_STDIN)?;
        (smi, finish_tool(daemon)?)
    };
    let elapsed = started.elapsed();
    if !smi.status.success() || !daemon.status.success() || smi.stdout.is_empty() {
        return Err("the fake tools failed when spawned directly".to_owned());
    }
    Ok(elapsed)
}

/// Spawns a fake tool of `host` with piped output, writes `stdin` and closes it.
fn spawn_tool(host: &Host, name: &str, args: &[&str], stdin: &str) -> Result<Child, String> {
    let mut child = host
        .command(&host.bin.join(name))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run the fake {name}: {err}"))?;
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(stdin.as_bytes())
            .map_err(|err| format!("cannot write to the fake {name}: {err}"))?;
    }
    Ok(child)
}

fn finish_tool(child: Child) -> Result<Output, String> {
    child
        .wait_with_output()
        .map_err(|err| format!("cannot wait for a fake tool: {err}"))
}

fn smi_script() -> String {
    format!("#!/bin/sh\nprintf '%s\\n' '{GPU_ROW}'\n")
}

/// Reads its commands to end of file, then answers as an idle daemon does.
fn daemon_script() -> String {
    "#!/bin/sh\nwhile read -r line; do :; done\nprintf '100.0\\n'\n".to_owned()
}

fn find_program(candidates: &[&str]) -> Result<PathBuf, String> {
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .ok_or_else(|| format!("none of {candidates:?} exists"))
}

/// A temp directory removed on drop.
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new() -> Result<Self, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "mps-preflight-bench-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        Ok(Self { dir })
    }

    /// A fake host named `name` with these two tool scripts.
    fn host(&self, name: &str, smi: &str, daemon: &str) -> Result<Host, String> {
        let dir = self.dir.join(name);
        let bin = dir.join("bin");
        let pipe = dir.join("pipe");
        for path in [&dir, &bin, &pipe] {
            fs::create_dir(path)
                .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
        }
        write_script(&bin.join("nvidia-smi"), smi)?;
        write_script(&bin.join("nvidia-cuda-mps-control"), daemon)?;
        let socket = pipe.join("control");
        let listener = UnixListener::bind(&socket)
            .map_err(|err| format!("cannot bind {}: {err}", socket.display()))?;
        Ok(Host {
            dir,
            bin,
            pipe,
            _listener: listener,
        })
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn write_script(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|err| format!("cannot chmod {}: {err}", path.display()))
}

/// One fake host. The listener keeps the control socket live while the host exists.
struct Host {
    dir: PathBuf,
    bin: PathBuf,
    pipe: PathBuf,
    _listener: UnixListener,
}

impl Host {
    /// `program` in this host's environment only: `PATH` is the fake `bin/`, the pipe directory
    /// is the fake one, nothing else is inherited.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", &self.bin)
            .env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe)
            .current_dir(&self.dir);
        command
    }
}

struct Stats {
    median: Duration,
    min: Duration,
    p90: Duration,
    runs: usize,
}

impl Stats {
    fn of(times: &mut [Duration]) -> Result<Self, String> {
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
struct Report {
    text: String,
}

impl Report {
    fn new(bench: &Bench) -> Self {
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

    fn heading(&mut self, title: &str) {
        let _ = writeln!(self.text, "\n{title}");
        let _ = writeln!(self.text, "{}", "-".repeat(title.chars().count()));
    }

    fn line(&mut self, line: &str) {
        let _ = writeln!(self.text, "{line}");
    }

    fn row(&mut self, label: &str, stats: &Stats) {
        let _ = writeln!(
            self.text,
            "{label:<48} median {:>9}  min {:>9}  p90 {:>9}  ({} runs)",
            millis(stats.median),
            millis(stats.min),
            millis(stats.p90),
            stats.runs
        );
    }

    fn verdict(&mut self, measured: &str, target: &str, met: bool) {
        let verdict = if met { "met" } else { "NOT MET" };
        let _ = writeln!(self.text, "  {measured:<46} target {target:<32} {verdict}");
    }
}

fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

#[allow(
    clippy::cast_precision_loss,
    reason = "memory sizes are far below 2^52 KiB"
)]
fn kib_to_mib(kib: u64) -> f64 {
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
fn load_average() -> String {
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

fn json_str<'a>(value: &'a Value, key: &str) -> Result<&'a str, String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("cargo metadata has no {key}"))
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

    #[test]
    fn runs_flag() {
        assert_eq!(parse_runs(&[]), Ok(DEFAULT_RUNS));
        assert_eq!(parse_runs(&["--runs".into(), "7".into()]), Ok(7));
        assert!(parse_runs(&["--runs".into(), "0".into()]).is_err());
        assert!(parse_runs(&["--runs".into(), "x".into()]).is_err());
        assert!(parse_runs(&["--fast".into()]).is_err());
    }
}
