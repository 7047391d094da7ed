//! The JSON Schemas: the committed copies in docs/schemas/ are what `mps-preflight schema`
//! prints now, and a real validator (the `jsonschema` crate) accepts every fixture and every
//! output the tests produce, and rejects hand-broken documents.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sharing_manifest::EVIDENCE_KEYS;

use crate::support::{FakeHost, MPS_REQUEST, args, fixtures_dir};

const KINDS: [&str; 7] = [
    "snapshot",
    "evidence",
    "doctor",
    "merge",
    "attestation",
    "cases",
    "attest-snapshot",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn committed(kind: &str) -> Value {
    let path = root().join(format!("docs/schemas/{kind}.schema.json"));
    let text = fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{}: {err}; run scripts/update-schemas.sh", path.display()));
    serde_json::from_str(&text).expect("a committed schema is JSON")
}

/// A validator of the committed schema of `kind`.
pub(crate) fn validator(kind: &str) -> jsonschema::Validator {
    let schema = committed(kind);
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{kind}"
    );
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, document: &Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(document)
        .map(|err| format!("{} at {}", err, err.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}\n{document:#}");
}

fn assert_invalid(validator: &jsonschema::Validator, document: &Value, what: &str) {
    assert!(
        !validator.is_valid(document),
        "{what} was accepted:\n{document:#}"
    );
}

fn fixtures() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(fixtures_dir())
        .expect("fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).expect("read")).expect("JSON")
}

#[test]
fn the_committed_schemas_are_what_the_types_generate() {
    let host = FakeHost::new();
    for kind in KINDS {
        let run = host.run(&["schema", kind]);
        let generated = run.json(kind);
        assert_eq!(
            generated,
            committed(kind),
            "docs/schemas/{kind}.schema.json is stale: run scripts/update-schemas.sh and commit it"
        );
        let id = generated["$id"].as_str().expect("$id");
        assert!(
            id.starts_with("urn:mps-preflight:")
                && id.rsplit(':').next().is_some_and(|version| {
                    version
                        .strip_prefix('v')
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                }),
            "{id}"
        );
        assert!(
            generated["description"].is_string(),
            "{kind}: no description"
        );
    }
    assert_eq!(
        committed("snapshot")["$id"],
        format!("urn:{}", sharing_policy::SCHEMA.replace('/', ":"))
    );
    assert_eq!(
        committed("evidence")["$id"],
        format!(
            "urn:{}",
            sharing_manifest::EVIDENCE_SCHEMA.replace('/', ":")
        )
    );
    let listed: Vec<PathBuf> = fs::read_dir(root().join("docs/schemas"))
        .expect("docs/schemas")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    assert_eq!(
        listed.len(),
        KINDS.len(),
        "an unexpected schema file: {listed:?}"
    );
}

#[test]
fn every_field_is_described() {
    fn walk(value: &Value, path: &str, missing: &mut Vec<String>) {
        let Value::Object(map) = value else { return };
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, property) in properties {
                if property.get("description").is_none() {
                    missing.push(format!("{path}.{name}"));
                }
            }
        }
        for (key, child) in map {
            walk(child, &format!("{path}/{key}"), missing);
        }
    }
    for kind in KINDS {
        let mut missing = Vec::new();
        walk(&committed(kind), kind, &mut missing);
        assert!(
            missing.is_empty(),
            "fields without a doc comment: {missing:?}"
        );
    }
}

#[test]
fn every_fixture_is_a_valid_snapshot_except_the_old_schema() {
    let snapshot = validator("snapshot");
    let fixtures = fixtures();
    assert!(fixtures.len() > 20, "{}", fixtures.len());
    for path in fixtures {
        let document = read_json(&path);
        let what = path.display().to_string();
        if sharing_policy::SCHEMAS_READ
            .iter()
            .any(|schema| document["schema"] == *schema)
        {
            assert_valid(&snapshot, &document, &what);
        } else {
            assert_invalid(&snapshot, &document, &what);
        }
    }
}

