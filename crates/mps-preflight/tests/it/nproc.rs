//! Under a per-user process limit (`RLIMIT_NPROC`) no thread or query can be
//! started, yet no command panics or exits outside 0/1/2. Each run is a user with no other
//! process, so the limit counts this run's threads alone: 1 leaves no thread and no query
//! process at all, 2 and 3 some of the query threads, 4 to 6 a query process or more. With no
//! descriptor for the signal handlers' wake-up (`RLIMIT_NOFILE`), no query starts at all.

use crate::support::{FakeHost, MPS_REQUEST, args};

/// A UID no account has and no process runs as, distinct for every run of every test binary.
fn unused_uid(run: u32) -> u32 {
    3_000_000_000 + (std::process::id() % 100_000) * 100 + run
}

#[test]
fn no_command_panics_under_a_process_limit() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let null = ["--learner-device", "cuda:0", "--backend", "mjwarp"];
    let commands: [(&str, Vec<&str>); 4] = [
        ("null probe", args("probe", &null, &[])),
        ("mps probe", args("probe", &MPS_REQUEST, &[])),
        ("capture", vec!["capture"]),
        ("doctor", args("doctor", &MPS_REQUEST, &[])),
    ];
    let mut run_number = 0;
    for nproc in 1..=6 {
        for (name, command) in &commands {
            run_number += 1;
            let Some(run) = host.run_limited(unused_uid(run_number), nproc, command) else {
                return;
            };
            let what = format!("{name} under RLIMIT_NPROC={nproc}");
            run.assert_discipline(&what);
            match *name {
                // A null request never fails: what could not be observed stays null.
                "null probe" | "capture" => {
                    assert_eq!(run.code, 0, "{what}\n{}", run.render());
                    let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
                    assert!(value.is_object(), "{what}");
                }
                _ => assert!(matches!(run.code, 0 | 1), "{what}\n{}", run.render()),
            }
        }
    }
}

/// With no descriptor left for the signal handlers' wake-up (`RLIMIT_NOFILE` 4: the socket pair
/// needs two beyond the three standard streams), no query starts (one started then could
/// outlive a Ctrl-C): the null probe's host fields are null and say why; an explicit request is
/// rejected.
#[test]
fn without_a_signal_handler_no_query_starts() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let Some(run) = host.run_prlimited(unused_uid(99), "--nofile=4:4", &["capture"]) else {
        return;
    };
    assert_eq!(run.code, 0, "{}", run.render());
    let snapshot: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let error = snapshot["gpu_query"].to_string();
    assert!(
        error.contains("the signal handler could not be installed"),
        "{}",
        run.render()
    );
    let limit = "--nofile=4:4";
    let Some(run) = host.run_prlimited(unused_uid(98), limit, &args("probe", &MPS_REQUEST, &[]))
    else {
        return;
    };
    run.assert_rejected("mps probe with no descriptor for the signal handlers");
}

/// The signal handlers need no thread: under `RLIMIT_NPROC` 1 they are installed, and the
/// queries fail only because no process can be created, which their records say.
#[test]
fn under_a_process_limit_the_handlers_install_and_the_spawns_fail() {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let Some(run) = host.run_limited(unused_uid(97), 1, &["capture"]) else {
        return;
    };
    assert_eq!(run.code, 0, "{}", run.render());
    let snapshot: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let error = snapshot["gpu_query"]["outcome"].to_string();
    assert!(error.contains("spawn_failed"), "{}", run.render());
    assert!(
        !error.contains("the signal handler could not be installed"),
        "{}",
        run.render()
    );
}
