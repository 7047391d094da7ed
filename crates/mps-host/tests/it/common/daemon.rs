//! A harness around Debian's real `nvidia-cuda-mps-control` (see `scripts/fetch-mps-control.sh`).
//! It starts a control daemon with `-d` in a private pipe directory and always stops it again.
//! Only this harness ever sends `quit`; the probe cannot express it.

use std::ffi::OsString;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mps_host::{ProbeOptions, Query, Runner};
use rustix::process::{Pid, Signal};
use sharing_policy::{EnvFacts, HostFacts, OsText, QueryRecord};

use super::{eventually, is_dead, live_processes_with_env};

/// Names the binary explicitly.
pub(crate) const BINARY_ENV: &str = "MPS_PREFLIGHT_MPS_CONTROL";
/// The cache root `scripts/fetch-mps-control.sh` fills (default `$HOME/.cache/mps-preflight`).
pub(crate) const CACHE_ENV: &str = "MPS_PREFLIGHT_CACHE";
/// The binary's place inside the cache root.
pub(crate) const CACHED_BINARY: &str = "nvidia-cuda-mps/usr/bin/nvidia-cuda-mps-control";

/// The real binary: `$MPS_PREFLIGHT_MPS_CONTROL`, else the fetch script's cache.
pub(crate) fn locate() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(BINARY_ENV) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let cache = std::env::var_os(CACHE_ENV).map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/mps-preflight"))
    })?;
    let path = cache.join(CACHED_BINARY);
    path.is_file().then_some(path)
}

/// Set by `.ci/run`: a missing real daemon fails the test instead of skipping it,
/// so CI cannot count a skipped real-daemon test as passed.
pub(crate) const REQUIRE_ENV: &str = "MPS_PREFLIGHT_REQUIRE_REAL_DAEMON";

/// The binary, or `None` after saying why the calling test skips. The message goes straight to
/// the process's stderr, which the test harness does not capture, so a plain `cargo test` shows
/// it; with `$MPS_PREFLIGHT_REQUIRE_REAL_DAEMON=1` the test fails instead.
pub(crate) fn binary_or_skip(test: &str) -> Option<PathBuf> {
    let binary = locate();
    if binary.is_none() {
        let why = format!(
            "{test}: the real nvidia-cuda-mps-control was not found \
             (${BINARY_ENV} or ${{{CACHE_ENV}:-$HOME/.cache/mps-preflight}}/{CACHED_BINARY}); \
             run scripts/fetch-mps-control.sh"
        );
        assert!(
            std::env::var_os(REQUIRE_ENV).is_none_or(|value| value != "1"),
            "${REQUIRE_ENV}=1, so this is a failure, not a skip: {why}"
        );
        let _ = writeln!(std::io::stderr(), "SKIPPED {why}");
    }
    binary
}

/// The Debian package version the fetch script recorded next to the binary, if any.
pub(crate) fn package_version(binary: &Path) -> Option<String> {
    let root = binary.parent()?.parent()?.parent()?;
    let text = std::fs::read_to_string(root.join("VERSION")).ok()?;
    Some(text.trim().to_owned())
}

/// A running control daemon, stopped on drop.
pub(crate) struct Daemon {
    pub(crate) binary: PathBuf,
    pub(crate) pipe_dir: PathBuf,
    pub(crate) log_dir: PathBuf,
    /// Holds only `nvidia-cuda-mps-control` (a symlink to the binary): the probe's search path.
    pub(crate) bin_dir: PathBuf,
    pub(crate) pid: i32,
    cleanup: Vec<PathBuf>,
}

impl Daemon {
    /// Starts a daemon in fresh short temp dirs under `/tmp`.
    pub(crate) fn start(binary: &Path) -> Self {
        Self::start_scoped(binary, None)
    }

