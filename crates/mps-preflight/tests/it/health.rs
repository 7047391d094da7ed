//! `--format brief` and the shipped node-problem-detector plugin config: one line of at most 80
//! bytes, exit 0 OK, 1 `NonOK`, 2 Unknown ("could not tell").

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{FakeHost, MPS_REQUEST, Run, args, fixtures_dir};

/// The shipped config.
fn npd_config() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/node-problem-detector/mps-preflight-monitor.json");
    serde_json::from_str(&fs::read_to_string(&path).expect("read the NPD config"))
        .expect("the NPD config is JSON")
}

/// Where the config expects `node_exporter`'s textfile directory (a host path in the pod).
const TEXTFILE_DIR: &str = "/var/lib/node-exporter/textfile";

/// One brief line: at most `limit` bytes once NPD trims it, no line break inside.
fn assert_brief(run: &Run, code: i32, prefix: &str, limit: usize, what: &str) {
    run.assert_discipline(what);
    assert_eq!(run.code, code, "{what}\n{}", run.render());
    let message = run.stdout.trim();
    assert!(
        message.len() <= limit,
        "{what}: {} bytes\n{}",
        message.len(),
        run.render()
    );
    assert!(!message.contains('\n'), "{what}\n{}", run.render());
    assert!(run.stdout.ends_with('\n'), "{what}\n{}", run.render());
    assert!(message.starts_with(prefix), "{what}\n{}", run.render());
}