/// Every pretty-printed JSON document in a snapshot file's body: lines from a `{` or `[` at
/// the start of a line to the matching `}` or `]` at the start of a line.
fn json_blocks(text: &str) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, &str)> = None;
    for line in text.lines() {
        if let Some((block, close)) = &mut current {
            block.push_str(line);
            block.push('\n');
            if line == *close {
                blocks.extend(serde_json::from_str(block).ok());
                current = None;
            }
        } else if line == "{" || line == "[" {
            let close = if line == "{" { "}" } else { "]" };
            current = Some((format!("{line}\n"), close));
        }
    }
    blocks
}

/// The committed doctor schema's finding, for the partial finding lists (`code`, `found`,
/// `fix`) that sharing-policy's snapshots record: every field present must be as the schema
/// says, and no other field may appear.
fn partial_findings() -> jsonschema::Validator {
    let doctor = committed("doctor");
    let finding = &doctor["$defs"]["Finding"];
    let schema = json!({
        "$schema": doctor["$schema"],
        "$defs": doctor["$defs"],
        "type": "array",
        "items": {
            "type": "object",
            "properties": finding["properties"],
            "required": ["code"],
            "additionalProperties": false
        }
    });
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

/// Validates evidence objects and `explain` finding lists wherever they sit in `value`;
/// returns how many of each.
fn validate_within(
    value: &Value,
    evidence: &jsonschema::Validator,
    findings: &jsonschema::Validator,
    what: &str,
) -> (usize, usize) {
    match value {
        Value::Object(map) if EVIDENCE_KEYS.iter().all(|key| map.contains_key(*key)) => {
            assert_valid(evidence, value, what);
            (1, 0)
        }
        Value::Object(map) => map.iter().fold((0, 0), |(e, f), (key, child)| {
            if key.starts_with("explain") && child.is_array() {
                assert_valid(findings, child, &format!("{what}: {key}"));
                (e, f + 1)
            } else {
                let (more_e, more_f) = validate_within(child, evidence, findings, what);
                (e + more_e, f + more_f)
            }
        }),
        Value::Array(items) => items.iter().fold((0, 0), |(e, f), item| {
            let (more_e, more_f) = validate_within(item, evidence, findings, what);
            (e + more_e, f + more_f)
        }),
        _ => (0, 0),
    }
}

#[test]
fn every_evidence_and_finding_list_in_the_insta_snapshots_is_valid() {
    let evidence = validator("evidence");
    let findings = partial_findings();
    let mut files = Vec::new();
    let mut stack = vec![root().join("crates")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "snap") {
                files.push(path);
            }
        }
    }
    let (mut evidence_count, mut findings_count) = (0, 0);
    for path in &files {
        let text = fs::read_to_string(path).expect("read snap");
        for block in json_blocks(&text) {
            let (e, f) = validate_within(&block, &evidence, &findings, &path.display().to_string());
            evidence_count += e;
            findings_count += f;
        }
    }
    assert!(
        evidence_count > 100,
        "only {evidence_count} evidence objects found"
    );
    assert!(
        findings_count > 20,
        "only {findings_count} finding lists found"
    );
    let made_up = json!([{"code": "made-up", "found": "x"}]);
    assert!(
        !findings.is_valid(&made_up),
        "the partial finding schema must be able to fail"
    );
}

#[test]
fn every_output_on_every_fixture_is_valid() {
    let evidence = validator("evidence");
    let doctor = validator("doctor");
    let host = FakeHost::new();
    let requests: [&[&str]; 3] = [
        &MPS_REQUEST,
        &MPS_REQUEST[2..],
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
    ];
    for path in fixtures() {
        let snapshot = path.to_str().expect("UTF-8");
        for request in requests {
            let what = format!("{snapshot} {request:?}");
            let check = host.run(&args("check", request, &["--snapshot", snapshot]));
            if check.code == 0 {
                assert_valid(&evidence, &check.json(&what), &what);
            }
            let report = host.run(&args(
                "doctor",
                request,
                &["--snapshot", snapshot, "--format", "json"],
            ));
            if report.code != 2 {
                let value: Value = serde_json::from_str(&report.stdout).expect("doctor JSON");
                assert_valid(&doctor, &value, &what);
            }
        }
    }
}

