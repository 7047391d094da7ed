//! `attest` end to end: a fake `nvidia-cuda-mps-control` whose servers and clients
//! are the PIDs of real child processes this test starts, read through the real `/proc`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_daemon::FakeDaemon;
pub(crate) use crate::fake_daemon::{eventually, lines};
use crate::support::{FakeHost, MPS_REQUEST, Run, finish, running_as_root, spawn, system_program};

/// A fake host with the one fake daemon ([`FakeDaemon`], answering from `state`), and the
/// real processes (`sleep`) a test names as learner, collector and servers.
pub(crate) struct Attest {
    pub(crate) host: FakeHost,
    pub(crate) state: PathBuf,
    daemon: FakeDaemon,
    pub(crate) children: Vec<Child>,
}

impl Attest {
    pub(crate) fn new() -> Self {
        let mut host = FakeHost::new();
        let daemon = FakeDaemon::install(&mut host);
        Self {
            host,
            state: daemon.state().to_path_buf(),
            daemon,
            children: Vec::new(),
        }
    }

    /// A real process (`sleep`), its CUDA pointed at this host's pipe directory; `as_nobody`
    /// runs it as UID 65534 through `setpriv`.
    pub(crate) fn process(&mut self, as_nobody: bool) -> u32 {
        self.start(system_program("sleep"), as_nobody)
    }

    /// A real process that looks like an MPS server to `/proc`: a copy of `sleep`
    /// named `nvidia-cuda-mps-server`, so its comm is `nvidia-cuda-mps` and its argv[0] the
    /// server program's name, as the daemon's `execlp` leaves them.
    pub(crate) fn server(&mut self, as_nobody: bool) -> u32 {
        let program = self.server_program();
        self.start(program, as_nobody)
    }

