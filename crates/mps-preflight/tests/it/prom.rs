//! `probe --prom-textfile`: the textfile is written on success and on rejection alike, passes
//! the real `promtool check metrics`, and parses back to what was observed, even for a pipe
//! directory named with quotes, backslashes and a newline.

#![allow(clippy::float_cmp)] // the values compared are exact small integers

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{FakeHost, MPS_REQUEST, args, spawn};

/// A pipe directory name that breaks a naive exposition writer.
const HOSTILE: &str = "mps \"quoted\" back\\slash\nnew line";

/// One sample: its labels and value.
type Samples = BTreeMap<String, Vec<(BTreeMap<String, String>, f64)>>;

/// A small parser of the text exposition format (what this tool writes): `# HELP`/`# TYPE`
/// lines, and `name{label="escaped",…} value` samples. Panics on anything else.
fn parse(text: &str) -> (BTreeMap<String, (String, String)>, Samples) {
    let mut meta: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut samples = Samples::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP name text");
            help.clone_into(&mut meta.entry(name.to_owned()).or_default().0);
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
            kind.clone_into(&mut meta.entry(name.to_owned()).or_default().1);
        } else {
            let (name, labels, value) = sample(line);
            samples.entry(name).or_default().push((labels, value));
        }
    }
    (meta, samples)
}

fn sample(line: &str) -> (String, BTreeMap<String, String>, f64) {
    let name_end = line.find(['{', ' ']).expect("a sample line");
    let name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let mut key = String::new();
        loop {
            let (i, c) = chars.next().expect("unterminated labels");
            match c {
                '}' => {
                    rest = &body[i + 1..];
                    break;
                }
                ',' => {}
                '=' => {
                    assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line}");
                    let mut value = String::new();
                    loop {
                        match chars.next().expect("unterminated value").1 {
                            '"' => break,
                            '\\' => match chars.next().expect("escape").1 {
                                'n' => value.push('\n'),
                                '\\' => value.push('\\'),
                                '"' => value.push('"'),
                                other => panic!("bad escape \\{other} in {line:?}"),
                            },
                            '\n' => panic!("raw newline in {line:?}"),
                            c => value.push(c),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), value);
                }
                c => key.push(c),
            }
        }
    }
    let value = rest.trim().parse().expect("a float value");
    (name, labels, value)
}

/// The path of `promtool`: `None` (after saying why) when it is not installed, except under
/// CI, where `.ci/run` installs it and its absence fails.
fn promtool_path() -> Option<&'static str> {
    let found = ["/usr/bin/promtool", "/bin/promtool"]
        .into_iter()
        .find(|path| Path::new(path).exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool is missing under CI (.ci/run installs Debian's prometheus)"
        );
        eprintln!("skipping promtool: install Debian's `prometheus` package");
    }
    found
}

/// `promtool check metrics` on `text`: `None` when promtool is not installed.
fn promtool(text: &str) -> Option<(bool, String)> {
    let promtool = promtool_path()?;
    let mut child = spawn(
        Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), text.as_bytes())
        .expect("feed promtool");
    let output = child.wait_with_output().expect("promtool runs");
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Some((output.status.success(), said))
}

/// Probes `host` with the usual request and a textfile in a fresh directory; the run's exit
/// code and the file's text.
fn probe_with_textfile(host: &FakeHost) -> (i32, String) {
    let dir = host.root().join("textfiles");
    fs::create_dir_all(&dir).expect("textfile dir");
    let path = dir.join("mps.prom");
    let path_text = path.to_str().expect("UTF-8 temp path");
    let run = host.run(&args(
        "probe",
        &MPS_REQUEST,
        &["--prom-textfile", path_text],
    ));
    run.assert_discipline("probe --prom-textfile");
    let text = fs::read_to_string(&path).expect("the textfile is written");
    let leftovers: Vec<_> = fs::read_dir(&dir)
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .filter(|name| name != "mps.prom")
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode & 0o044, 0o044, "node_exporter must be able to read it");
    (run.code, text)
}

fn value(samples: &Samples, name: &str) -> f64 {
    let series = &samples[name];
    assert_eq!(series.len(), 1, "{name}: {series:?}");
    series[0].1
}

