//! `attest` across a real PID namespace: the learner and the collector run
//! in a namespace of this test's own (`unshare --pid --fork --mount-proc`, as root), the
//! daemon and its server on the host. From the host (the daemon's namespace) they attest; from
//! inside the namespace the daemon's PIDs cannot be matched: `pid-namespace-differs`, never
//! `not-a-client` or `not-running`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::attest::{Attest, codes, eventually, lines};
use crate::support::{BIN, system_program};

/// The `Key:` line of `/proc/<pid>/status`, after the key.
fn status_field(pid: &str, key: &str) -> Option<String> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .map(|rest| rest.trim().to_owned())
}

/// The host PID of a child of `parent` whose `NSpid:` ends with `inner` (any child with
/// `inner` None).
fn child_of(parent: u32, inner: Option<&str>) -> Option<String> {
    fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid = entry.file_name().into_string().ok()?;
        pid.bytes().all(|b| b.is_ascii_digit()).then_some(())?;
        (status_field(&pid, "PPid:")? == parent.to_string()).then_some(())?;
        let nspid = status_field(&pid, "NSpid:")?;
        match inner {
            Some(inner) if nspid.split_ascii_whitespace().last() != Some(inner) => None,
            _ => Some(pid),
        }
    })
}

#[test]
fn clients_in_another_pid_namespace() {
    let works = Command::new(system_program("unshare"))
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status();
    if !works.is_ok_and(|status| status.success()) || !Path::new("/usr/bin/nsenter").exists() {
        eprintln!("skipping: needs root, `unshare --pid --fork --mount-proc` and nsenter");
        return;
    }
    let mut fake = Attest::new();
    fake.host.live_daemon_pid();
    let server = fake.server(false);
    let state = fake.state.clone();
    let mut namespace = Command::new(system_program("unshare"))
        .args(["--pid", "--fork", "--kill-child", "--mount-proc"])
        .arg(system_program("sh"))
        .args([
            "-c",
            "\"$SLEEP\" 60 & echo $! > \"$S/inner_l\"; \"$SLEEP\" 60 & echo $! > \"$S/inner_c\"; wait",
        ])
        .env("SLEEP", system_program("sleep"))
        .env("S", &state)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let read = |name: &str| {
        fs::read_to_string(state.join(name))
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    assert!(eventually(
        || !read("inner_l").is_empty() && !read("inner_c").is_empty()
    ));
    let shell = child_of(namespace.id(), None).unwrap();
    let shell_pid: u32 = shell.parse().unwrap();
    let (inner_l, inner_c) = (read("inner_l"), read("inner_c"));
    let host_l = child_of(shell_pid, Some(&inner_l)).unwrap();
    let host_c = child_of(shell_pid, Some(&inner_c)).unwrap();
    fake.servers(&[server]);
    let listed: Vec<u32> = [&host_l, &host_c]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    fake.clients(server, &lines(&listed));

    // From the host: the daemon's namespace, whose numbers the listing uses.
    let saved = fake.host.root().join("attest.json");
    let outside = fake.host.run(&[
        "attest",
        "--learner-pid",
        &host_l,
        "--collector-pid",
        &host_c,
        "--save-snapshot",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(outside.code, 0, "{}", outside.render());
    let snapshot: Value = serde_json::from_slice(&fs::read(&saved).unwrap()).unwrap();
    let learner_ns = snapshot["learner"]["pid_namespace"].as_str().unwrap();
    assert!(learner_ns.starts_with("pid:["), "{learner_ns}");
    assert_ne!(
        Some(learner_ns),
        snapshot["observer_pid_namespace"].as_str()
    );
    assert_eq!(
        snapshot["learner"]["nspid"]
            .as_str()
            .unwrap()
            .split_ascii_whitespace()
            .collect::<Vec<_>>(),
        [host_l.as_str(), inner_l.as_str()]
    );

    // From inside: the pid file's daemon is not running there.
    let inside = attest_inside(&fake, &shell, &inner_l, &inner_c);
    let _ = namespace.kill();
    let _ = namespace.wait();
    let run = inside;
    assert_eq!(run.code, 1, "{}", run.render());
    assert_eq!(
        codes(&run),
        ["pid-namespace-differs", "pid-namespace-differs"],
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("run attest in the daemon's PID namespace"),
        "{}",
        run.stderr
    );
}

/// `attest` run inside the namespace of `shell` (its PID and mount namespaces) with the PIDs
/// of that namespace.
fn attest_inside(
    fake: &Attest,
    shell: &str,
    learner: &str,
    collector: &str,
) -> crate::support::Run {
    let template = fake.host.command(&[] as &[&str]);
    let inside = Command::new("/usr/bin/nsenter")
        .args(["--target", shell, "--pid", "--mount", "--"])
        .arg(BIN)
        .args([
            "attest",
            "--learner-pid",
            learner,
            "--collector-pid",
            collector,
        ])
        .env_clear()
        .envs(
            template
                .get_envs()
                .filter_map(|(key, value)| Some((key, value?))),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    crate::support::Run {
        code: inside.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&inside.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&inside.stderr).into_owned(),
    }
}

/// `attest` in a pod's PID namespace of its own (`unshare --pid --fork --mount-proc`), given
/// the host PIDs of two healthy clients: it sees neither them nor the daemon, whose lock no
/// process of its `/proc` holds. That is `pid-namespace-differs` with its fix, never
/// `not-running`, with or without a pid file (470/535 write none).
#[test]
fn host_pids_given_inside_a_pod() {
    let works = Command::new(system_program("unshare"))
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status();
    if !works.is_ok_and(|status| status.success()) {
        eprintln!("skipping: needs root and `unshare --pid --fork --mount-proc`");
        return;
    }
    for pid_file in [true, false] {
        let mut fake = Attest::new();
        fake.host.live_daemon_pid();
        if !pid_file {
            fs::remove_file(fake.host.pipe().join("nvidia-cuda-mps-control.pid")).unwrap();
        }
        let server = fake.server(false);
        let (learner, collector) = (fake.process(false), fake.process(false));
        fake.servers(&[server]);
        fake.clients(server, &lines(&[learner, collector]));
        let healthy = fake.run(learner, collector, &[]);
        assert_eq!(healthy.code, 0, "from the host: {}", healthy.render());

        let template = fake.host.command(&[] as &[&str]);
        let output = Command::new(system_program("unshare"))
            .args(["--pid", "--fork", "--kill-child", "--mount-proc", "--"])
            .arg(BIN)
            .args([
                "attest",
                "--learner-pid",
                &learner.to_string(),
                "--collector-pid",
                &collector.to_string(),
            ])
            .env_clear()
            .envs(
                template
                    .get_envs()
                    .filter_map(|(key, value)| Some((key, value?))),
            )
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "pid file {pid_file}: {stderr}"
        );
        let run = crate::support::Run {
            code: 1,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: stderr.clone().into_owned(),
        };
        assert_eq!(
            codes(&run),
            ["pid-namespace-differs", "pid-namespace-differs"],
            "pid file {pid_file}: {stderr}"
        );
        assert!(!stderr.contains("not-running"), "{stderr}");
        assert!(
            stderr.contains("run attest in the daemon's PID namespace"),
            "{stderr}"
        );
    }
}