#[test]
fn merge_output_and_manifests_are_valid() {
    let evidence = validator("evidence");
    let merge = validator("merge");
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("4242\n").socket();
    let mut files = Vec::new();
    for (rank, world) in [("0", "2"), ("1", "2"), ("1", "2")] {
        let path = host.root().join(format!("rank{rank}-{}.json", files.len()));
        let path_text = path.to_str().expect("UTF-8").to_owned();
        let run = host.run(&args(
            "probe",
            &MPS_REQUEST,
            &[
                "--rank",
                rank,
                "--world-size",
                world,
                "--manifest",
                &path_text,
            ],
        ));
        assert_eq!(run.code, 0, "{}", run.render());
        let manifest = read_json(&path);
        assert_eq!(
            manifest["cuda_process_sharing_schema"],
            sharing_manifest::EVIDENCE_SCHEMA
        );
        assert_valid(
            &evidence,
            &manifest["cuda_process_sharing"],
            "manifest evidence",
        );
        files.push(path_text);
    }
    let consistent = host.run(&["merge", &files[0], &files[1]]);
    assert_valid(&merge, &consistent.json("merge"), "consistent merge");
    let report = sharing_manifest::merge(
        &files
            .iter()
            .map(|file| (file.clone(), read_json(Path::new(file))))
            .collect::<Vec<_>>(),
    );
    assert!(!report.is_consistent());
    assert_valid(&merge, &report.to_json(), "inconsistent merge");
}

/// `document` with the JSON-pointer `pointer` set to `value` (or removed, for `None`).
fn broken(document: &Value, pointer: &str, value: Option<Value>) -> Value {
    let mut document = document.clone();
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let target = document.pointer_mut(parent).expect("the parent exists");
    match (target, value) {
        (Value::Object(map), Some(value)) => {
            map.insert(key.to_owned(), value);
        }
        (Value::Object(map), None) => {
            map.shift_remove(key);
        }
        (Value::Array(items), Some(value)) => items[key.parse::<usize>().expect("index")] = value,
        _ => panic!("cannot break {pointer}"),
    }
    document
}