fn check_metrics(text: &str, validated: bool, pipe: &Path, unmet: &[&str]) {
    if let Some((ok, said)) = promtool(text) {
        assert!(ok, "promtool check metrics failed: {said}\n{text}");
    }
    let (meta, samples) = parse(text);
    let names = [
        "mps_preflight_validated",
        "mps_preflight_probe_success",
        "mps_preflight_unmet_prerequisites",
        "mps_preflight_daemon_up",
        "mps_preflight_probe_duration_seconds",
        "mps_preflight_last_run_timestamp_seconds",
    ];
    assert_eq!(meta.keys().collect::<Vec<_>>(), {
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        sorted
    });
    for name in names {
        let (help, kind) = &meta[name];
        assert!(!help.is_empty(), "{name} has no HELP");
        assert_eq!(kind, "gauge", "{name}");
    }
    let series = &samples["mps_preflight_validated"];
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].1, f64::from(u8::from(validated)));
    assert_eq!(
        series[0].0["pipe_directory"],
        pipe.to_str().expect("UTF-8 pipe")
    );
    let unmet_series = &samples["mps_preflight_unmet_prerequisites"];
    assert_eq!(unmet_series.len(), sharing_policy::Code::ALL.len());
    for (labels, value) in unmet_series {
        let code = labels["code"].as_str();
        assert_eq!(*value == 1.0, unmet.contains(&code), "{code}: {value}");
    }
    let duration = value(&samples, "mps_preflight_probe_duration_seconds");
    assert!((0.0..60.0).contains(&duration), "{duration}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let stamp = value(&samples, "mps_preflight_last_run_timestamp_seconds");
    assert!((now - 600.0..=now).contains(&stamp), "{stamp} vs {now}");
}

#[test]
fn a_validated_host_with_a_hostile_pipe_directory_writes_valid_metrics() {
    let mut host = FakeHost::with_pipe_name(OsStr::new(HOSTILE));
    host.one_gpu().daemon_answers("4242\n").socket();
    let (code, text) = probe_with_textfile(&host);
    assert_eq!(code, 0, "{text}");
    check_metrics(&text, true, host.pipe(), &[]);
    let (_, samples) = parse(&text);
    assert_eq!(value(&samples, "mps_preflight_daemon_up"), 1.0);
    assert_eq!(
        samples["mps_preflight_validated"][0].0["gpu_uuid"],
        "8932F937D72C4106C12F20BD9FAED9F6"
    );
}

#[test]
fn a_rejected_host_still_writes_its_metrics() {
    for hostile in [false, true] {
        let mut host = if hostile {
            FakeHost::with_pipe_name(OsStr::new(HOSTILE))
        } else {
            FakeHost::new()
        };
        host.one_gpu().daemon_gone().socket();
        let (code, text) = probe_with_textfile(&host);
        assert_eq!(code, 1, "{text}");
        check_metrics(&text, false, host.pipe(), &["daemon-unreachable"]);
        let (_, samples) = parse(&text);
        assert_eq!(value(&samples, "mps_preflight_daemon_up"), 0.0);
    }
}

#[test]
fn every_unmet_prerequisite_is_one_series_at_one() {
    let mut host = FakeHost::new();
    host.two_gpus();
    let textfile = host.root().join("m.prom");
    let run = host.run(&args(
        "probe",
        &[
            "--request",
            "mps",
            "--learner-device",
            "cuda:0",
            "--collector-device",
            "cuda:1",
            "--backend",
            "mjwarp",
        ],
        &["--prom-textfile", textfile.to_str().expect("UTF-8")],
    ));
    run.assert_rejected("two GPUs, no pipe");
    let text = fs::read_to_string(&textfile).expect("written");
    check_metrics(
        &text,
        false,
        host.pipe(),
        &[
            "different-gpus",
            "control-pipe-missing",
            "daemon-unreachable",
        ],
    );
}

#[test]
fn an_unwritable_textfile_is_exit_2_and_leaves_nothing_behind() {
    let host = FakeHost::healthy();
    let missing = host.root().join("no-such-dir").join("m.prom");
    let run = host.run(&args(
        "probe",
        &MPS_REQUEST,
        &["--prom-textfile", missing.to_str().expect("UTF-8")],
    ));
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(run.stdout.is_empty(), "{}", run.render());
    assert!(
        run.stderr.starts_with("error: ")
            && run.stderr.contains("Prometheus textfile")
            && run.stderr.contains("; no file was created"),
        "{}",
        run.render()
    );
}

