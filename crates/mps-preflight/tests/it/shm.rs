//! `/dev/shm`: a probe whose `/dev/shm` is a private tmpfs (a real mount in a private mount
//! namespace, as a container's own `/dev/shm`) is rejected against a daemon stand-in that
//! holds the lock in the host's namespace; `--min-shm` above the real free space is rejected;
//! the daemon's open-files limit below 16384 is an advisory, never a rejection.

use std::process::Command;

use crate::support::{
    BIN, FakeHost, MPS_REQUEST, Run, args, compile_lock_holder, finish, running_as_root,
    system_program,
};

/// A fake host whose lock-holding daemon stand-in runs in this test's mount namespace.
fn host() -> (FakeHost, u32) {
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let pid = host.live_daemon_pid();
    (host, pid)
}

/// The binary with `args` in `host`'s environment, inside a new mount namespace whose
/// `/dev/shm` is a fresh 1 MiB tmpfs (with `fill`, filled to the last byte).
fn run_in_private_shm(host: &FakeHost, args: &[&str], fill: bool) -> Run {
    let template = host.command(args);
    let fill: &str = if fill {
        &format!(
            "{} if=/dev/zero of=/dev/shm/fill bs=64k 2>/dev/null; ",
            system_program("dd").display()
        )
    } else {
        ""
    };
    let script = format!(
        "{} -t tmpfs -o size=1m tmpfs /dev/shm && {fill}exec \"$0\" \"$@\"",
        system_program("mount").display()
    );
    let mut command = Command::new(system_program("unshare"));
    command
        .env_clear()
        .envs(
            template
                .get_envs()
                .filter_map(|(key, value)| value.map(|value| (key, value))),
        )
        .current_dir(host.root())
        .arg("-m")
        .arg(system_program("sh"))
        .args(["-c", &script, BIN])
        .args(args);
    finish(&mut command)
}

#[test]
fn a_private_dev_shm_is_not_the_daemons() {
    if !running_as_root() {
        eprintln!("skipped: mounting a tmpfs in a private mount namespace needs root");
        return;
    }
    let (host, _pid) = host();
    // In the daemon's namespace the caller's /dev/shm is the daemon's: not rejected for it.
    let shared = host.run(&args("probe", &MPS_REQUEST, &[]));
    assert!(
        !shared.stderr.contains("shm-not-shared"),
        "{}",
        shared.render()
    );
    if shared.code == 0 {
        let evidence = shared.json("shared");
        assert!(evidence["shm_free_bytes"].is_u64(), "{evidence}");
        assert!(evidence["shm_total_bytes"].is_u64(), "{evidence}");
    }
    // The same /dev/shm: no mountinfo is read (its lines only describe two that differ).
    let capture = host.run(&["capture"]);
    let snapshot = capture.json("capture");
    let shm = &snapshot["shm"];
    assert!(shm["caller"]["inode"].is_u64(), "{shm}");
    assert_eq!(shm["caller"]["inode"], shm["daemon"]["inode"], "{shm}");
    assert_eq!(
        shm["caller"]["mount_root"],
        serde_json::Value::Null,
        "{shm}"
    );
    assert_eq!(
        shm["daemon"]["mount_root"],
        serde_json::Value::Null,
        "{shm}"
    );
    for fill in [false, true] {
        let run = run_in_private_shm(
            &host,
            &args("probe", &MPS_REQUEST, &["--min-shm", "1M"]),
            fill,
        );
        run.assert_rejected("private /dev/shm");
        assert!(run.stderr.contains("/dev/shm"), "{}", run.render());
        assert!(
            run.stderr.contains("is not the control daemon's"),
            "{}",
            run.render()
        );
        // Two /dev/shm that differ: the mount lines were read to name them.
        assert!(run.stderr.contains(", mount root /"), "{}", run.render());
    }
}

#[test]
fn min_shm_above_the_free_space_is_rejected() {
    let (host, _pid) = host();
    let vfs = rustix::fs::statvfs("/dev/shm").unwrap();
    let free = vfs.f_bavail * vfs.f_frsize;
    let above = format!("{}M", free / (1024 * 1024) + 1);
    let run = host.run(&args("probe", &MPS_REQUEST, &["--min-shm", &above]));
    run.assert_rejected("above the free space");
    assert!(run.stderr.contains("room in /dev/shm"), "{}", run.render());
    let below = host.run(&args("probe", &MPS_REQUEST, &["--min-shm", "1M"]));
    assert!(
        !below.stderr.contains("room in /dev/shm"),
        "{}",
        below.render()
    );
}

/// A full `/dev/shm` shared with the daemon: a 1 MiB tmpfs filled to the last byte in a private
/// mount namespace, where a lock-holding daemon stand-in runs too, is `shm-below-requirement`
/// under `--min-shm 1M`; the same tmpfs empty passes it.
#[test]
fn a_full_dev_shm_shared_with_the_daemon_is_rejected() {
    if !running_as_root() {
        eprintln!("skipped: mounting a tmpfs in a private mount namespace needs root");
        return;
    }
    for fill in [true, false] {
        let mut host = FakeHost::new();
        host.one_gpu().daemon_answers("").socket();
        let program = host.root().join("nvidia-cuda-mps-control");
        compile_lock_holder(&program);
        let lock = host.pipe().join("control_lock");
        let request = args("probe", &MPS_REQUEST, &["--min-shm", "1M"]);
        let template = host.command(&request);
        let dd = if fill {
            format!(
                "{} if=/dev/zero of=/dev/shm/fill bs=64k 2>/dev/null; ",
                system_program("dd").display()
            )
        } else {
            String::new()
        };
        let script = format!(
            "{mount} -t tmpfs -o size=1m tmpfs /dev/shm && {dd}\
             \"$0\" {lock} </dev/null & holder=$!; i=0; \
             while ! {grep} -q \" WRITE $holder \" /proc/locks && [ $i -lt 400 ]; do {sleep} 0.05; i=$((i+1)); done; \
             \"$@\"; rc=$?; kill $holder; exit $rc",
            mount = system_program("mount").display(),
            grep = system_program("grep").display(),
            sleep = system_program("sleep").display(),
            lock = lock.display(),
        );
        let mut command = Command::new(system_program("unshare"));
        command
            .env_clear()
            .envs(
                template
                    .get_envs()
                    .filter_map(|(key, value)| value.map(|value| (key, value))),
            )
            .current_dir(host.root())
            .arg("-m")
            .arg(system_program("sh"))
            .args(["-c", &script])
            .arg(&program)
            .arg(BIN)
            .args(&request);
        let run = finish(&mut command);
        assert!(
            !run.stderr.contains("is not the control daemon's"),
            "{}",
            run.render()
        );
        if fill {
            run.assert_rejected("full /dev/shm");
            assert!(run.stderr.contains("room in /dev/shm"), "{}", run.render());
            assert!(
                run.stderr.contains("0 MiB free of 1 MiB"),
                "{}",
                run.render()
            );
        } else {
            let evidence = run.json("empty /dev/shm");
            assert_eq!(evidence["shm_total_bytes"], 1024 * 1024, "{evidence}");
            assert!(
                evidence["shm_free_bytes"].as_u64().unwrap() >= 1024 * 1024,
                "{evidence}"
            );
        }
    }
}
