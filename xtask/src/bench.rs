//! `cargo xtask bench [--concurrent] [--runs N] [--binary PATH]`: whole-process figures of the
//! release `mps-preflight` (or of `--binary`, another build of it) on fake hosts,
//! and (`concurrent`, alone with `--concurrent`) 64 probes at once against the real control
//! daemons. A measurement, not a test: it prints a table with each target and whether
//! this machine met it, and fails only when the binary misbehaves (a healthy fake host rejected,
//! say) or a fake host cannot be built.
//!
//! Each fake host lives in a temp directory: a pipe directory holding a real listening Unix
//! socket at `control` (kept open for the whole run), and a `bin/` that is the only `PATH`
//! entry. On the healthy hosts `nvidia-smi` and `nvidia-cuda-mps-control` are one compiled C
//! program (`crates/mps-preflight-py/bench/fake_tools.c`, built with `cc`) answering as an
//! idle one-H100 host does, its daemon serving no server or server 4428. Measured,
//! interleaved, after a warm-up:
//!
//! - `check --snapshot fixtures/hosts/healthy-idle-daemon.json` with an explicit request;
//! - `probe` with the same request on each healthy host, whose stand-in control daemon
//!   (`xtask/bench/stand_in_daemon.c`) holds `<pipe>/control_lock` and has written its log's
//!   first lines as a real one does, with and without a daemon pid file (550+ write one;
//!   470/535 do not);
//! - the probe's floor: `xtask/bench/floor.c`, a tiny C program making the probe's three
//!   host queries one after the other, run as a whole process as `probe` is;
//! - `probe --timeout-ms 1000` with both tools hung (`exec sleep 30`): one deadline, not two;
//! - peak resident memory (`/usr/bin/time -f %M`) of `check`, `probe`, and `probe` while
//!   `nvidia-smi` (then both tools) flood their output with `yes`;
//! - `merge` of 1,024 and 10,000 rank manifests.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

mod concurrent;
mod host;
mod merge;
mod report;

use host::{
    Compiled, Host, Sandbox, daemon_script, find_program, floor, start_only, timed_output,
    write_script,
};
use report::{Report, Stats, kib_to_mib, load_average, millis};

/// Runs of each whole-process measurement when `--runs` is not given.
const DEFAULT_RUNS: usize = 50;
/// Unmeasured runs of each before measuring (page cache, binary loaded, fork paths warm).
const WARM_UP: usize = 3;
/// Runs of the slow cases (a hang costs a deadline; a flood costs one too).
const SLOW_RUNS: usize = 3;
/// The deadline of each host query in the hang and flood cases.
const SLOW_TIMEOUT_MS: u64 = 1000;

/// One row of the GPU query (healthy, persistence on), for the concurrency section's fake `nvidia-smi`.
const GPU_ROW: &str = "Default, 550.163.01, Enabled, None, No, No, No, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0";
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

/// The performance targets of BENCHMARKS.md: the probe's ratio to its floor (the same queries
/// run one after the other by a tiny C program) on an idle daemon and on a served one.
const IDLE_RATIO_TARGET: f64 = 1.35;
const SERVED_RATIO_TARGET: f64 = 1.30;
const CHECK_TARGET: Duration = Duration::from_millis(3);
const MEMORY_TARGET_KIB: u64 = 16 * 1024;

