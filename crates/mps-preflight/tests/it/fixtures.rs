//! `check` and `doctor` on every recorded snapshot in fixtures/hosts.

use std::fmt::Write as _;

use crate::support::{FakeHost, GPU0, MPS_REQUEST, args, fixtures_dir};

/// The explicit request, the same with the learner's UUID supplied, the same with
/// `--require-verified`, and the null request.
fn requests() -> [Vec<&'static str>; 4] {
    [
        MPS_REQUEST.to_vec(),
        [&MPS_REQUEST[..], &["--learner-uuid", GPU0]].concat(),
        [&MPS_REQUEST[..], &["--require-verified"]].concat(),
        MPS_REQUEST[2..].to_vec(),
    ]
}

#[test]
fn check_and_doctor_on_every_fixture() {
    let host = FakeHost::new(); // an empty PATH: check touches nothing on the host anyway
    let mut fixtures: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    fixtures.sort();
    assert!(
        fixtures.len() >= 15,
        "expected the recorded fixtures, found {}",
        fixtures.len()
    );
    for fixture in fixtures {
        let name = fixture.file_stem().unwrap().to_string_lossy().into_owned();
        let path = fixture.to_str().unwrap();
        let shown = fixture.display().to_string();
        let mut transcript = String::new();
        for request in requests() {
            let run = host.run(&args("check", &["--snapshot", path], &request));
            run.assert_discipline(&format!("{name}: {request:?}"));
            match run.code {
                0 => {
                    run.json(&name);
                }
                1 => run.assert_rejected(&name),
                _ => assert!(run.stdout.is_empty()),
            }
            // The schema rule is the only input error a shipped fixture may cause.
            if run.code == 2 {
                assert!(
                    run.stderr.contains("snapshot schema"),
                    "{name}\n{}",
                    run.render()
                );
            }
            let _ = writeln!(
                transcript,
                "=== check {}\n{}",
                request.join(" "),
                run.render().replace(&shown, "[FIXTURE]")
            );
        }
        let doctor = host.run(&args(
            "doctor",
            &["--snapshot", path, "--format", "json"],
            &MPS_REQUEST,
        ));
        doctor.assert_discipline(&name);
        if doctor.code != 2 {
            let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
            let codes: Vec<&str> = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["code"].as_str().unwrap())
                .collect();
            let warnings: Vec<&str> = report["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["code"].as_str().unwrap())
                .collect();
            let _ = writeln!(
                transcript,
                "=== doctor: {}; warnings: {}",
                codes.join(", "),
                warnings.join(", ")
            );
            // Every unverified prerequisite of validated evidence, then every advisory, is a
            // doctor warning.
            if let Some(unverified) = report["evidence"]["unverified"].as_array() {
                let advisories = report["evidence"]["advisories"].as_array();
                let listed: Vec<&str> = unverified
                    .iter()
                    .chain(advisories.into_iter().flatten())
                    .map(|c| c.as_str().unwrap())
                    .collect();
                assert_eq!(listed, warnings, "{name}");
            }
        }
        insta::assert_snapshot!(format!("check on {name}"), transcript);
    }
}