/// An operator must know that stale metrics are still served.
#[test]
fn a_textfile_that_cannot_be_replaced_says_it_was_left_unchanged() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let path = host.root().join("old.prom");
    fs::write(&path, "mps_preflight_validated 1\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let run = host.run(&args(
        "probe",
        &MPS_REQUEST,
        &["--prom-textfile", path.to_str().expect("UTF-8")],
    ));
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{}", run.render());
    insta::assert_snapshot!(host.redact(&run.stderr, None), @"error: cannot write the Prometheus textfile to --prom-textfile: '[HOST]/old.prom': not writable by this user (mode 0444 grants no write permission); it was left unchanged (node_exporter still serves its old metrics)");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "mps_preflight_validated 1\n"
    );
}

/// A null probe on a host with no GPU tool and no daemon validated nothing,
/// and its probe observed nothing: both gauges are 0, as the evidence says.
#[test]
fn a_null_probe_on_an_empty_host_is_not_validated_and_not_a_success() {
    let host = FakeHost::new();
    let path = host.root().join("null.prom");
    let run = host.run(&[
        "probe",
        "--learner-device",
        "cuda:0",
        "--prom-textfile",
        path.to_str().expect("UTF-8"),
    ]);
    assert_eq!(run.code, 0, "{}", run.render());
    let evidence: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(evidence["validated"], false);
    let text = fs::read_to_string(&path).unwrap();
    check_metrics(&text, false, host.pipe(), &[]);
    let (_, samples) = parse(&text);
    assert_eq!(value(&samples, "mps_preflight_probe_success"), 0.0);
    assert_eq!(value(&samples, "mps_preflight_daemon_up"), 0.0);
}

/// A null probe on a healthy host: the probe succeeded, the daemon is up, yet nothing was
/// validated (a null request claims nothing); an explicit one there is validated.
#[test]
fn probe_success_and_validated_are_separate_questions() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let path = host.root().join("m.prom");
    let path_text = path.to_str().expect("UTF-8");
    for (request, validated) in [(&MPS_REQUEST[2..], 0.0), (&MPS_REQUEST[..], 1.0)] {
        let run = host.run(&args("probe", request, &["--prom-textfile", path_text]));
        assert_eq!(run.code, 0, "{}", run.render());
        let evidence: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let (_, samples) = parse(&fs::read_to_string(&path).unwrap());
        assert_eq!(value(&samples, "mps_preflight_validated"), validated);
        assert_eq!(evidence["validated"], validated == 1.0);
        assert_eq!(value(&samples, "mps_preflight_probe_success"), 1.0);
        assert_eq!(value(&samples, "mps_preflight_daemon_up"), 1.0);
    }
}

#[test]
fn the_round_trip_parser_rejects_what_promtool_rejects() {
    // The parser must be able to fail: a raw newline inside a label value breaks the line.
    let broken = "mps_preflight_validated{pipe_directory=\"a\nb\"} 1\n";
    assert!(std::panic::catch_unwind(|| parse(broken)).is_err());
    if let Some((ok, said)) = promtool(&format!(
        "# HELP x y\n# TYPE x gauge\n{}",
        broken.replace("mps_preflight_validated", "x")
    )) {
        assert!(!ok, "promtool accepted a broken file: {said}");
    }
}

/// The shipped alert rules (docs/node-health.md) are valid, and their unit
/// tests (each alert fires on its own series, a healthy node stays silent) pass.
#[test]
fn the_shipped_alert_rules_pass_promtool() {
    let Some(promtool) = promtool_path() else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus");
    for check in [
        ["check", "rules", "mps-preflight-rules.yml"],
        ["test", "rules", "mps-preflight-rules.test.yml"],
    ] {
        let output = spawn(
            Command::new(promtool)
                .args(check)
                .current_dir(&dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .wait_with_output()
        .expect("promtool runs");
        assert!(
            output.status.success(),
            "promtool {check:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
