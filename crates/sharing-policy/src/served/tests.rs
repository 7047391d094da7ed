use super::*;

/// Once the lock was observed, a pid file corroborates an idle daemon only when the lock
/// proves the process it names: a planted one naming any live `nvidia-cuda-mps` does not.
#[test]
fn a_pid_file_corroborates_only_what_the_lock_proves() {
    let mut facts = HostFacts::unobserved("linux", crate::EnvFacts::default());
    facts.pid_file = Some(PidFileFacts {
        path: OsText::from("/tmp/nvidia-mps/nvidia-cuda-mps-control.pid"),
        contents: Some(crate::CapturedText::from_bytes(b"4242", false)),
        error: None,
        pid_alive: Some(true),
        process_name: Some("nvidia-cuda-mps".to_owned()),
    });
    assert!(corroborating_pid_file(&facts).is_some(), "no lock recorded");
    let held_by = |pids: &[i64]| crate::DaemonLockFacts {
        path: OsText::from("/tmp/nvidia-mps/control_lock"),
        file: Some(crate::LockFileFacts {
            kind: "file".to_owned(),
            dev_major: 0xfe,
            dev_minor: 0,
            ino: 7,
            uid: 0,
        }),
        file_error: None,
        directory_uid: Some(0),
        locks: Some(
            pids.iter()
                .map(|pid| format!("1: POSIX  ADVISORY  WRITE {pid} fe:00:7 0 EOF"))
                .collect(),
        ),
        locks_error: None,
        test: None,
        test_error: None,
    };
    for (holders, corroborates) in [(&[][..], false), (&[99][..], false), (&[4242][..], true)] {
        facts.daemon_process = Some(DaemonSearch {
            proc_root: OsText::from("/proc"),
            method: DaemonSearchMethod::PidFile,
            scanned: 0,
            limit: 0,
            stopped: None,
            error: None,
            processes: Vec::new(),
            lock: Some(held_by(holders)),
        });
        assert_eq!(
            corroborating_pid_file(&facts).is_some(),
            corroborates,
            "{holders:?}"
        );
    }
}

#[test]
fn the_effective_uid_is_the_second_field() {
    assert_eq!(effective_uid("1000\t1001\t1000\t1000"), Some(1001));
    assert_eq!(effective_uid("0\t0\t0\t0\n"), Some(0));
    assert_eq!(effective_uid("1000"), None);
    assert_eq!(effective_uid("1000\t-1"), None);
    assert_eq!(effective_uid(""), None);
}

#[test]
fn control_daemon_and_multiuser_command_lines() {
    let line = |args: &[&str]| args.iter().map(|a| OsText::from(*a)).collect::<Vec<_>>();
    assert!(is_control_daemon(&line(&["nvidia-cuda-mps-control", "-d"])));
    assert!(is_control_daemon(&line(&[
        "/usr/bin/nvidia-cuda-mps-control",
        "-f"
    ])));
    assert!(is_control_daemon(&line(&[
        "nvidia-cuda-mps-control",
        "--daemon"
    ])));
    assert!(is_control_daemon(&line(&[
        "nvidia-cuda-mps-control",
        "-dM"
    ])));
    assert!(!is_control_daemon(&line(&["nvidia-cuda-mps-control"])));
    assert!(!is_control_daemon(&line(&["nvidia-cuda-mps-server"])));
    assert!(!is_control_daemon(&[]));
    assert_eq!(
        is_multiuser(&line(&["nvidia-cuda-mps-control", "-d", "-M"])),
        Some(true)
    );
    assert_eq!(
        is_multiuser(&line(&["nvidia-cuda-mps-control", "--multiuser", "-d"])),
        Some(true)
    );
    assert_eq!(is_multiuser(&line(&["-m"])), None);
    assert_eq!(
        is_multiuser(&line(&["nvidia-cuda-mps-control", "-d"])),
        Some(false)
    );
    assert!(is_control_program(&line(&[
        "/usr/bin/nvidia-cuda-mps-control"
    ])));
    assert!(!is_control_program(&line(&["nvidia-cuda-mps-server"])));
}

#[test]
fn only_non_zero_indices_are_renumbered() {
    assert_eq!(renumbered_index(Some(&OsText::from("1"))), Some(1));
    assert_eq!(renumbered_index(Some(&OsText::from("0,2"))), Some(2));
    assert_eq!(renumbered_index(Some(&OsText::from("0"))), None);
    assert_eq!(renumbered_index(Some(&OsText::from("GPU-8932f937"))), None);
    assert_eq!(renumbered_index(None), None);
}
