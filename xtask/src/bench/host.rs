//! The fake hosts of `cargo xtask bench`: temp directories with a live control socket and two
//! fake tools (compiled, or shell scripts for the hung and flooding cases) on a private `PATH`,
//! and the floor (a tiny C program making the same host queries one after the other).

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The compiled fake tools, stand-in daemon and floor, built once per run with `cc -O2` (a shell
/// script would cost a shell start per query and drown what is measured).
pub(super) struct Compiled {
    /// `fake_tools.c`: the daemon serves server 4428, as on a host where a job runs.
    pub(super) served_tools: PathBuf,
    /// The same, built with `-DFAKE_IDLE`: the daemon serves no server.
    pub(super) idle_tools: PathBuf,
    /// `floor.c`: the probe's host queries, one after the other, from a tiny C program.
    pub(super) floor: PathBuf,
    /// `stand_in_daemon.c`: holds `<pipe>/control_lock` and writes the log's first lines, as a
    /// real control daemon does ([`Host::with_daemon`]).
    pub(super) daemon: PathBuf,
}

impl Compiled {
    pub(super) fn build(root: &Path, sandbox: &Sandbox) -> Result<Self, String> {
        let dir = sandbox.dir.join("compiled");
        fs::create_dir(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        let tools = root.join("crates/mps-preflight-py/bench/fake_tools.c");
        let compiled = Self {
            served_tools: dir.join("served-tools"),
            idle_tools: dir.join("idle-tools"),
            floor: dir.join("floor"),
            daemon: dir.join("stand-in-daemon"),
        };
        compile(&tools, &compiled.served_tools, &[])?;
        compile(&tools, &compiled.idle_tools, &["-DFAKE_IDLE"])?;
        compile(&root.join("xtask/bench/floor.c"), &compiled.floor, &[])?;
        compile(
            &root.join("xtask/bench/stand_in_daemon.c"),
            &compiled.daemon,
            &[],
        )?;
        Ok(compiled)
    }
}

fn compile(source: &Path, output: &Path, flags: &[&str]) -> Result<(), String> {
    let status = Command::new("cc")
        .arg("-O2")
        .args(flags)
        .arg("-o")
        .arg(output)
        .arg(source)
        .status()
        .map_err(|err| {
            format!("cannot run cc (a C compiler is needed for the fake host): {err}")
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cc {} failed: {status}", source.display()))
    }
}

/// The floor of `probe`'s process cost: the compiled floor program run as a whole
/// process on `host`, making the host queries `probe` makes there one after the other (after
/// the GPU table, `queries`: the daemon sessions' stdins and `--compute-apps`).
pub(super) fn floor(host: &Host, floor: &Path, queries: &[String]) -> Result<Duration, String> {
    let mut command = host.command(floor);
    command
        .arg(host.bin.join("nvidia-smi"))
        .arg(host.bin.join("nvidia-cuda-mps-control"))
        .args(queries)
        .stdin(Stdio::null());
    let (elapsed, output) = timed_output(&mut command)?;
    if !output.status.success() {
        return Err(format!(
            "the floor program failed on the fake host: {}",
            output.status
        ));
    }
    Ok(elapsed)
}

/// Answers each command it reads as an idle daemon with no limit set does: the liveness line
/// for each liveness command, nothing for the rest (the flood cases).
pub(super) fn daemon_script() -> String {
    "#!/bin/sh\nwhile read -r cmd arg; do\n  [ \"$cmd\" = get_default_active_thread_percentage ] && printf '100.0\\n'\ndone\nexit 0\n"
        .to_owned()
}

/// The floor program run with no arguments: a tiny C program's start and exit (it exits 2).
pub(super) fn start_only(host: &Host, floor: &Path) -> Result<Duration, String> {
    let mut command = host.command(floor);
    command.stdin(Stdio::null());
    let (elapsed, output) = timed_output(&mut command)?;
    if output.status.code() != Some(2) {
        return Err(format!(
            "the floor program without arguments exited {}",
            output.status
        ));
    }
    Ok(elapsed)
}

/// Runs `command` to its end, output read: its wall time, spawn to reaped, and its output.
pub(super) fn timed_output(command: &mut Command) -> Result<(Duration, Output), String> {
    let started = Instant::now();
    let output = command
        .output()
        .map_err(|err| format!("cannot run {}: {err}", command.get_program().display()))?;
    Ok((started.elapsed(), output))
}

pub(super) fn find_program(candidates: &[&str]) -> Result<PathBuf, String> {
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .ok_or_else(|| format!("none of {candidates:?} exists"))
}

/// A temp directory removed on drop.
pub(super) struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    pub(super) fn new() -> Result<Self, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "mps-preflight-bench-{}-{nanos}",
            std::process::id()
        ));
        fs::create_dir(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        Ok(Self { dir })
    }

    /// A fake host named `name` with these two tool scripts.
    pub(super) fn host(&self, name: &str, smi: &str, daemon: &str) -> Result<Host, String> {
        let (dir, bin, pipe) = self.host_dirs(name)?;
        write_script(&bin.join("nvidia-smi"), smi)?;
        write_script(&bin.join("nvidia-cuda-mps-control"), daemon)?;
        Host::listening(dir, bin, pipe)
    }

    /// A fake host named `name` whose two tools are the compiled program `tools`.
    pub(super) fn compiled_host(&self, name: &str, tools: &Path) -> Result<Host, String> {
        let (dir, bin, pipe) = self.host_dirs(name)?;
        for tool in ["nvidia-smi", "nvidia-cuda-mps-control"] {
            fs::copy(tools, bin.join(tool))
                .map_err(|err| format!("cannot copy {}: {err}", tools.display()))?;
        }
        Host::listening(dir, bin, pipe)
    }

    fn host_dirs(&self, name: &str) -> Result<(PathBuf, PathBuf, PathBuf), String> {
        let dir = self.dir.join(name);
        let bin = dir.join("bin");
        let pipe = dir.join("pipe");
        for path in [&dir, &bin, &pipe] {
            fs::create_dir(path)
                .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
        }
        Ok((dir, bin, pipe))
    }
}

