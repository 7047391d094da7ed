//! `attest` against Debian's real `nvidia-cuda-mps-control`. No GPU: the daemon
//! answers but no MPS server can start, so two live processes pointed at it are not clients,
//! with "no MPS server is running"; the control log shows only read-only commands, and
//! `get_client_list` carries only the PID. `.ci/run` runs this file against 535 and 550.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::daemon::{Daemon, binary_or_skip, os_text, package_version};
use crate::common::worth_waiting;
use mps_host::{AttestOptions, Runner, daemon_query, observe_attest};
use sharing_policy::{
    AttestCode, LikelyCause, Pid, QueryOutcome, ReadOnlyCommand, attest, client_query,
    parse_client_list,
};

/// A live process whose environment points its CUDA at `daemon` (it never initialises CUDA).
fn client_of(daemon: &Daemon) -> Child {
    #[allow(clippy::disallowed_methods, reason = "the test's own client processes")]
    Command::new("sleep")
        .arg("60")
        .env("CUDA_MPS_PIPE_DIRECTORY", &daemon.pipe_dir)
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

fn pid(child: &Child) -> Pid {
    Pid::new(i64::from(child.id())).unwrap()
}

#[test]
fn two_live_processes_without_a_server_are_not_attested() {
    let Some(binary) = binary_or_skip("two_live_processes_without_a_server_are_not_attested")
    else {
        return;
    };
    eprintln!("driver package: {:?}", package_version(&binary));
    let daemon = Daemon::start(&binary);
    let (mut learner, mut collector) = (client_of(&daemon), client_of(&daemon));
    let options = AttestOptions {
        search_path: daemon.runner().search_path,
        timeout: Duration::from_secs(10),
        wait: Duration::from_millis(300),
        ..AttestOptions::new(pid(&learner), pid(&collector), os_text(&daemon.pipe_dir))
    };

    let facts = observe_attest(&options, &worth_waiting);
    let attestation = attest(&facts);

    assert!(!attestation.attested);
    assert!(
        facts.rounds > 1,
        "it polled for the wait: {} rounds",
        facts.rounds
    );
    assert!(attestation.servers.is_empty());
    for process in [&attestation.learner, &attestation.collector] {
        assert_eq!(process.code, AttestCode::NotAClient, "{attestation:#?}");
        assert_eq!(process.likely_cause, Some(LikelyCause::NoServerRunning));
    }
    let lines = attestation.error_lines();
    assert_eq!(lines.len(), 2);
    assert!(
        lines.iter().all(|l| l.contains("no MPS server is running")),
        "{lines:?}"
    );

    // A client list of a server that does not exist (X7): carried as `get_client_list <pid>`.
    let gone = Pid::new(12345).unwrap();
    let record = daemon.runner().run(&daemon_query(
        &options.pipe_directory,
        &client_query(gone),
        Duration::from_secs(10),
    ));
    let QueryOutcome::Exited {
        code: Some(0),
        stdout,
        ..
    } = &record.outcome
    else {
        panic!("{record:?}");
    };
    assert_eq!(stdout.text, "100.0\nServer 12345 not found\n");
    assert_eq!(
        parse_client_list(stdout.text.strip_prefix("100.0\n").unwrap(), gone),
        Ok(vec![])
    );

    for child in [&mut learner, &mut collector] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let (log, commands) = daemon.quit_and_read_commands();
    assert!(commands.iter().any(|c| c == "get_server_list"), "{log}");
    assert!(
        commands.iter().any(|c| c == "get_client_list 12345"),
        "{log}"
    );
    for command in &commands {
        let (name, argument) = command.split_once(' ').unwrap_or((command.as_str(), ""));
        assert!(
            ReadOnlyCommand::NAMES.contains(&name),
            "{command:?} in\n{log}"
        );
        if name == "get_client_list" {
            assert!(
                Pid::parse(argument).is_some(),
                "{command:?}: only a PID follows"
            );
        } else {
            assert_eq!(argument, "", "{command:?}");
        }
    }
}