/// The shipped rule's command, run on `host` the way NPD runs it, with the textfile directory
/// moved to `textfile_dir`.
fn run_rule(host: &FakeHost, rule: &serde_json::Value, textfile_dir: &Path) -> Run {
    let path = rule["path"].as_str().expect("rule path");
    assert_eq!(
        Path::new(path).file_name().and_then(|name| name.to_str()),
        Some("mps-preflight"),
        "the rule runs mps-preflight"
    );
    let rule_args: Vec<String> = rule["args"]
        .as_array()
        .expect("rule args")
        .iter()
        .map(|arg| {
            let arg = arg.as_str().expect("string arg");
            match arg.strip_prefix(TEXTFILE_DIR) {
                Some(rest) => format!("{}{rest}", textfile_dir.display()),
                None => arg.to_owned(),
            }
        })
        .collect();
    assert!(
        rule_args
            .windows(2)
            .any(|pair| pair == ["--format", "brief"]),
        "{rule_args:?}"
    );
    host.run(&rule_args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn the_shipped_npd_config_gives_ok_nonok_and_unknown_within_max_output_length() {
    let config = npd_config();
    assert_eq!(config["plugin"], "custom");
    let limit = usize::try_from(
        config["pluginConfig"]["max_output_length"]
            .as_u64()
            .expect("max_output_length"),
    )
    .expect("fits");
    assert!(limit <= 80, "{limit}");
    let condition = config["conditions"][0]["type"].as_str().expect("condition");
    let rules = config["rules"].as_array().expect("rules");
    assert!(!rules.is_empty());
    for rule in rules {
        assert_eq!(rule["condition"], condition, "{rule}");

        let mut healthy = FakeHost::new();
        healthy.one_gpu().daemon_answers("4242\n").socket();
        let textfiles = healthy.root().join("textfile");
        fs::create_dir(&textfiles).expect("textfile dir");
        let run = run_rule(&healthy, rule, &textfiles);
        assert_brief(&run, 0, "OK: ", limit, "healthy host");
        assert!(textfiles.join("mps-preflight.prom").exists());

        let mut stale = FakeHost::new();
        stale.one_gpu().daemon_gone().socket();
        let textfiles = stale.root().join("textfile");
        fs::create_dir(&textfiles).expect("textfile dir");
        let run = run_rule(&stale, rule, &textfiles);
        assert_brief(&run, 1, "daemon-unreachable: ", limit, "stale socket");

        let mut long_path = FakeHost::with_pipe_name(std::ffi::OsStr::new(&"p".repeat(120)));
        long_path.one_gpu().daemon_answers("");
        let textfiles = long_path.root().join("textfile");
        fs::create_dir(&textfiles).expect("textfile dir");
        let run = run_rule(&long_path, rule, &textfiles);
        assert_brief(&run, 1, "control-path-too-long: ", limit, "long pipe path");

        // Unknown: the textfile directory is not mounted, so the probe could not do its job.
        let unmounted = FakeHost::healthy();
        let missing = unmounted.root().join("not-mounted");
        let run = run_rule(&unmounted, rule, &missing);
        assert_brief(&run, 2, "UNKNOWN: ", limit, "textfile dir missing");
    }
}

#[test]
fn brief_check_and_doctor_agree_with_their_json_verdicts_on_every_fixture() {
    let mut fixtures: Vec<PathBuf> = fs::read_dir(fixtures_dir())
        .expect("fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() > 10);
    let host = FakeHost::new();
    let mut unknown = 0;
    for fixture in &fixtures {
        let snapshot = fixture.to_str().expect("UTF-8");
        let json = host.run(&args("check", &MPS_REQUEST, &["--snapshot", snapshot]));
        let brief = host.run(&args(
            "check",
            &MPS_REQUEST,
            &["--snapshot", snapshot, "--format", "brief"],
        ));
        let what = format!("check --format brief {snapshot}");
        let doctor = host.run(&args(
            "doctor",
            &MPS_REQUEST,
            &["--snapshot", snapshot, "--format", "json"],
        ));
        let doctor_brief = host.run(&args(
            "doctor",
            &MPS_REQUEST,
            &["--snapshot", snapshot, "--format", "brief"],
        ));
        if json.code == 1 && !tools_not_started(fixture).is_empty() {
            // The capturing observer's own tools were missing: not the node's health.
            for (run, full) in [(&brief, &json), (&doctor_brief, &doctor)] {
                assert_brief(run, 2, "UNKNOWN: could not start nvidia-", 80, &what);
                assert!(
                    run.stderr.starts_with("error: could not start ")
                        && run.stderr.ends_with(&full.stderr),
                    "{what}: stderr says why, then keeps the full messages\n{}",
                    run.render()
                );
            }
            unknown += 1;
            continue;
        }
        assert_eq!(brief.code, json.code, "{what}\n{}", brief.render());
        assert_eq!(
            brief.stderr, json.stderr,
            "{what}: stderr keeps the full messages"
        );
        assert_eq!(doctor_brief.code, doctor.code, "{what}");
        match json.code {
            0 => {
                assert_brief(&brief, 0, "OK: mps sharing proven on GPU ", 80, &what);
                let unverified = json.json(&what)["unverified"]
                    .as_array()
                    .map_or(0, Vec::len);
                assert_eq!(
                    brief
                        .stdout
                        .ends_with(&format!("; {unverified} unverified\n")),
                    unverified > 0,
                    "{what}\n{}",
                    brief.render()
                );
                assert_eq!(doctor_brief.stdout, brief.stdout, "{what}");
            }
            1 => {
                let report: serde_json::Value =
                    serde_json::from_str(&doctor.stdout).expect("doctor JSON");
                let code = report["findings"][0]["code"].as_str().expect("a code");
                assert_brief(&brief, 1, &format!("{code}: "), 80, &what);
                assert_eq!(doctor_brief.stdout, brief.stdout, "{what}");
            }
            _ => {
                assert_brief(&brief, 2, "UNKNOWN: ", 80, &what);
                assert_brief(&doctor_brief, 2, "UNKNOWN: ", 80, &what);
            }
        }
    }
    assert!(
        unknown >= 2,
        "the fixtures of missing tools were not judged"
    );
}

/// The tools a snapshot records as not started (its `spawn_failed` queries), read from the
/// file itself rather than from the policy under test.
fn tools_not_started(snapshot: &Path) -> Vec<&'static str> {
    let facts: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(snapshot).expect("read")).expect("JSON");
    [
        ("gpu_query", "nvidia-smi"),
        ("daemon_query", "nvidia-cuda-mps-control"),
    ]
    .into_iter()
    .filter(|(key, _)| facts[key]["outcome"]["status"] == "spawn_failed")
    .map(|(_, program)| program)
    .collect()
}

/// The probe's own NVIDIA tools missing where it runs (a container without them) is its
/// configuration, not the node's health: Unknown (2), naming the tools, from `probe`, `doctor`
/// and the shipped NPD rule; only the tool that is missing is named. The JSON verdict is still
/// a rejection (1), and a tool that started and failed is still the node's problem (1).
#[test]
fn brief_is_unknown_when_the_probes_own_tools_are_missing() {
    let bare = FakeHost::new(); // PATH holds no NVIDIA tool at all
    let mut no_control = FakeHost::new();
    no_control.one_gpu().socket();
    let mut no_smi = FakeHost::new();
    no_smi.daemon_answers("4242\n").socket();
    for (host, line) in [
        (
            &bare,
            "UNKNOWN: could not start nvidia-smi, nvidia-cuda-mps-control\n",
        ),
        (
            &no_control,
            "UNKNOWN: could not start nvidia-cuda-mps-control\n",
        ),
        (&no_smi, "UNKNOWN: could not start nvidia-smi\n"),
    ] {
        for command in ["probe", "doctor"] {
            let run = host.run(&args(command, &MPS_REQUEST, &["--format", "brief"]));
            assert_brief(&run, 2, "UNKNOWN: ", 80, line);
            assert_eq!(run.stdout, line, "{command}\n{}", run.render());
            assert!(
                run.stderr.starts_with("error: could not start ")
                    && run
                        .stderr
                        .contains("NVIDIA_DRIVER_CAPABILITIES=compute,utility"),
                "{command}\n{}",
                run.render()
            );
        }
        let json = host.run(&args("probe", &MPS_REQUEST, &[]));
        assert_eq!(json.code, 1, "{}", json.render());
    }
    let rules = npd_config()["rules"].as_array().expect("rules").clone();
    for rule in &rules {
        let textfiles = bare.root().join("textfile");
        fs::create_dir_all(&textfiles).expect("textfile dir");
        let run = run_rule(&bare, rule, &textfiles);
        assert_brief(
            &run,
            2,
            "UNKNOWN: could not start ",
            80,
            "the NPD rule, no tools",
        );
    }
    // A tool that started and failed is the node's.
    let mut gone = FakeHost::new();
    gone.one_gpu().daemon_gone().socket();
    let run = gone.run(&args("probe", &MPS_REQUEST, &["--format", "brief"]));
    assert_brief(&run, 1, "daemon-unreachable: ", 80, "daemon gone");
}

#[test]
fn brief_is_unknown_when_the_snapshot_cannot_be_read() {
    let host = FakeHost::new();
    let missing = host.root().join("missing.json");
    let not_json = host.root().join("not.json");
    fs::write(&not_json, "{").expect("write");
    for path in [&missing, &not_json] {
        let path = path.to_str().expect("UTF-8");
        for command in ["check", "doctor"] {
            let run = host.run(&args(
                command,
                &MPS_REQUEST,
                &["--snapshot", path, "--format", "brief"],
            ));
            assert_brief(&run, 2, "UNKNOWN: ", 80, &format!("{command} {path}"));
        }
    }
}

#[test]
fn brief_null_request_is_ok_and_says_whether_a_daemon_answered() {
    let host = FakeHost::healthy();
    let run = host.run(&args("probe", &MPS_REQUEST[2..], &["--format", "brief"]));
    assert_eq!(
        run.stdout,
        "OK: null request; an MPS control daemon answered\n"
    );
    let mut host = FakeHost::new();
    host.one_gpu().daemon_gone();
    let run = host.run(&args("probe", &MPS_REQUEST[2..], &["--format", "brief"]));
    assert_eq!(run.code, 0, "{}", run.render());
    assert_eq!(
        run.stdout,
        "OK: null request; no MPS control daemon answered\n"
    );
}