    /// The copy of `sleep` named like the server (world-executable, for `nobody` too).
    pub(crate) fn server_program(&self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = self.host.root().join("srv");
        let program = dir.join("nvidia-cuda-mps-server");
        if !program.exists() {
            fs::create_dir_all(&dir).unwrap();
            crate::support::write_executable(&program, |path| {
                fs::copy(system_program("sleep"), path).unwrap();
            });
            for path in [self.host.root(), dir.as_path(), program.as_path()] {
                fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        program
    }

    fn start(&mut self, program: PathBuf, as_nobody: bool) -> u32 {
        let mut command = if as_nobody {
            let mut command = Command::new(system_program("setpriv"));
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            command.arg(program);
            command
        } else {
            Command::new(program)
        };
        command
            .arg("60")
            .env("CUDA_MPS_PIPE_DIRECTORY", self.host.pipe())
            .stdin(Stdio::null());
        let child = spawn(&mut command);
        let pid = child.id();
        self.children.push(child);
        pid
    }

    pub(crate) fn servers(&self, pids: &[u32]) {
        self.daemon.servers(pids);
    }

    pub(crate) fn clients(&self, server: u32, text: &str) {
        self.daemon.clients(server, text);
    }

    pub(crate) fn run(&self, learner: u32, collector: u32, extra: &[&str]) -> Run {
        let args = attest_args(learner, collector, extra);
        let run = self
            .host
            .run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        run.assert_discipline("attest");
        run
    }

    /// `attest` for these two PIDs on this host, not started.
    pub(crate) fn command(&self, learner: u32, collector: u32, extra: &[&str]) -> Command {
        self.host.command(&attest_args(learner, collector, extra))
    }

    /// Every front-end this host started has ended.
    pub(crate) fn assert_no_front_end_left(&self) {
        self.daemon.assert_no_front_end_left();
    }

    pub(crate) fn kill(&mut self, pid: u32) {
        let child = self.children.iter_mut().find(|c| c.id() == pid).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Attest {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) fn codes(run: &Run) -> Vec<String> {
    run.stderr
        .lines()
        .map(|line| {
            let line = line.strip_prefix("error: ").unwrap();
            line.split(':').next().unwrap().to_owned()
        })
        .collect()
}

/// `attest --learner-pid L --collector-pid C`, then `extra`.
fn attest_args(learner: u32, collector: u32, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "attest".to_owned(),
        "--learner-pid".to_owned(),
        learner.to_string(),
        "--collector-pid".to_owned(),
        collector.to_string(),
    ];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args
}

#[test]
fn both_clients_of_one_server_are_attested_and_recorded_beside_the_evidence() {
    let mut fake = Attest::new();
    let (learner, collector, server) =
        (fake.process(false), fake.process(false), fake.server(false));
    // The probe's validated evidence first, through a daemon that answers the probe.
    fake.host.socket().one_gpu();
    let saved = fs::read(fake.host.root().join("bin/nvidia-cuda-mps-control")).unwrap();
    fake.host.daemon_answers("");
    let manifest = fake.host.root().join("manifest.json");
    fs::write(&manifest, "{\"run\": \"r1\"}").unwrap();
    let manifest_arg = manifest.to_str().unwrap();
    let mut probe = vec!["probe"];
    probe.extend_from_slice(&MPS_REQUEST);
    probe.extend_from_slice(&["--manifest", manifest_arg]);
    assert_eq!(fake.host.run(&probe).code, 0);
    let body = String::from_utf8(saved).unwrap();
    fake.host.script(
        "nvidia-cuda-mps-control",
        body.strip_prefix("#!/bin/sh\n").unwrap(),
    );
    fake.servers(&[server]);
    fake.clients(server, &lines(&[learner, collector]));

    let run = fake.run(learner, collector, &["--manifest", manifest_arg]);

    let attestation = run.json("attest");
    assert_eq!(attestation["attested"], true);
    assert_eq!(attestation["server_pid"], server);
    assert_eq!(attestation["pipe_directory_source"], "manifest");
    assert_eq!(attestation["learner"]["code"], "attached");
    let recorded: Value = serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
    let keys: Vec<&String> = recorded.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "run",
            "cuda_process_sharing",
            "cuda_process_sharing_schema",
            "cuda_process_sharing_writer"
        ]
    );
    let section = &recorded["cuda_process_sharing"];
    assert_eq!(section["validated"], true, "the probe's evidence is kept");
    assert_eq!(section["attestation"], attestation);
    assert_eq!(
        section["attestation_schema"],
        "mps-preflight/attestation/v1"
    );
    // merge shows the rank's attestation state.
    let merged = fake.host.run(&["merge", manifest_arg]).json("merge");
    assert_eq!(merged["ranks"][0]["attestation"]["state"], "attested");
    assert_eq!(merged["ranks"][0]["attestation"]["server_pid"], server);
    // Only read-only commands, and get_client_list with the server's PID alone.
    let log = fake.daemon.log().unwrap();
    assert!(
        log.contains(&format!("get_client_list {server}\n")),
        "{log}"
    );
}

#[test]
fn a_second_server_and_a_format_change_are_not_attested() {
    let mut fake = Attest::new();
    let (learner, collector) = (fake.process(false), fake.process(false));
    let (first, second) = (fake.server(false), fake.server(false));
    fake.servers(&[first, second]);
    fake.clients(first, &lines(&[learner]));
    fake.clients(second, &lines(&[collector]));
    let run = fake.run(learner, collector, &[]);
    assert_eq!(run.code, 1, "{}", run.render());
    assert_eq!(
        codes(&run),
        ["client-of-another-server", "client-of-another-server"]
    );
    assert!(
        run.stderr.contains(&format!("client of server {second}")),
        "{}",
        run.stderr
    );

    fake.clients(first, &format!("PID {learner} ctx 0\n"));
    let run = fake.run(learner, collector, &[]);
    assert_eq!(run.code, 1);
    // The collector is listed by the second server; only the learner is unproven.
    assert_eq!(codes(&run), ["answer-unrecognized"]);
    assert!(
        run.stderr.contains("unproven, not attested"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_server_of_another_uid() {
    if !running_as_root()
        || !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists()
    {
        eprintln!("skipping: a process of another UID needs root and setpriv");
        return;
    }
    let mut fake = Attest::new();
    let (learner, collector, server) =
        (fake.process(false), fake.process(false), fake.server(true));
    fake.servers(&[server]);
    fake.clients(server, "");
    // `setpriv` execs `sleep`: the server's PID is the one spawned, running as 65534.
    assert!(eventually(|| fs::read_to_string(format!(
        "/proc/{server}/status"
    ))
    .is_ok_and(|s| s.contains("\t65534\t"))));
    let run = fake.run(learner, collector, &[]);
    assert_eq!(codes(&run), ["not-a-client", "not-a-client"]);
    assert!(
        run.stderr
            .contains("differs from the UID of every running server"),
        "{}",
        run.stderr
    );
    fake.clients(server, &lines(&[learner, collector]));
    let run = fake.run(learner, collector, &[]);
    assert_eq!(
        codes(&run),
        ["server-of-another-user", "server-of-another-user"]
    );
}

#[test]
fn wait_succeeds_when_the_clients_attach_after_a_delay() {
    let mut fake = Attest::new();
    let (learner, collector, server) =
        (fake.process(false), fake.process(false), fake.server(false));
    let state = fake.state.clone();
    let attach = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        fs::write(
            state.join(format!("clients.{server}")),
            lines(&[learner, collector]),
        )
        .unwrap();
        fs::write(state.join("servers"), lines(&[server])).unwrap();
    });
    let started = Instant::now();
    let run = fake.run(learner, collector, &["--wait-ms", "10000"]);
    attach.join().unwrap();
    let attestation = run.json("attest --wait-ms");
    assert_eq!(attestation["attested"], true);
    assert!(attestation["rounds"].as_u64().unwrap() > 1);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    fake.assert_no_front_end_left();
}

#[test]
fn wait_fails_at_its_deadline_and_leaves_no_process_behind() {
    let mut fake = Attest::new();
    let (learner, collector) = (fake.process(false), fake.process(false));
    let started = Instant::now();
    let run = fake.run(
        learner,
        collector,
        &["--wait-ms", "600", "--timeout-ms", "2000"],
    );
    let took = started.elapsed();
    assert_eq!(run.code, 1, "{}", run.render());
    assert_eq!(codes(&run), ["not-a-client", "not-a-client"]);
    assert!(
        run.stderr.contains("no MPS server is running"),
        "{}",
        run.stderr
    );
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_millis(2600),
        "{took:?}"
    );
    fake.assert_no_front_end_left();
}

#[test]
fn a_process_that_exits_mid_poll_ends_the_wait() {
    let mut fake = Attest::new();
    let (learner, collector, server) =
        (fake.process(false), fake.process(false), fake.server(false));
    fake.servers(&[server]);
    fake.clients(server, &lines(&[learner]));
    let started = Instant::now();
    let mut command = fake.command(learner, collector, &["--wait-ms", "20000"]);
    let attest = std::thread::spawn(move || finish(&mut command));
    std::thread::sleep(Duration::from_millis(300));
    fake.kill(collector);
    let run = attest.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.code, 1, "{}", run.render());
    assert_eq!(codes(&run), ["not-running"]);
    fake.assert_no_front_end_left();
}