impl Host {
    /// The host with a live listening socket at `<pipe>/control`.
    fn listening(dir: PathBuf, bin: PathBuf, pipe: PathBuf) -> Result<Self, String> {
        let socket = pipe.join("control");
        let listener = UnixListener::bind(&socket)
            .map_err(|err| format!("cannot bind {}: {err}", socket.display()))?;
        Ok(Host {
            dir,
            bin,
            pipe,
            _listener: listener,
            daemon: None,
        })
    }

    /// Gives the host the control daemon's process, as every live daemon (535 and 550) has
    /// one: the compiled stand-in, copied as `<dir>/nvidia-cuda-mps-control` and run with `-d`,
    /// holds `<pipe>/control_lock` (so `probe` proves the daemon from `/proc/locks` and scans
    /// no `/proc`) and writes its log's first lines to `<dir>/log`. Returns once the log is
    /// written, which the stand-in does after it holds the lock.
    pub(super) fn with_daemon(mut self, stand_in: &Path) -> Result<Self, String> {
        let program = self.dir.join("nvidia-cuda-mps-control");
        fs::copy(stand_in, &program)
            .map_err(|err| format!("cannot copy {}: {err}", stand_in.display()))?;
        let log = self.dir.join("log");
        fs::create_dir(&log).map_err(|err| format!("cannot create {}: {err}", log.display()))?;
        let child = Command::new(&program)
            .arg("-d")
            .env_clear()
            .env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe)
            .env("CUDA_MPS_LOG_DIRECTORY", &log)
            .stdin(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", program.display()))?;
        self.daemon = Some(child);
        let written = log.join("control.log");
        let started = Instant::now();
        while fs::metadata(&written).map_or(0, |meta| meta.len()) == 0 {
            if started.elapsed() > Duration::from_secs(5) {
                return Err(format!(
                    "the stand-in daemon wrote no {}",
                    written.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(self)
    }

    /// Gives the host what a 550+ daemon also leaves: `<pipe>/nvidia-cuda-mps-control.pid`
    /// naming the daemon of [`Host::with_daemon`].
    pub(super) fn with_pid_file(self) -> Result<Self, String> {
        let Some(daemon) = &self.daemon else {
            return Err("a pid file needs the stand-in daemon first".to_owned());
        };
        let pid_file = self.pipe.join("nvidia-cuda-mps-control.pid");
        fs::write(&pid_file, daemon.id().to_string())
            .map_err(|err| format!("cannot write {}: {err}", pid_file.display()))?;
        Ok(self)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

pub(super) fn write_script(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|err| format!("cannot chmod {}: {err}", path.display()))
}

/// One fake host. The listener keeps the control socket live while the host exists.
pub(super) struct Host {
    pub(super) dir: PathBuf,
    pub(super) bin: PathBuf,
    pub(super) pipe: PathBuf,
    _listener: UnixListener,
    /// The stand-in daemon process of [`Host::with_daemon`], killed on drop.
    daemon: Option<Child>,
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(daemon) = &mut self.daemon {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

impl Host {
    /// `program` in this host's environment only: `PATH` is the fake `bin/`, the pipe directory
    /// is the fake one, nothing else is inherited.
    pub(super) fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", &self.bin)
            .env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe)
            .current_dir(&self.dir);
        command
    }
}