    /// [`Self::start`] with the daemon's `CUDA_VISIBLE_DEVICES` (its GPU scope) set to `mask`.
    pub(crate) fn start_scoped(binary: &Path, mask: Option<&str>) -> Self {
        let make = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir_in("/tmp")
                .unwrap()
                .keep()
        };
        Self::start_with(binary, make("mpsp"), make("mpsl"), make("mpsb"), mask)
    }

    /// Starts a daemon with the given (fresh) directories, which are removed on drop, and
    /// `CUDA_VISIBLE_DEVICES=mask` in its environment when given (unset otherwise). The pipe
    /// directory must already exist.
    pub(crate) fn start_with(
        binary: &Path,
        pipe_dir: PathBuf,
        log_dir: PathBuf,
        bin_dir: PathBuf,
        mask: Option<&str>,
    ) -> Self {
        std::os::unix::fs::symlink(binary, bin_dir.join("nvidia-cuda-mps-control")).unwrap();
        Self::launch(binary, pipe_dir, log_dir, bin_dir, mask, None)
    }

    /// [`Self::start`] as `nobody` (through `setpriv`): an ordinary user's daemon, in fresh
    /// directories that user owns, run from a copy of the binary that user can execute.
    pub(crate) fn start_as_nobody(binary: &Path) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let make = |prefix: &str| {
            let dir = tempfile::Builder::new()
                .prefix(prefix)
                .tempdir_in("/tmp")
                .unwrap()
                .keep();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            dir
        };
        let (pipe_dir, log_dir, bin_dir) = (make("mpsp"), make("mpsl"), make("mpsb"));
        let copy = bin_dir.join("nvidia-cuda-mps-control");
        std::fs::copy(binary, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self::launch(&copy, pipe_dir, log_dir, bin_dir, None, Some("65534"))
    }

    /// Runs `program -d` (as `user` through `setpriv` when given) and waits for its one
    /// daemon process and its control socket.
    fn launch(
        program: &Path,
        pipe_dir: PathBuf,
        log_dir: PathBuf,
        bin_dir: PathBuf,
        mask: Option<&str>,
        user: Option<&str>,
    ) -> Self {
        assert!(
            pipe_dir.join("control").as_os_str().len() < 108,
            "socket path too long"
        );
        let launch_log = std::fs::File::create(log_dir.join("launch.log")).unwrap();
        #[allow(
            clippy::disallowed_methods,
            reason = "test harness: starts the real daemon"
        )]
        let mut command = match user {
            Some(user) => {
                let mut command = Command::new("setpriv");
                command
                    .args([&format!("--reuid={user}"), &format!("--regid={user}")])
                    .arg("--clear-groups")
                    .arg(program);
                command
            }
            None => Command::new(program),
        };
        match mask {
            Some(mask) => command.env("CUDA_VISIBLE_DEVICES", mask),
            None => command.env_remove("CUDA_VISIBLE_DEVICES"),
        };
        let status = command
            .arg("-d")
            .env("CUDA_MPS_PIPE_DIRECTORY", &pipe_dir)
            .env("CUDA_MPS_LOG_DIRECTORY", &log_dir)
            .env_remove("CUDA_MPS_PROTOCOL_VERSION")
            .stdin(Stdio::null())
            .stdout(launch_log.try_clone().unwrap())
            .stderr(launch_log)
            .status()
            .unwrap();
        let binary = program;
        let mut daemon = Self {
            binary: binary.to_owned(),
            pipe_dir: pipe_dir.clone(),
            log_dir: log_dir.clone(),
            bin_dir: bin_dir.clone(),
            pid: 0,
            cleanup: vec![pipe_dir, log_dir, bin_dir],
        };
        assert!(
            status.success(),
            "`nvidia-cuda-mps-control -d` failed ({status}): {}",
            std::fs::read_to_string(daemon.log_dir.join("launch.log")).unwrap_or_default()
        );
        let canonical = std::fs::canonicalize(binary).unwrap();
        let mut pids = Vec::new();
        let found = eventually(Duration::from_secs(10), || {
            pids = live_processes_with_env(
                "CUDA_MPS_PIPE_DIRECTORY",
                daemon.pipe_dir.as_os_str().as_bytes(),
            )
            .into_iter()
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == canonical)
            })
            .collect();
            pids.len() == 1 && daemon.pipe_dir.join("control").exists()
        });
        assert!(
            found,
            "expected one daemon process for {}, found {pids:?}",
            daemon.pipe_dir.display()
        );
        daemon.pid = pids[0];
        daemon
    }

    /// The environment a job pointed at this daemon would have.
    pub(crate) fn env(&self) -> EnvFacts {
        EnvFacts {
            cuda_mps_pipe_directory: Some(os_text(&self.pipe_dir)),
            cuda_mps_log_directory: Some(os_text(&self.log_dir)),
            ..EnvFacts::default()
        }
    }

    /// Probe options that find this daemon's front-end (and no `nvidia-smi`).
    pub(crate) fn options(&self, timeout: Duration) -> ProbeOptions {
        ProbeOptions {
            timeout,
            search_path: Some(OsString::from(&self.bin_dir)),
            ..ProbeOptions::default()
        }
    }

    /// A process runner that finds this daemon's front-end.
    pub(crate) fn runner(&self) -> mps_host::ProcessRunner {
        mps_host::ProcessRunner {
            search_path: Some(OsString::from(&self.bin_dir)),
            ..mps_host::ProcessRunner::default()
        }
    }

    /// Captures the host as a job pointed at this daemon sees it, with `timeout` per query.
    pub(crate) fn capture(&self, timeout: Duration) -> HostFacts {
        super::capture_on(self.env(), &self.options(timeout))
    }

    /// Sends `quit` (harness only) and waits for the daemon to be gone.
    pub(crate) fn quit(&self) -> QueryRecord {
        let runner = self.runner();
        let query = Query {
            program: "nvidia-cuda-mps-control".to_owned(),
            args: Vec::new(),
            stdin: "quit\n".to_owned(),
            env: [(
                "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
                os_text(&self.pipe_dir),
            )]
            .into(),
            env_removed: vec!["CUDA_MPS_PROTOCOL_VERSION".to_owned()],
            timeout: Duration::from_secs(10),
        };
        let record = runner.run(&query);
        eventually(Duration::from_secs(10), || is_dead(self.pid));
        record
    }

    /// Sends `signal` to the daemon.
    pub(crate) fn signal(&self, signal: Signal) {
        rustix::process::kill_process(Pid::from_raw(self.pid).unwrap(), signal).unwrap();
    }

    /// The daemon's `control.log`.
    pub(crate) fn control_log(&self) -> String {
        std::fs::read_to_string(self.log_dir.join("control.log")).unwrap_or_default()
    }

    /// Quits the daemon (its log is written after it answers, so it is read once the daemon is
    /// gone), then returns `control.log` and the commands it logged before the harness's own
    /// `quit`, which must come last.
    pub(crate) fn quit_and_read_commands(&self) -> (String, Vec<String>) {
        self.quit();
        let log = self.control_log();
        let mut commands: Vec<String> = log
            .lines()
            .filter_map(|line| {
                line.split_once("] Cmd:")
                    .map(|(_, command)| command.to_owned())
            })
            .collect();
        assert_eq!(
            commands.pop().as_deref(),
            Some("quit"),
            "control.log:\n{log}"
        );
        (log, commands)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = Pid::from_raw(self.pid)
            && !is_dead(self.pid)
        {
            let _ = rustix::process::kill_process(pid, Signal::CONT);
            let _ = self.quit();
            if !is_dead(self.pid) {
                eprintln!("daemon {} did not quit; killing it", self.pid);
                let _ = rustix::process::kill_process(pid, Signal::KILL);
                eventually(Duration::from_secs(5), || is_dead(self.pid));
            }
        }
        for dir in &self.cleanup {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

pub(crate) fn os_text(path: &Path) -> OsText {
    OsText::from_bytes(path.as_os_str().as_bytes().to_vec())
}
