//! `observe_attest` against a fake `/proc` tree (real files: owners, states, environments) and
//! a fake `nvidia-cuda-mps-control` that lists the tree's processes as clients.

use std::path::Path;
use std::time::Duration;

use crate::common::{fake_lock, fake_program, runner_in, short_tempdir, worth_waiting};
use mps_host::{AttestOptions, observe_attest_with};
use sharing_policy::{AttestCode, LikelyCause, OsText, Pid, attest};

/// A real directory, so that the daemon's lock file can be in it (created by [`fake_lock`],
/// never replaced).
const PIPE: &str = "/tmp/mps-preflight-test-mps";

/// `root/<pid>/{status,environ}` (`environ: None` leaves it unreadable: a directory).
fn fake_client(root: &Path, pid: u32, uid: u32, state: &str, environ: Option<&[&str]>) {
    let dir = root.join(pid.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("status"),
        format!("Name:\tpython3\nState:\t{state}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
    )
    .unwrap();
    match environ {
        Some(vars) => {
            let text = vars.iter().fold(String::new(), |all, v| all + v + "\0");
            std::fs::write(dir.join("environ"), text).unwrap();
        }
        None => std::fs::create_dir_all(dir.join("environ")).unwrap(),
    }
}

/// A front-end that answers the liveness line, `servers` for `get_server_list`, and
/// `clients` for every `get_client_list`.
fn fake_daemon(bin: &Path, servers: &str, clients: &str) {
    fake_program(
        bin,
        "nvidia-cuda-mps-control",
        &format!(
            "while read -r cmd arg; do case \"$cmd\" in\n\
             get_default_active_thread_percentage) echo 100.0 ;;\n\
             get_server_list) printf '{servers}' ;;\n\
             get_client_list) printf '{clients}' ;;\n\
             *) echo \"Unknown command\" ;; esac; done"
        ),
    );
}

fn observe(root: &Path, bin: &Path) -> sharing_policy::Attestation {
    let options = AttestOptions {
        proc_root: root.to_owned(),
        timeout: Duration::from_secs(5),
        ..AttestOptions::new(
            Pid::new(101).unwrap(),
            Pid::new(102).unwrap(),
            OsText::from(PIPE),
        )
    };
    let facts = observe_attest_with(&runner_in(bin), &options, &worth_waiting);
    assert_eq!(facts.rounds, 1);
    attest(&facts)
}

/// The rounds go on exactly while the caller's `keep_waiting` says so: the host layer observes
/// and never judges. The learner is not yet a client, so a round alone settles nothing.
#[test]
fn the_caller_decides_whether_another_round_is_observed() {
    let (proc_root, bin) = (short_tempdir("mpsr"), short_tempdir("mpsb"));
    fake_client(proc_root.path(), 101, 1000, "S (sleeping)", Some(OUR_ENV));
    fake_client(proc_root.path(), 102, 1000, "S (sleeping)", Some(OUR_ENV));
    fake_client(proc_root.path(), 900, 1000, "S (sleeping)", None);
    fake_daemon(bin.path(), "900\\n", "102\\n");
    let options = AttestOptions {
        proc_root: proc_root.path().to_owned(),
        wait: Duration::from_secs(30),
        ..AttestOptions::new(
            Pid::new(101).unwrap(),
            Pid::new(102).unwrap(),
            OsText::from(PIPE),
        )
    };
    let asked = std::cell::Cell::new(0_u32);
    let three_rounds = |_: &sharing_policy::AttestFacts| {
        asked.set(asked.get() + 1);
        asked.get() < 3
    };

    let facts = observe_attest_with(&runner_in(bin.path()), &options, &three_rounds);

    assert_eq!((facts.rounds, asked.get()), (3, 3));
    let never = |_: &sharing_policy::AttestFacts| false;
    let facts = observe_attest_with(&runner_in(bin.path()), &options, &never);
    assert_eq!(
        facts.rounds, 1,
        "a 30 s wait, but the caller wanted no second round"
    );
}

const OUR_ENV: &[&str] = &[
    "HOME=/root",
    "CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-preflight-test-mps",
    "CUDA_VISIBLE_DEVICES=GPU-1",
];

#[test]
fn both_clients_of_one_server_of_their_uid_are_attested() {
    let (proc_root, bin) = (short_tempdir("mpsr"), short_tempdir("mpsb"));
    fake_client(proc_root.path(), 101, 1000, "S (sleeping)", Some(OUR_ENV));
    fake_client(proc_root.path(), 102, 1000, "R (running)", Some(OUR_ENV));
    fake_client(proc_root.path(), 900, 1000, "S (sleeping)", None);
    fake_daemon(bin.path(), "900\\n", "101\\n102\\n");

    let attestation = observe(proc_root.path(), bin.path());

    assert!(attestation.attested, "{attestation:#?}");
    assert_eq!(
        (attestation.server_pid, attestation.server_uid),
        (Some(900), Some(1000))
    );
    assert_eq!(
        attestation.learner.cuda_visible_devices.as_deref(),
        Some("GPU-1")
    );
    assert_eq!(
        attestation.learner.pipe_directory_env.as_deref(),
        Some(PIPE)
    );
}

#[test]
fn owners_states_and_environments_come_from_the_tree() {
    let (proc_root, bin) = (short_tempdir("mpsr"), short_tempdir("mpsb"));
    // The server runs as root; the learner as 1000 with another pipe directory; the collector
    // has exited (a zombie).
    fake_client(
        proc_root.path(),
        101,
        1000,
        "S (sleeping)",
        Some(&["CUDA_MPS_PIPE_DIRECTORY=/elsewhere"]),
    );
    fake_client(proc_root.path(), 102, 0, "Z (zombie)", Some(OUR_ENV));
    fake_client(proc_root.path(), 900, 0, "S (sleeping)", None);
    fake_daemon(bin.path(), "900\\n", "");

    let attestation = observe(proc_root.path(), bin.path());

    assert!(!attestation.attested);
    assert_eq!(attestation.learner.code, AttestCode::NotAClient);
    assert_eq!(
        attestation.learner.likely_cause,
        Some(LikelyCause::OtherPipeDirectory)
    );
    assert_eq!(attestation.learner.uid, Some(1000));
    assert_eq!(attestation.collector.code, AttestCode::NotRunning);
}

#[test]
fn a_server_of_another_uid_and_an_unreadable_environment() {
    let (proc_root, bin) = (short_tempdir("mpsr"), short_tempdir("mpsb"));
    fake_client(proc_root.path(), 101, 1000, "S (sleeping)", None);
    fake_client(proc_root.path(), 102, 1000, "S (sleeping)", Some(OUR_ENV));
    fake_client(proc_root.path(), 900, 0, "S (sleeping)", None);
    fake_daemon(bin.path(), "900\\n", "101 102");

    let attestation = observe(proc_root.path(), bin.path());

    assert_eq!(attestation.learner.code, AttestCode::ServerOfAnotherUser);
    assert!(!attestation.learner.environ_read);
    assert_eq!(attestation.collector.code, AttestCode::ServerOfAnotherUser);
    // A PID with no entry at all is not running.
    std::fs::remove_dir_all(proc_root.path().join("102")).unwrap();
    let attestation = observe(proc_root.path(), bin.path());
    assert_eq!(attestation.collector.code, AttestCode::NotRunning);
}

/// `root/<pid>` of the control daemon: comm, cmdline and environ, and the lock it holds.
fn fake_daemon_process(root: &Path, pid: u32, args: &[&str]) {
    fake_client(
        root,
        pid,
        0,
        "S (sleeping)",
        Some(&["CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-preflight-test-mps"]),
    );
    let dir = root.join(pid.to_string());
    fake_lock(root, Path::new(PIPE), i64::from(pid));
    std::fs::write(dir.join("comm"), "nvidia-cuda-mps\n").unwrap();
    let cmdline = std::iter::once("nvidia-cuda-mps-control")
        .chain(args.iter().copied())
        .fold(String::new(), |all, arg| all + arg + "\0");
    std::fs::write(dir.join("cmdline"), cmdline).unwrap();
}

/// The DRA driver's `-d -M` daemon, found by the scan, proves multi-user
/// mode, so its root server serves the job's UID; a `-d` daemon does not.
#[test]
fn a_multi_user_daemon_found_by_the_scan_lets_its_root_server_serve_every_user() {
    for (args, attested) in [(&["-d", "-M"][..], true), (&["-d"][..], false)] {
        let (proc_root, bin) = (short_tempdir("mpsr"), short_tempdir("mpsb"));
        fake_client(proc_root.path(), 101, 1000, "S (sleeping)", Some(OUR_ENV));
        fake_client(proc_root.path(), 102, 1000, "S (sleeping)", Some(OUR_ENV));
        fake_client(proc_root.path(), 900, 0, "S (sleeping)", None);
        fake_daemon_process(proc_root.path(), 50, args);
        fake_daemon(bin.path(), "900\\n", "101\\n102\\n");

        let attestation = observe(proc_root.path(), bin.path());

        assert_eq!(attestation.attested, attested, "{args:?}: {attestation:#?}");
        assert_eq!(attestation.daemon_multiuser, Some(attested), "{args:?}");
        if !attested {
            assert_eq!(attestation.learner.code, AttestCode::ServerOfAnotherUser);
        }
    }
}

/// `root/<entry>/ns/pid` as a link to `ns` (`pid:[…]`), as the kernel shows it.
fn ns_link(root: &Path, entry: &str, ns: &str) {
    let dir = root.join(entry).join("ns");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(ns, dir.join("pid")).unwrap();
}

/// Appends an `NSpid:` line to `root/<pid>/status`.
fn nspid(root: &Path, pid: u32, line: &str) {
    let path = root.join(pid.to_string()).join("status");
    let mut status = std::fs::read_to_string(&path).unwrap();
    status.push_str("NSpid:\t");
    status.push_str(line);
    status.push('\n');
    std::fs::write(path, status).unwrap();
}

/// On fake `/proc` trees with `ns/pid` links and `NSpid` lines: the job in a
/// pod's namespace, the daemon on the host. An attester on the host matches the host PIDs the
/// daemon lists; one in the pod cannot, and says so.
#[test]
fn pid_namespaces_are_recorded_and_decide_the_match() {
    const HOST: &str = "pid:[4026531836]";
    const POD: &str = "pid:[4026532999]";
    for (observer, attested) in [(HOST, true), (POD, false)] {
        let (proc_root, bin) = (short_tempdir("mpsr"), short_tempdir("mpsb"));
        let root = proc_root.path();
        fake_client(root, 101, 1000, "S (sleeping)", Some(OUR_ENV));
        fake_client(root, 102, 1000, "S (sleeping)", Some(OUR_ENV));
        nspid(root, 101, "101\t6");
        nspid(root, 102, "102\t7");
        ns_link(root, "101", POD);
        ns_link(root, "102", POD);
        fake_client(root, 900, 1000, "S (sleeping)", None);
        std::fs::write(root.join("900/comm"), "nvidia-cuda-mps\n").unwrap();
        std::fs::write(root.join("900/cmdline"), "nvidia-cuda-mps-server\0").unwrap();
        ns_link(root, "900", HOST);
        fake_daemon_process(root, 50, &["-d"]);
        ns_link(root, "50", HOST);
        ns_link(root, "self", observer);
        fake_daemon(bin.path(), "900\\n", "101\\n102\\n");

        let options = AttestOptions {
            proc_root: root.to_owned(),
            ..AttestOptions::new(
                Pid::new(101).unwrap(),
                Pid::new(102).unwrap(),
                OsText::from(PIPE),
            )
        };
        let facts = observe_attest_with(&runner_in(bin.path()), &options, &worth_waiting);
        assert_eq!(facts.observer_pid_namespace.as_deref(), Some(observer));
        assert_eq!(facts.learner.pid_namespace.as_deref(), Some(POD));
        assert_eq!(facts.learner.nspid.as_deref(), Some("101\t6"));
        assert_eq!(
            facts.servers[0].process.pid_namespace.as_deref(),
            Some(HOST)
        );
        let daemon = &facts.daemon_process.as_ref().unwrap().processes[0];
        assert_eq!(daemon.pid_namespace.as_deref(), Some(HOST));

        let attestation = attest(&facts);
        assert_eq!(
            attestation.attested, attested,
            "{observer}: {attestation:#?}"
        );
        if !attested {
            assert_eq!(attestation.learner.code, AttestCode::PidNamespaceDiffers);
        }
    }
}
