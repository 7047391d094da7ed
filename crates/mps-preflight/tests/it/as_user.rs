//! `--as-user`: the request judged for another user than the probing one (a root Prolog
//! checking a job judges for the job's user), and the evidence's `judged_for_uid`.

use crate::support::{FakeHost, MPS_REQUEST, args, fixtures_dir};

/// The probing process is uid 1000; its daemon's one server (PID 4428) runs as uid 1001.
fn other_users_server() -> String {
    fixtures_dir()
        .join("v2-server-of-another-user.json")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_job_users_own_server_is_not_another_users() {
    let host = FakeHost::new();
    let snapshot = other_users_server();
    let snapshot = ["--snapshot", snapshot.as_str()];
    let plain = host.run(&args("check", &snapshot, &MPS_REQUEST));
    assert_eq!(plain.code, 1, "{}", plain.render());
    assert!(plain.stderr.contains("uid 1001"), "{}", plain.render());

    let judged = host.run(&args(
        "check",
        &snapshot,
        &[&MPS_REQUEST[..], &["--as-user", "1001"]].concat(),
    ));
    let evidence = judged.json("check --as-user 1001");
    assert_eq!(evidence["caller_uid"], 1000);
    assert_eq!(evidence["judged_for_uid"], 1001);
    assert_eq!(evidence["validated"], true);

    let doctor = host.run(&args(
        "doctor",
        &snapshot,
        &[&MPS_REQUEST[..], &["--as-user", "1001"]].concat(),
    ));
    assert_eq!(doctor.code, 0, "{}", doctor.render());
}

#[test]
fn another_uid_than_the_servers_is_refused_and_says_whom_it_judged_for() {
    let host = FakeHost::new();
    let snapshot = other_users_server();
    let run = host.run(&args(
        "check",
        &["--snapshot", snapshot.as_str()],
        &[&MPS_REQUEST[..], &["--as-user", "1000"]].concat(),
    ));
    assert_eq!(run.code, 1, "{}", run.render());
    assert!(
        run.stderr.contains("the job is judged for uid 1000"),
        "{}",
        run.render()
    );
}

#[test]
fn a_name_is_looked_up_and_an_unknown_name_is_a_usage_error() {
    let host = FakeHost::new();
    let snapshot = other_users_server();
    // root is uid 0 in every /etc/passwd.
    let root = host.run(&args(
        "check",
        &["--snapshot", snapshot.as_str()],
        &[&MPS_REQUEST[2..], &["--as-user", "root"]].concat(),
    ));
    assert_eq!(root.json("--as-user root")["judged_for_uid"], 0);

    for (bad, says) in [
        ("no-such-user-mps-preflight", "no user named"),
        ("4294967295", "out of range"),
        ("", "empty"),
    ] {
        let run = host.run(&args(
            "doctor",
            &["--snapshot", snapshot.as_str()],
            &[&MPS_REQUEST[..], &["--as-user", bad]].concat(),
        ));
        assert_eq!(run.code, 2, "{bad:?}\n{}", run.render());
        assert!(run.stdout.is_empty(), "{}", run.render());
        assert!(run.stderr.contains(says), "{bad:?}\n{}", run.render());
        assert!(run.stderr.contains("--as-user"), "{}", run.render());
    }
}