/// A signal while attest waits between rounds (no query running: the handlers exit at once)
/// or during a round (the runner ends the query first) exits with 128 + the signal, long
/// before the wait ends, and leaves no front-end behind.
#[test]
fn a_signal_during_the_wait_exits_128_plus_the_signal() {
    let mut fake = Attest::new();
    let (learner, collector) = (fake.process(false), fake.process(false));
    for pause in [150, 450] {
        let mut command = fake.command(learner, collector, &["--wait-ms", "30000"]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut cli = spawn(&mut command);
        std::thread::sleep(Duration::from_millis(pause));
        let pid = rustix::process::Pid::from_raw(i32::try_from(cli.id()).unwrap()).unwrap();
        let signalled = Instant::now();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let status = cli.wait().unwrap();
        assert!(
            signalled.elapsed() < Duration::from_secs(5),
            "{:?}",
            signalled.elapsed()
        );
        assert_eq!(status.code(), Some(128 + 15), "after {pause} ms: {status}");
    }
    fake.assert_no_front_end_left();
}

#[test]
fn a_hung_daemon_is_no_answer_within_the_deadline() {
    let mut fake = Attest::new();
    let (learner, collector) = (fake.process(false), fake.process(false));
    fake.daemon.hang();
    let started = Instant::now();
    let run = fake.run(
        learner,
        collector,
        &["--wait-ms", "5000", "--timeout-ms", "300"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        codes(&run),
        ["daemon-did-not-answer", "daemon-did-not-answer"]
    );
    assert!(run.stderr.contains("300 ms deadline"), "{}", run.stderr);
    fake.assert_no_front_end_left();
}

#[test]
fn a_saved_snapshot_replays_to_the_same_verdict() {
    let mut fake = Attest::new();
    let (learner, collector, server) =
        (fake.process(false), fake.process(false), fake.server(false));
    fake.servers(&[server]);
    fake.clients(server, &lines(&[learner, collector]));
    let saved = fake.host.root().join("attest.json");
    let live = fake.run(
        learner,
        collector,
        &["--save-snapshot", saved.to_str().unwrap()],
    );
    assert_eq!(live.code, 0, "{}", live.render());
    for child in &mut fake.children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let replay = fake
        .host
        .run(&["attest", "--snapshot", saved.to_str().unwrap()]);
    assert_eq!(
        replay, live,
        "the replay touches nothing and judges the same facts"
    );
    let other = fake.host.run(&[
        "attest",
        "--snapshot",
        saved.to_str().unwrap(),
        "--learner-pid",
        "1",
    ]);
    assert_eq!(other.code, 2, "{}", other.render());
    let wrong = fake.host.root().join("wrong.json");
    fs::write(&wrong, "{\"schema\": \"mps-preflight/host-facts/v2\"}").unwrap();
    let run = fake
        .host
        .run(&["attest", "--snapshot", wrong.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not supported"), "{}", run.stderr);
}

#[test]
fn pids_must_be_positive_integers() {
    let fake = Attest::new();
    for bad in ["0", "-1", "abc", "1 2", "+3", "2147483648", "12\nquit"] {
        let run = fake
            .host
            .run(&["attest", "--learner-pid", bad, "--collector-pid", "1"]);
        assert_eq!(run.code, 2, "{bad:?}: {}", run.render());
        assert!(run.stdout.is_empty());
    }
    let run = fake.host.run(&["attest", "--learner-pid", "1"]);
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(!fake.state.join("log").exists(), "nothing was asked");
}

#[test]
fn doctor_lists_every_process_that_is_not_attached() {
    let mut fake = Attest::new();
    fake.host.socket().one_gpu();
    let (learner, collector) = (fake.process(false), fake.process(false));
    let (learner, collector) = (learner.to_string(), collector.to_string());
    let mut args = vec!["doctor"];
    args.extend_from_slice(&MPS_REQUEST);
    args.extend_from_slice(&["--learner-pid", &learner, "--collector-pid", &collector]);
    let run = fake.host.run(&args);
    assert_eq!(run.code, 1, "{}", run.render());
    assert!(
        run.stdout.contains("after start, not attested"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("- not-a-client: ").count(),
        2,
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("2 processes are not attached"),
        "{}",
        run.stderr
    );
    args.extend_from_slice(&["--format", "json"]);
    let report: Value = serde_json::from_str(&fake.host.run(&args).stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(
        report["attestation"]["learner"]["likely_cause"],
        "no-server-running"
    );
    let only_one = fake.host.run(&[
        "doctor",
        "--learner-device",
        "cpu",
        "--backend",
        "x",
        "--learner-pid",
        "1",
    ]);
    assert_eq!(only_one.code, 2, "{}", only_one.render());
}
