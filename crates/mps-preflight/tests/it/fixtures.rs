//! `check` and `doctor` on every recorded snapshot in fixtures/hosts.

use std::fmt::Write as _;

use crate::support::{FakeHost, GPU0, fixtures_dir};

const REQUESTS: &[&[&str]] = &[
    &[
        "--request",
        "mps",
        "--learner-device",
        "cuda:0",
        "--collector-device",
        "cuda:0",
        "--backend",
        "mjwarp",
    ],
    &[
        "--request",
        "mps",
        "--learner-device",
        "cuda:0",
        "--collector-device",
        "cuda:0",
        "--backend",
        "mjwarp",
        "--learner-uuid",
        GPU0,
    ],
    &[
        "--learner-device",
        "cuda:0",
        "--collector-device",
        "cuda:0",
        "--backend",
        "mjwarp",
    ],
];

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
        for request in REQUESTS {
            let mut args = vec!["check", "--snapshot", path];
            args.extend_from_slice(request);
            let run = host.run(&args);
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
        let mut args = vec!["doctor", "--snapshot", path, "--format", "json"];
        args.extend_from_slice(REQUESTS[0]);
        let doctor = host.run(&args);
        doctor.assert_discipline(&name);
        if doctor.code != 2 {
            let report: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
            let codes: Vec<&str> = report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["code"].as_str().unwrap())
                .collect();
            let _ = writeln!(transcript, "=== doctor: {}", codes.join(", "));
        }
        insta::assert_snapshot!(format!("check on {name}"), transcript);
    }
}
