//! `mps-preflight test`: the project's own suites, the deliberately failing one, `JUnit` read
//! back with a real XML parser, every unreadable case as exit 2, and no host access.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{FakeHost, Run, bare_snapshot, fixtures_dir};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn suite(name: &str) -> String {
    root().join("fixtures").join(name).display().to_string()
}

/// The number of cases in every `*.cases.json` of `folder`.
fn count_cases(folder: &str) -> usize {
    fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".cases.json"))
        .map(|path| {
            let value: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
            value["cases"].as_array().unwrap().len()
        })
        .sum()
}

/// Writes `cases` as a case file in `host`'s folder and runs `test` on it.
fn run_cases(host: &FakeHost, cases: &Value) -> (PathBuf, Run) {
    let file = host.root().join("team.cases.json");
    fs::write(
        &file,
        serde_json::to_vec(&json!({ "cases": cases })).unwrap(),
    )
    .unwrap();
    let run = host.run(&["test", file.to_str().unwrap()]);
    (file, run)
}

fn fixture(name: &str) -> String {
    fixtures_dir().join(name).display().to_string()
}

fn healthy_case() -> Value {
    json!({
        "name": "h100-healthy",
        "snapshot": fixture("healthy-socket-with-server.json"),
        "request": {"request": "mps", "learner_device": "cuda:0", "collector_device": "cuda:0", "backend": "mjwarp"},
        "expect": {"validated": true, "evidence": {"server_pid": 4428}}
    })
}

#[test]
fn the_project_s_own_suites_pass() {
    let host = FakeHost::new();
    let folder = suite("cases");
    let run = host.run(&["test", &folder]);
    run.assert_discipline("fixtures/cases");
    let cases = count_cases(&folder);
    assert!(cases >= 30, "{cases} cases");
    assert_eq!(run.code, 0, "{}", run.render());
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), cases + 1, "{}", run.stdout);
    assert!(
        lines[..cases]
            .iter()
            .all(|line| line.starts_with(&format!("ok   {folder}/"))),
        "{}",
        run.stdout
    );
    assert_eq!(lines[cases], format!("{cases} passed, 0 failed"));
    assert_eq!(run.stderr, "");
}

#[test]
fn the_deliberately_failing_suite_fails_with_the_right_line() {
    let host = FakeHost::new();
    let folder = suite("failing-cases");
    let run = host.run(&["test", &folder]);
    assert_eq!(run.code, 1, "{}", run.render());
    let file = format!("{folder}/deliberately-failing.cases.json");
    assert_eq!(
        run.stdout,
        format!(
            "ok   {file}: healthy host validates\n\
             FAIL {file}: frozen daemon is unreachable: rejected: expected daemon-unreachable, got daemon-timed-out\n\
             1 passed, 1 failed\n"
        )
    );
    assert_eq!(
        run.stderr,
        "error: 1 of 2 cases failed (the report is on stdout)\n"
    );
}

#[test]
fn every_kind_of_difference_is_named_expected_against_got() {
    let host = FakeHost::new();
    let mut wrong_pid = healthy_case();
    wrong_pid["name"] = json!("wrong pid");
    wrong_pid["expect"]["evidence"] =
        json!({"server_pid": 1, "daemon_pid": 2718, "control_pipe_kind": "fifo"});
    let mut expected_rejection = healthy_case();
    expected_rejection["name"] = json!("expected rejection");
    expected_rejection["expect"] = json!({"rejected": "daemon-unreachable"});
    let mut expected_validation = healthy_case();
    expected_validation["name"] = json!("expected validation");
    expected_validation["snapshot"] = json!(fixture("frozen-daemon.json"));
    let mut null_request = healthy_case();
    null_request["name"] = json!("null request");
    null_request["request"]["request"] = Value::Null;
    let (file, run) = run_cases(
        &host,
        &json!([
            wrong_pid,
            expected_rejection,
            expected_validation,
            null_request
        ]),
    );
    assert_eq!(run.code, 1, "{}", run.render());
    let file = file.display();
    assert_eq!(
        run.stdout,
        format!(
            "FAIL {file}: wrong pid: evidence.server_pid: expected 1, got 4428; evidence.control_pipe_kind: expected \"fifo\", got \"unix_socket\"\n\
             FAIL {file}: expected rejection: rejected: expected daemon-unreachable, got validated\n\
             FAIL {file}: expected validation: validated: expected true, got rejected daemon-timed-out\n\
             FAIL {file}: null request: validated: expected true, got false\n\
             0 passed, 4 failed\n"
        )
    );
}

