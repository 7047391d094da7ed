//! What a killed run leaves behind, with real processes: a fake control front-end lists a
//! server (a real process of this user) whose `get_client_list` names a live child, a zombie
//! (a child never waited for) and a dead PID (a child that was waited for). The probe records
//! each client's `/proc` facts from the real `/proc`, and the validator rejects the dead and
//! zombie ones and reports the live one. The front-end also answers the server's own limits.

#![allow(
    clippy::disallowed_methods,
    clippy::zombie_processes,
    reason = "test: spawns the live, zombie and dead clients the fake daemon lists"
)]

use std::ffi::OsString;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use crate::common::daemon::os_text;
use crate::common::{capture_on, fake_program, shared_fake_daemon, short_tempdir};
use mps_host::ProbeOptions;
use sharing_policy::{Code, EnvFacts, HostFacts, Request, validate};

const GPU_A: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";

/// A child that lives until killed.
struct Live(Child);

impl Live {
    fn start() -> Self {
        Self(Command::new("sleep").arg("60").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child that exited and is never waited for while the test looks: a zombie.
fn zombie() -> Child {
    let child = Command::new("true").spawn().unwrap();
    let status = PathBuf::from(format!("/proc/{}/status", child.id()));
    for _ in 0..200 {
        let text = std::fs::read_to_string(&status).unwrap_or_default();
        if text.lines().any(|l| l.starts_with("State:\tZ")) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("child {} never became a zombie", child.id());
}

/// A PID that no longer exists: a child that exited and was waited for.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!PathBuf::from(format!("/proc/{pid}")).exists());
    pid
}

/// The probe on a host whose fake front-end lists `server` with `clients`, which applies
/// `percentage` and `pinned` (the daemon's defaults: 100.0 and 10G).
fn capture(server: u32, clients: &str, percentage: &str, pinned: &str) -> HostFacts {
    let dir = short_tempdir("mpsc");
    let (bin, pipe) = (dir.path().join("bin"), dir.path().join("pipe"));
    std::fs::create_dir(&bin).unwrap();
    std::fs::create_dir(&pipe).unwrap();
    let _socket = UnixListener::bind(pipe.join("control")).unwrap();
    fake_program(
        &bin,
        "nvidia-smi",
        &format!(
            "printf 'Default, 550.163.01, Enabled, None, No, No, No, 0, {GPU_A}, NVIDIA H100 80GB HBM3, 00000000:18:00.0\\n'"
        ),
    );
    let state = shared_fake_daemon(dir.path(), &[server]);
    for (file, text) in [
        (format!("clients.{server}"), clients.replace("\\n", "\n")),
        (format!("percentage.{server}"), format!("{percentage}\n")),
        (format!("pinned.{server}"), format!("{pinned}\n")),
        ("default-pinned".to_owned(), "10G\n".to_owned()),
    ] {
        std::fs::write(state.join(file), text).unwrap();
    }
    let options = ProbeOptions {
        timeout: Duration::from_secs(20),
        search_path: Some(OsString::from(&bin)),
        ..ProbeOptions::default()
    };
    let env = EnvFacts {
        cuda_mps_pipe_directory: Some(os_text(&pipe)),
        ..EnvFacts::default()
    };
    capture_on(env, &options)
}

fn request() -> Request {
    Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp")
}

#[test]
fn dead_and_zombie_clients_are_rejections_and_live_ones_evidence() {
    let server = Live::start();
    let live = Live::start();
    let mut zombie = zombie();
    let dead = dead_pid();

    // Live clients only: validated, with the clients as evidence and an advisory warning
    // that --require-verified does not turn into a rejection.
    let facts = capture(server.pid(), &format!("{}\\n", live.pid()), "100.0", "10G");
    let observed = facts.listed_clients.as_ref().unwrap();
    assert_eq!(observed.len(), 1);
    assert_eq!(observed[0].exists, Some(true));
    let evidence = validate(&request(), &facts).unwrap();
    let warnings = sharing_policy::warnings(&request(), &facts);
    assert_eq!(evidence.server_clients, Some(1));
    assert_eq!(
        evidence.server_client_pids,
        Some(vec![i64::from(live.pid())])
    );
    assert!(!evidence.unverified.contains(&Code::ServerHasClients));
    assert!(
        warnings.iter().any(|w| w.code == Code::ServerHasClients),
        "{warnings:?}"
    );

    // A zombie client: rejected, and the fix names the command that restarts the server.
    let facts = capture(
        server.pid(),
        &format!("{} {}\\n", live.pid(), zombie.id()),
        "100.0",
        "10G",
    );
    let rejection = validate(&request(), &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::StaleServerClient, "{rejection}");
    let text = rejection.to_string();
    assert!(text.contains("is a zombie"), "{text}");
    assert!(
        text.contains(&format!("echo shutdown_server {} -f", server.pid())),
        "{text}"
    );

    // A dead client (a PID that no longer exists).
    let facts = capture(server.pid(), &format!("{dead}\\n"), "100.0", "10G");
    let rejection = validate(&request(), &facts).unwrap_err();
    assert_eq!(rejection.code(), Code::StaleServerClient, "{rejection}");
    assert!(rejection.to_string().contains("no longer exists"));
    zombie.wait().unwrap();
}

#[test]
fn the_running_servers_limits_are_judged_not_only_the_defaults() {
    let server = Live::start();
    // The defaults (100.0, 10G) meet the minimums; the running server applies less.
    let facts = capture(server.pid(), "", "25.0", "2G");
    let wanting = Request {
        min_active_thread_percentage: sharing_policy::Percentage::parse_arg("50"),
        ..request()
    };
    let rejection = validate(&wanting, &facts).unwrap_err();
    assert_eq!(
        rejection.code(),
        Code::ActiveThreadPercentageBelowRequirement,
        "{rejection}"
    );
    assert!(
        rejection.to_string().contains(&format!(
            "set_active_thread_percentage {} 50.0",
            server.pid()
        )),
        "{rejection}"
    );
    let evidence = validate(&request(), &facts).unwrap();
    assert_eq!(
        evidence.default_active_thread_percentage,
        sharing_policy::Percentage::from_tenths(1000)
    );
    assert_eq!(
        evidence.server_active_thread_percentage,
        sharing_policy::Percentage::from_tenths(250)
    );
    assert_eq!(evidence.server_clients, Some(0));
    assert!(facts.listed_clients.is_none(), "no client: no /proc read");
}