/// `cargo xtask bench [--concurrent] [--runs N] [--binary PATH]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse_options(args)?;
    let metadata = super::layers::cargo_metadata()?;
    let root = PathBuf::from(json_str(&metadata, "workspace_root")?);
    let target = PathBuf::from(json_str(&metadata, "target_directory")?);
    // `--binary`: a build of another kind (a static one, the `cargo xtask dist` artifact).
    let binary = if let Some(binary) = options.binary {
        binary
    } else {
        super::cargo(&["build", "--release", "-p", "mps-preflight"], &[])?;
        target.join("release").join("mps-preflight")
    };
    let sandbox = Sandbox::new()?;
    let sleep = find_program(&["/bin/sleep", "/usr/bin/sleep"])?;
    let yes = find_program(&["/usr/bin/yes", "/bin/yes"])?;
    let compiled = Compiled::build(&root, &sandbox)?;
    let daemon = &compiled.daemon;
    let hosts = Hosts {
        idle: sandbox
            .compiled_host("idle", &compiled.idle_tools)?
            .with_daemon(daemon)?,
        idle_pid_file: sandbox
            .compiled_host("idle-pid-file", &compiled.idle_tools)?
            .with_daemon(daemon)?
            .with_pid_file()?,
        served: sandbox
            .compiled_host("served", &compiled.served_tools)?
            .with_daemon(daemon)?,
        served_pid_file: sandbox
            .compiled_host("served-pid-file", &compiled.served_tools)?
            .with_daemon(daemon)?
            .with_pid_file()?,
        compiled,
    };
    let healthy = &hosts.idle;
    let hung_script = format!("#!/bin/sh\nexec {} 30\n", sleep.display());
    let hung = sandbox.host("hung", &hung_script, &hung_script)?;
    let flood_script = format!("#!/bin/sh\nexec {}\n", yes.display());
    let flood_smi = sandbox.host("flood-smi", &flood_script, &daemon_script())?;
    let flood_both = sandbox.host("flood-both", &flood_script, &flood_script)?;

    let (runs, only_concurrent) = (options.runs, options.only_concurrent);
    let bench = Bench { binary, root, runs };
    let mut report = Report::new(&bench);
    if only_concurrent {
        concurrent::measure(&bench.binary, &mut report)?;
        print!("{}", report.text);
        return Ok(());
    }
    bench.whole_process(&hosts, &mut report)?;
    bench.hang(&hung, &mut report)?;
    bench.memory(healthy, &flood_smi, &flood_both, &mut report)?;
    merge::measure(&bench.binary, &hosts.served, &mut report)?;
    concurrent::measure(&bench.binary, &mut report)?;
    report.line(&format!("\nload average at end: {}", load_average()));
    print!("{}", report.text);
    Ok(())
}

/// The command line of `cargo xtask bench`.
#[derive(Debug, PartialEq)]
struct Options {
    /// `--concurrent`: only the real-daemon concurrency section.
    only_concurrent: bool,
    runs: usize,
    binary: Option<PathBuf>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    const USAGE: &str = "usage: cargo xtask bench [--concurrent] [--runs N] [--binary PATH]";
    let mut options = Options {
        only_concurrent: false,
        runs: DEFAULT_RUNS,
        binary: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--concurrent" => options.only_concurrent = true,
            "--runs" => {
                let value = args.next().ok_or(USAGE)?;
                options.runs = value
                    .parse::<usize>()
                    .ok()
                    .filter(|runs| *runs > 0)
                    .ok_or_else(|| format!("--runs wants a positive integer, not {value:?}"))?;
            }
            "--binary" => {
                let path = PathBuf::from(args.next().ok_or(USAGE)?);
                if !path.is_file() {
                    return Err(format!("--binary: no file at {}", path.display()));
                }
                options.binary = Some(path);
            }
            _ => return Err(USAGE.to_owned()),
        }
    }
    Ok(options)
}

/// The compiled fake hosts of the whole-process measurements, and their floor.
struct Hosts {
    idle: Host,
    idle_pid_file: Host,
    served: Host,
    served_pid_file: Host,
    compiled: Compiled,
}

struct Bench {
    binary: PathBuf,
    root: PathBuf,
    runs: usize,
}

