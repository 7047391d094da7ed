//! The attest tests' handle on the shared fake control front-end
//! (`fixtures/fake-host/nvidia-cuda-mps-control`, installed by [`FakeHost::daemon_answers`]): it
//! answers each command it reads from files in `<host root>/daemon`, so a test changes what the
//! daemon says (even while a command runs) by writing a file:
//!
//! - `servers`: the server list (none: an empty list);
//! - `clients.<pid>`: a server's client list (none: `Server <pid> not found` for a server not
//!   listed, no clients for a listed one);
//! - `hang`: the system's `sleep`, run instead of answering.
//!
//! Every command line it reads is logged to `log`, and each front-end's PID to `pids`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::{FakeHost, system_program};

pub(crate) struct FakeDaemon {
    state: PathBuf,
}

impl FakeDaemon {
    /// Installs the shared front-end on `host`, an idle daemon until a test lists servers.
    pub(crate) fn install(host: &mut FakeHost) -> Self {
        host.daemon_answers("");
        Self {
            state: host.root().join("daemon"),
        }
    }

    /// The state directory.
    pub(crate) fn state(&self) -> &Path {
        &self.state
    }

    /// The servers the daemon lists, one PID a line.
    pub(crate) fn servers(&self, pids: &[u32]) {
        fs::write(self.state.join("servers"), lines(pids)).unwrap();
    }

    /// What `get_client_list <server>` answers.
    pub(crate) fn clients(&self, server: u32, text: &str) {
        fs::write(self.state.join(format!("clients.{server}")), text).unwrap();
    }

    /// From now on every front-end hangs instead of answering.
    pub(crate) fn hang(&self) {
        std::os::unix::fs::symlink(system_program("sleep"), self.state.join("hang")).unwrap();
    }

    /// The command lines read so far (`None`: nothing was asked).
    pub(crate) fn log(&self) -> Option<String> {
        fs::read_to_string(self.state.join("log")).ok()
    }

    /// Every front-end started on this host has ended (within 5 s).
    pub(crate) fn assert_no_front_end_left(&self) {
        let pids = fs::read_to_string(self.state.join("pids")).unwrap_or_default();
        for pid in pids.lines() {
            let gone = eventually(|| !alive(pid));
            assert!(gone, "front-end {pid} outlived the command");
        }
    }
}

/// `pids` one a line, as the daemon lists servers and clients.
pub(crate) fn lines(pids: &[u32]) -> String {
    pids.iter()
        .fold(String::new(), |all, pid| all + &pid.to_string() + "\n")
}

/// Whether `/proc/<pid>` shows a process that is not a zombie.
pub(crate) fn alive(pid: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        !status
            .lines()
            .any(|line| line.starts_with("State:") && line.contains('Z'))
    })
}

/// Whether `condition` holds within 5 s, polled every 20 ms.
pub(crate) fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