#[test]
fn junit_reads_back_with_a_real_xml_parser() {
    let host = FakeHost::new();
    let mut tricky = healthy_case();
    tricky["name"] = json!("<&\"'> tab\there \u{1} é");
    tricky["expect"] = json!({"rejected": "daemon-unreachable"});
    let file = host.root().join("tricky.cases.json");
    fs::write(
        &file,
        serde_json::to_vec(&json!({"cases": [healthy_case(), tricky]})).unwrap(),
    )
    .unwrap();
    let junit = host.root().join("report.xml");
    let (passing, failing) = (suite("cases"), suite("failing-cases"));
    let run = host.run(&[
        "test",
        &passing,
        &failing,
        file.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.render());

    let xml = fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let top = document.root_element();
    assert_eq!(top.tag_name().name(), "testsuites");
    let total = count_cases(&passing) + 2 + 2;
    assert_eq!(top.attribute("tests"), Some(total.to_string().as_str()));
    assert_eq!(top.attribute("failures"), Some("2"));
    let suites: Vec<_> = top
        .children()
        .filter(|node| node.has_tag_name("testsuite"))
        .collect();
    assert_eq!(
        suites.len(),
        4,
        "two files of cases, the failing file, the tricky file"
    );
    let testcases: Vec<_> = top
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .collect();
    assert_eq!(testcases.len(), total);
    // Every stdout line is a testcase, in order, and the failures are the FAIL lines.
    for (line, testcase) in run.stdout.lines().zip(&testcases) {
        let name = testcase.attribute("name").unwrap();
        let failure = testcase
            .children()
            .find(|node| node.has_tag_name("failure"));
        assert_eq!(line.starts_with("FAIL"), failure.is_some(), "{line}");
        // stdout escapes control characters; XML cannot hold most of them (U+FFFD there).
        let printed = name.replace('\t', r"\t").replace('\u{fffd}', r"\x01");
        assert!(line.contains(&printed), "{line} / {name}");
    }
    let tricky = testcases.last().unwrap();
    assert_eq!(
        tricky.attribute("name"),
        Some("<&\"'> tab\there \u{fffd} é")
    );
    let class = file
        .to_str()
        .unwrap()
        .strip_suffix(".cases.json")
        .unwrap()
        .replace('.', "_");
    assert_eq!(tricky.attribute("classname"), Some(class.as_str()));
    let failure = tricky.first_element_child().unwrap();
    assert_eq!(
        failure.text(),
        Some("rejected: expected daemon-unreachable, got validated")
    );
    assert_eq!(failure.attribute("message"), failure.text());
}

#[test]
fn a_junit_file_in_a_missing_folder_is_created_with_its_folders() {
    let host = FakeHost::new();
    let junit = host.root().join("no/such/dir/report.xml");
    let (file, _) = run_cases(&host, &json!([healthy_case()]));
    let run = host.run(&[
        "test",
        file.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.render());
    assert!(
        run.stdout.ends_with("1 passed, 0 failed\n"),
        "{}",
        run.render()
    );
    let xml = fs::read_to_string(&junit).unwrap();
    assert!(roxmltree::Document::parse(&xml).is_ok());
}

#[test]
fn a_junit_file_that_cannot_be_written_prints_nothing_and_says_the_file_s_state() {
    let host = FakeHost::new();
    let (file, _) = run_cases(&host, &json!([healthy_case()]));
    // Root ignores a read-only mode, so the writes are made to fail otherwise: a parent that
    // is a regular file (nothing can be created), and a target that is a folder (left as is).
    let blocker = host.root().join("blocker");
    fs::write(&blocker, "a file, not a folder").unwrap();
    let taken = host.root().join("taken.xml");
    fs::create_dir(&taken).unwrap();
    for (junit, state) in [
        (blocker.join("report.xml"), "no file was created"),
        (taken.clone(), "it was left unchanged"),
    ] {
        let run = host.run(&[
            "test",
            file.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ]);
        run.assert_discipline("junit");
        assert_eq!(run.code, 2, "{}", run.render());
        assert_eq!(run.stdout, "", "nothing is printed before a failed write");
        assert!(
            run.stderr
                .starts_with("error: cannot write the JUnit report to --junit")
                && run.stderr.contains(state),
            "{}",
            run.render()
        );
    }
    assert!(taken.is_dir());
}

#[test]
fn a_hostile_case_name_cannot_forge_report_lines() {
    let host = FakeHost::new();
    let mut hostile = healthy_case();
    hostile["name"] = json!("x\nok   forged: y\n9 passed, 0 failed\r\u{1b}[2K");
    let (_, run) = run_cases(&host, &json!([hostile]));
    assert_eq!(run.code, 0, "{}", run.render());
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(
        lines[0].ends_with(r"x\nok   forged: y\n9 passed, 0 failed\r\x1b[2K"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "1 passed, 0 failed");
}

#[test]
fn a_broken_case_file_beside_good_ones_is_an_error_and_the_junit_file_is_rewritten() {
    let host = FakeHost::new();
    let folder = host.root().join("fleet");
    fs::create_dir(&folder).unwrap();
    let good = json!({ "cases": [healthy_case()] });
    fs::write(
        folder.join("a.cases.json"),
        serde_json::to_vec(&good).unwrap(),
    )
    .unwrap();
    fs::write(folder.join("b.cases.json"), "{not json").unwrap();
    fs::write(
        folder.join("c.cases.json"),
        serde_json::to_vec(&good).unwrap(),
    )
    .unwrap();
    // The previous run's green report must not survive this one.
    let junit = host.root().join("report.xml");
    fs::write(
        &junit,
        "<testsuites tests=\"2\" failures=\"0\" errors=\"0\"/>",
    )
    .unwrap();
    let run = host.run(&[
        "test",
        folder.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    run.assert_discipline("broken beside good");
    assert_eq!(run.code, 2, "{}", run.render());
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.stdout);
    assert!(
        lines[0].starts_with("ERROR ") && lines[0].contains("b.cases.json"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("ok   ") && lines[1].contains("a.cases.json"));
    assert!(lines[2].starts_with("ok   ") && lines[2].contains("c.cases.json"));
    assert_eq!(lines[3], "2 passed, 0 failed, 1 unreadable");
    assert!(run.stderr.contains("b.cases.json"), "{}", run.stderr);

    let xml = fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let top = document.root_element();
    assert_eq!(
        (
            top.attribute("tests"),
            top.attribute("failures"),
            top.attribute("errors")
        ),
        (Some("3"), Some("0"), Some("1"))
    );
    let error = top
        .descendants()
        .find(|node| node.has_tag_name("error"))
        .unwrap();
    assert!(error.attribute("message").unwrap().contains("b.cases.json"));
    for testcase in top
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
    {
        assert!(testcase.attribute("time").is_some());
        assert!(!testcase.attribute("classname").unwrap().contains('.'));
    }
}

#[test]
fn cases_only_in_subfolders_are_named_as_not_searched() {
    let host = FakeHost::new();
    let nested = host.root().join("fleet/team-a");
    fs::create_dir_all(&nested).unwrap();
    let good = json!({ "cases": [healthy_case()] });
    fs::write(
        nested.join("a.cases.json"),
        serde_json::to_vec(&good).unwrap(),
    )
    .unwrap();
    let run = host.run(&["test", host.root().join("fleet").to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(
        run.stderr.contains("subfolders are not searched")
            && run.stderr.contains(nested.to_str().unwrap()),
        "{}",
        run.stderr
    );
}

#[test]
fn an_inline_snapshot_and_a_null_request_work() {
    let host = FakeHost::new();
    let cases = json!([
        {"name": "cpu learner", "snapshot": bare_snapshot(),
         "request": {"learner_device": "cpu", "backend": "mjwarp"},
         "expect": {"validated": false, "evidence": {"ambient_server": false, "learner_device": "cpu"}}},
        {"name": "nothing observed", "snapshot": bare_snapshot(),
         "request": {"request": "mps", "learner_device": "cuda:0", "collector_device": "cuda:0", "backend": "mjwarp"},
         "expect": {"rejected": "cuda-unavailable"}}
    ]);
    let (_, run) = run_cases(&host, &cases);
    assert_eq!(run.code, 0, "{}", run.render());
    assert!(run.stdout.ends_with("2 passed, 0 failed\n"));
}

#[test]
fn an_unreadable_case_is_exit_2_naming_the_file_and_the_case() {
    let host = FakeHost::new();
    let edit = |change: &dyn Fn(&mut Value)| {
        let mut case = healthy_case();
        change(&mut case);
        json!([case])
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            edit(&|c| c["expect"] = json!({"rejected": "daemon-gone"})),
            "\"daemon-gone\" is not a rejection code",
        ),
        (
            edit(&|c| c["expect"]["evidence"] = json!({"server": 4428})),
            "\"server\" is not an evidence key",
        ),
        (
            edit(&|c| c["expect"] = json!({"validated": true, "rejected": "daemon-unreachable"})),
            "\"expect\" must be",
        ),
        (
            edit(&|c| c["expect"] = json!({"validated": "yes"})),
            "\"expect\" must be",
        ),
        (
            edit(&|c| c["expect"]["extra"] = json!(1)),
            "unknown key \"extra\"",
        ),
        (
            edit(&|c| c["request"]["learner-device"] = json!("cuda:0")),
            "unknown key \"learner-device\"",
        ),
        (
            edit(&|c| c["request"]["rank"] = json!("first")),
            "expected an integer",
        ),
        (
            edit(&|c| c["snapshot"] = json!(fixture("old-snapshot-schema.json"))),
            "is not supported",
        ),
        (
            edit(&|c| c["snapshot"] = json!("missing.json")),
            "missing.json",
        ),
        (
            edit(&|c| c["snapshot"] = json!({"schema": "mps-preflight/host-facts/v0"})),
            "inline snapshot: snapshot schema",
        ),
        (edit(&|c| c["name"] = json!("")), "needs a \"name\""),
        (
            edit(&|c| c["severity"] = json!("high")),
            "unknown key \"severity\"",
        ),
        (json!([healthy_case(), healthy_case()]), "appears twice"),
        (json!([]), "\"cases\" is empty"),
    ];
    for (cases, needle) in cases {
        let (file, run) = run_cases(&host, &cases);
        run.assert_discipline(needle);
        assert_eq!(run.code, 2, "{needle}: {}", run.render());
        // One ERROR line for the file (its message, one line), then the counts.
        let message = run
            .stderr
            .lines()
            .next()
            .unwrap()
            .strip_prefix("error: ")
            .unwrap();
        assert_eq!(
            run.stdout,
            format!("ERROR {message}\n0 passed, 0 failed, 1 unreadable\n"),
            "{needle}"
        );
        assert!(
            run.stderr
                .starts_with(&format!("error: {}: ", file.display())),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
        if cases.as_array().is_some_and(|cases| cases.len() == 1) && needle != "needs a \"name\"" {
            assert!(
                run.stderr.contains("case \"h100-healthy\""),
                "{}",
                run.stderr
            );
        }
    }
    let empty = host.root().join("empty");
    fs::create_dir(&empty).unwrap();
    fs::write(empty.join("notes.json"), "{}").unwrap();
    for args in [
        vec!["test", empty.to_str().unwrap()],
        vec!["test", "no-such.cases.json"],
        vec!["test"],
    ] {
        let run = host.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.render());
    }
    fs::write(host.root().join("bad.cases.json"), "{not json").unwrap();
    let run = host.run(&["test", host.root().join("bad.cases.json").to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.render());
}

#[test]
fn test_never_touches_the_host() {
    let mut host = FakeHost::new();
    let touched = host.root().join("touched");
    let body = format!(": > '{}'; exit 0", touched.display());
    host.script("nvidia-smi", &body)
        .script("nvidia-cuda-mps-control", &body)
        .socket();
    let (_, run) = run_cases(&host, &json!([healthy_case()]));
    assert_eq!(run.code, 0, "{}", run.render());
    assert!(!touched.exists(), "test ran a host tool");
}

#[test]
fn the_offline_testing_page_shows_the_real_suite_and_its_real_output() {
    let page = fs::read_to_string(root().join("docs/offline-testing.md")).unwrap();
    let block = |fence: &str| -> String {
        let start = page.find(fence).unwrap() + fence.len();
        let end = start + page[start..].find("\n```").unwrap();
        page[start..end].to_owned()
    };
    let file = "fixtures/failing-cases/deliberately-failing.cases.json";
    let shown = block("```json\n{\n  \"description\"");
    let actual = fs::read_to_string(root().join(file)).unwrap();
    assert_eq!(
        format!("{{\n  \"description\"{shown}\n"),
        actual,
        "the page shows {file} whole"
    );

    let console = block("```console\n");
    let (command, output) = console.split_once('\n').unwrap();
    assert_eq!(command, format!("$ mps-preflight test {file}"));
    let mut run = std::process::Command::new(crate::support::BIN);
    let run = crate::support::finish(run.arg("test").arg(file).current_dir(root()).env_clear());
    assert_eq!(run.code, 1);
    assert_eq!(run.stdout, format!("{output}\n"));
}

/// A top-level `request` gives every case its defaults; a case's own keys win.
#[test]
fn a_top_level_request_is_every_case_s_default() {
    let host = FakeHost::new();
    let file = host.root().join("team.cases.json");
    let suite = json!({
        "request": {"request": "mps", "learner_device": "cuda:0", "collector_device": "cuda:0", "backend": "mjwarp"},
        "cases": [
            {"name": "healthy", "snapshot": fixture("healthy-socket-with-server.json"),
             "expect": {"validated": true, "evidence": {"server_pid": 4428}}},
            {"name": "other backend", "snapshot": fixture("healthy-socket-with-server.json"),
             "request": {"backend": "mujoco"},
             "expect": {"rejected": "unsupported-backend"}}
        ]
    });
    fs::write(&file, serde_json::to_vec(&suite).unwrap()).unwrap();
    let run = host.run(&["test", file.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.render());
    assert!(
        run.stdout.ends_with("2 passed, 0 failed\n"),
        "{}",
        run.stdout
    );
    let bad = json!({"request": "mps", "cases": [healthy_case()]});
    fs::write(&file, serde_json::to_vec(&bad).unwrap()).unwrap();
    let run = host.run(&["test", file.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(run.stderr.contains("must be an object"), "{}", run.stderr);
}
