//! `attest`'s identity rules (issue 21 part 2): one PID given for both processes is a usage
//! error everywhere, and a PID whose process changed between rounds is not that process.

use std::fs;

use serde_json::Value;

use crate::attest::{Attest, lines};
use crate::support::MPS_REQUEST;

#[test]
fn the_same_pid_twice_is_a_usage_error_in_attest_doctor_and_replay() {
    let mut fake = Attest::new();
    let (learner, collector, server) = (
        fake.process(false),
        fake.process(false),
        fake.process(false),
    );
    fake.servers(&[server]);
    fake.clients(server, &lines(&[learner, collector]));
    // Listed as a client: today's false "attested" for `$!` captured twice.
    let run = fake.run(learner, learner, &[]);
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(run.stdout.is_empty(), "{}", run.render());
    assert!(
        run.stderr.contains("the same process (PID"),
        "{}",
        run.stderr
    );
    assert!(!fake.state.join("log").exists(), "nothing was asked");

    let pid = learner.to_string();
    for format in ["human", "json", "brief"] {
        let mut args = vec!["doctor"];
        args.extend_from_slice(&MPS_REQUEST);
        args.extend_from_slice(&[
            "--learner-pid",
            &pid,
            "--collector-pid",
            &pid,
            "--format",
            format,
        ]);
        let run = fake.host.run(&args);
        assert_eq!(run.code, 2, "{format}: {}", run.render());
        assert!(run.stderr.contains("the same process"), "{}", run.render());
    }
    assert!(!fake.state.join("log").exists(), "doctor asked nothing");

    // A snapshot whose two roles name one PID (hand-edited: attest never writes one).
    let saved = fake.host.root().join("attest.json");
    let live = fake.run(
        learner,
        collector,
        &["--save-snapshot", saved.to_str().unwrap()],
    );
    assert_eq!(live.code, 0, "{}", live.render());
    let mut snapshot: Value = serde_json::from_slice(&fs::read(&saved).unwrap()).unwrap();
    snapshot["collector"] = snapshot["learner"].clone();
    fs::write(&saved, serde_json::to_vec(&snapshot).unwrap()).unwrap();
    let replay = fake
        .host
        .run(&["attest", "--snapshot", saved.to_str().unwrap()]);
    assert_eq!(replay.code, 2, "{}", replay.render());
    assert!(
        replay.stderr.contains("must be two processes"),
        "{}",
        replay.stderr
    );
}