impl Bench {
    /// `check`, `probe` and the floor, interleaved so that drift on a shared machine hits all
    /// of them alike. The probe runs on compiled fake hosts, each beside its floor (the same
    /// three host queries from a tiny C program: the GPU table and the daemon's first round,
    /// concurrently in `probe`, then the settings query): an idle daemon and a daemon serving a
    /// server, each without a pid file (470/535) and with one (550+); on each, the stand-in
    /// daemon holds the control lock, so the probe proves it and scans no `/proc`.
    fn whole_process(&self, hosts: &Hosts, report: &mut Report) -> Result<(), String> {
        type Measure<'a> = Box<dyn Fn() -> Result<Duration, String> + 'a>;
        let check_args = self.check_args();
        let probe_args = probe_args(&[]);
        let version_args = vec!["--version".to_owned()];
        let floor_program = &hosts.compiled.floor;
        // The floor's queries are the ones this binary makes, read from its own capture.
        let idle_queries = self.floor_queries(&hosts.idle)?;
        let served_queries = self.floor_queries(&hosts.served)?;
        let idle_label = format!("floor, idle daemon ({} queries)", idle_queries.len() + 1);
        let served_label = format!(
            "floor, daemon serving 4428 ({} queries)",
            served_queries.len() + 1
        );
        let measures: [(&str, Measure<'_>); 9] = [
            (
                "check --snapshot healthy-idle-daemon.json",
                Box::new(|| self.timed(&hosts.idle, &check_args, Some(0))),
            ),
            (
                "probe, idle daemon, no pid file",
                Box::new(|| self.timed(&hosts.idle, &probe_args, Some(0))),
            ),
            (
                &idle_label,
                Box::new(|| floor(&hosts.idle, floor_program, &idle_queries)),
            ),
            (
                "probe, daemon serving 4428, no pid file",
                Box::new(|| self.timed(&hosts.served, &probe_args, Some(0))),
            ),
            (
                "probe, daemon serving 4428, pid file",
                Box::new(|| self.timed(&hosts.served_pid_file, &probe_args, Some(0))),
            ),
            (
                &served_label,
                Box::new(|| floor(&hosts.served, floor_program, &served_queries)),
            ),
            (
                "  context: mps-preflight --version (start+exit)",
                Box::new(|| self.timed(&hosts.idle, &version_args, Some(0))),
            ),
            (
                "  context: the floor program alone (start+exit)",
                Box::new(|| start_only(&hosts.idle, floor_program)),
            ),
            (
                "  context: probe, idle daemon, pid file",
                Box::new(|| self.timed(&hosts.idle_pid_file, &probe_args, Some(0))),
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
        report.heading("Whole process, compiled fake hosts (interleaved runs)");
        for ((label, _), stats) in measures.iter().zip(&stats) {
            report.row(label, stats);
        }
        whole_process_verdicts(&stats, report)
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

    /// The floor program's arguments after the two tools for `host`: the queries this binary
    /// makes there after the GPU table, from its `capture`: the first session's stdin, the
    /// settings session's when it asks one, and `--compute-apps` when it asks that.
    fn floor_queries(&self, host: &Host) -> Result<Vec<String>, String> {
        let args = ["capture".to_owned()];
        let output = host
            .command(&self.binary)
            .args(&args)
            .output()
            .map_err(|err| format!("cannot run {}: {err}", self.binary.display()))?;
        expect_exit(&output, Some(0), &args)?;
        let snapshot: Value = serde_json::from_slice(&output.stdout)
            .map_err(|err| format!("`capture` printed no JSON: {err}"))?;
        let stdin = |pointer: &str| {
            snapshot
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut queries = vec![
            stdin("/daemon_query/stdin")
                .ok_or_else(|| "`capture` on the fake host recorded no daemon query".to_owned())?,
        ];
        queries.extend(stdin("/settings_query/stdin"));
        if snapshot
            .get("compute_apps_query")
            .is_some_and(|query| !query.is_null())
        {
            queries.push("--compute-apps".to_owned());
        }
        Ok(queries)
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
        let (elapsed, output) = timed_output(&mut command)?;
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

/// The targets of the whole-process table, from its rows' medians (in `whole_process`'s
/// order: check, idle probe and floor, serving probe, serving pid-file probe, serving floor).
fn whole_process_verdicts(stats: &[Stats], report: &mut Report) -> Result<(), String> {
    let median = |index: usize| stats.get(index).map(|stats| stats.median);
    let (
        Some(check),
        Some(idle),
        Some(idle_floor),
        Some(served),
        Some(pid_file),
        Some(served_floor),
    ) = (
        median(0),
        median(1),
        median(2),
        median(3),
        median(4),
        median(5),
    )
    else {
        return Err("missing measurements".to_owned());
    };
    for (label, probe, floor, target) in [
        ("idle, no pid file", idle, idle_floor, IDLE_RATIO_TARGET),
        (
            "serving, no pid file",
            served,
            served_floor,
            SERVED_RATIO_TARGET,
        ),
        (
            "serving, pid file",
            pid_file,
            served_floor,
            SERVED_RATIO_TARGET,
        ),
    ] {
        let ratio = probe.as_secs_f64() / floor.as_secs_f64();
        report.verdict(
            &format!("probe / floor ({label}) = {ratio:.2}x"),
            &format!("<= {target}x (medians)"),
            ratio <= target,
        );
    }
    report.verdict(
        &format!("check median = {}", millis(check)),
        &format!("< {}", millis(CHECK_TARGET)),
        check < CHECK_TARGET,
    );
    Ok(())
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
    fn options() {
        let parse = |args: &[&str]| {
            parse_options(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
        };
        let default = Options {
            only_concurrent: false,
            runs: DEFAULT_RUNS,
            binary: None,
        };
        assert_eq!(parse(&[]), Ok(Options { ..default }));
        assert_eq!(parse(&["--runs", "7"]).map(|options| options.runs), Ok(7));
        assert_eq!(
            parse(&["--concurrent", "--runs", "2"])
                .map(|options| (options.only_concurrent, options.runs)),
            Ok((true, 2))
        );
        assert_eq!(
            parse(&["--binary", "/bin/sh"]).map(|options| options.binary),
            Ok(Some(PathBuf::from("/bin/sh")))
        );
        assert!(parse(&["--binary", "/no/such/file"]).is_err());
        assert!(parse(&["--binary"]).is_err());
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--runs", "x"]).is_err());
        assert!(parse(&["--fast"]).is_err());
    }
}