#[test]
fn hand_broken_documents_are_rejected() {
    let snapshot = validator("snapshot");
    let good = read_json(&fixtures_dir().join("healthy-socket-with-server.json"));
    assert_valid(&snapshot, &good, "the base snapshot");
    for (pointer, value) in [
        ("/schema", Some(json!("mps-preflight/host-facts/v5"))),
        ("/unknown_fact", Some(json!(true))),
        ("/os", None),
        ("/env", Some(json!("linux"))),
        ("/env/cuda_visible_devices", Some(json!(0))),
        (
            "/env/cuda_mps_pipe_directory",
            Some(json!({"non_utf8_bytes": [256]})),
        ),
        ("/control_pipe/lstat/kind", Some(json!("pipe"))),
        ("/control_pipe/path_len", Some(json!(-1))),
        ("/daemon_query/outcome/status", Some(json!("finished"))),
        ("/daemon_query/timeout_ms", Some(json!("5000"))),
        ("/pid_file/pid_alive", Some(json!("yes"))),
    ] {
        assert_invalid(&snapshot, &broken(&good, pointer, value), pointer);
    }

    let evidence = validator("evidence");
    let host = FakeHost::new();
    let fixture = fixtures_dir().join("healthy-socket-with-server.json");
    let fixture = fixture.to_str().expect("UTF-8");
    let good = host
        .run(&args("check", &MPS_REQUEST, &["--snapshot", fixture]))
        .json("check");
    assert_valid(&evidence, &good, "the base evidence");
    for (pointer, value) in [
        ("/daemon_pid", None),
        ("/configured", None),
        ("/validated", Some(json!("true"))),
        ("/rank", Some(json!(0.5))),
        ("/server_pid", Some(json!("4428"))),
        (
            "/learner_gpu_uuid",
            Some(json!(["8932F937D72C4106C12F20BD9FAED9F6"])),
        ),
    ] {
        assert_invalid(&evidence, &broken(&good, pointer, value), pointer);
    }

    let doctor = validator("doctor");
    let blocked = fixtures_dir().join("mps-control-not-installed.json");
    let run = host.run(&args(
        "doctor",
        &MPS_REQUEST,
        &[
            "--snapshot",
            blocked.to_str().expect("UTF-8"),
            "--format",
            "json",
        ],
    ));
    let good: Value = serde_json::from_str(&run.stdout).expect("doctor JSON");
    assert_valid(&doctor, &good, "the base doctor report");
    for (pointer, value) in [
        ("/ok", None),
        ("/evidence", None),
        ("/findings/0/code", Some(json!("made-up-code"))),
        ("/findings/0/fix", None),
        ("/findings", Some(json!({}))),
        ("/evidence", Some(json!({"validated": true}))),
    ] {
        assert_invalid(&doctor, &broken(&good, pointer, value), pointer);
    }

    let merge = validator("merge");
    let good = json!({
        "consistent": false, "world_size": 2, "configured": "mps", "effective": "mps",
        "validated": true, "ranks": [],
        "findings": [{"code": "missing-rank", "message": "rank 1 is missing", "sources": []}]
    });
    assert_valid(&merge, &good, "the base merge report");
    for (pointer, value) in [
        ("/consistent", Some(json!("false"))),
        ("/findings/0/code", Some(json!("no-such-code"))),
        ("/ranks", Some(json!([{"rank": 0, "source": "a.json"}]))),
        ("/world_size", None),
    ] {
        assert_invalid(&merge, &broken(&good, pointer, value), pointer);
    }
}

/// The project's own suites are valid case files, and the attest snapshot
/// that `attest --save-snapshot` writes is a valid attest snapshot; broken ones are not.
#[test]
fn the_suites_and_an_attest_snapshot_are_valid() {
    let cases = validator("cases");
    for folder in ["fixtures/cases", "fixtures/failing-cases"] {
        for entry in fs::read_dir(root().join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".cases.json") {
                assert_valid(&cases, &read_json(&path), &path.display().to_string());
            }
        }
    }
    let good = json!({
        "request": {"request": "mps", "learner_device": "cuda:0", "collector_device": "cuda:0", "backend": "mjwarp", "require_verified": true},
        "cases": [{"name": "a", "snapshot": "h.json", "expect": {"rejected": "daemon-unreachable"}}]
    });
    assert_valid(&cases, &good, "defaults");
    for (pointer, value) in [
        ("/cases/0/expect/rejected", json!("daemon-gone")),
        ("/request/learner-device", json!("cuda:0")),
        ("/cases/0/severity", json!("high")),
    ] {
        assert_invalid(&cases, &broken(&good, pointer, Some(value)), pointer);
    }

    let host = FakeHost::new();
    let saved = host.root().join("attest.json");
    let collector = std::process::id().to_string();
    let run = host.run(&[
        "attest",
        "--learner-pid",
        "1",
        "--collector-pid",
        &collector,
        "--save-snapshot",
        saved.to_str().unwrap(),
    ]);
    run.assert_discipline("attest --save-snapshot");
    let snapshot = read_json(&saved);
    let attest = validator("attest-snapshot");
    assert_valid(&attest, &snapshot, "attest --save-snapshot");
    let other = broken(
        &snapshot,
        "/schema",
        Some(json!("mps-preflight/attest-facts/v0")),
    );
    assert_invalid(&attest, &other, "/schema");
}
