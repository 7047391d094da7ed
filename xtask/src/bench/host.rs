//! The fake host of `cargo xtask bench`: a temp directory with a live control socket and two
//! fake tools on a private `PATH`, and the floor (the same tools spawned directly).

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{DAEMON_STDIN, GPU_QUERY_ARGS, GPU_ROW};

/// The floor of `probe`'s process cost: `nvidia-smi` with the table query and the daemon
/// front-end with the probe's commands on stdin, each with its output read; one after the other
/// (the floor of issue 6) or, with `concurrent`, both spawned before either is waited for.
pub(super) fn floor(host: &Host, concurrent: bool) -> Result<Duration, String> {
    let started = Instant::now();
    let smi = spawn_tool(host, "nvidia-smi", &GPU_QUERY_ARGS, "")?;
    let (smi, daemon) = if concurrent {
        let daemon = spawn_tool(host, "nvidia-cuda-mps-control", &[], DAEMON_STDIN)?;
        (finish_tool(smi)?, finish_tool(daemon)?)
    } else {
        let smi = finish_tool(smi)?;
        let daemon = spawn_tool(host, "nvidia-cuda-mps-control", &[], DAEMON_STDIN)?;
        (smi, finish_tool(daemon)?)
    };
    let elapsed = started.elapsed();
    if !smi.status.success() || !daemon.status.success() || smi.stdout.is_empty() {
        return Err("the fake tools failed when spawned directly".to_owned());
    }
    Ok(elapsed)
}

/// Spawns a fake tool of `host` with piped output, writes `stdin` and closes it.
fn spawn_tool(host: &Host, name: &str, args: &[&str], stdin: &str) -> Result<Child, String> {
    let mut child = host
        .command(&host.bin.join(name))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("cannot run the fake {name}: {err}"))?;
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(stdin.as_bytes())
            .map_err(|err| format!("cannot write to the fake {name}: {err}"))?;
    }
    Ok(child)
}

fn finish_tool(child: Child) -> Result<Output, String> {
    child
        .wait_with_output()
        .map_err(|err| format!("cannot wait for a fake tool: {err}"))
}

pub(super) fn smi_script() -> String {
    format!("#!/bin/sh\nprintf '%s\\n' '{GPU_ROW}'\n")
}

/// Reads its commands to end of file, then answers as an idle daemon does.
pub(super) fn daemon_script() -> String {
    "#!/bin/sh\nwhile read -r line; do :; done\nprintf '100.0\\n'\n".to_owned()
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
        let dir = self.dir.join(name);
        let bin = dir.join("bin");
        let pipe = dir.join("pipe");
        for path in [&dir, &bin, &pipe] {
            fs::create_dir(path)
                .map_err(|err| format!("cannot create {}: {err}", path.display()))?;
        }
        write_script(&bin.join("nvidia-smi"), smi)?;
        write_script(&bin.join("nvidia-cuda-mps-control"), daemon)?;
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
}

impl Host {
    /// Gives the host what a 550+ daemon leaves: a live process named like the control daemon
    /// (a copy of `sleep`) and `<pipe>/nvidia-cuda-mps-control.pid` naming it, so `probe` finds
    /// the daemon through the pid file and scans no `/proc`.
    pub(super) fn with_pid_file(mut self, sleep: &Path) -> Result<Self, String> {
        let program = self.dir.join("nvidia-cuda-mps-control");
        fs::copy(sleep, &program)
            .map_err(|err| format!("cannot copy {}: {err}", sleep.display()))?;
        fs::set_permissions(&program, fs::Permissions::from_mode(0o755))
            .map_err(|err| format!("cannot chmod {}: {err}", program.display()))?;
        let child = Command::new(&program)
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", program.display()))?;
        let pid_file = self.pipe.join("nvidia-cuda-mps-control.pid");
        let written = fs::write(&pid_file, child.id().to_string());
        self.daemon = Some(child);
        written.map_err(|err| format!("cannot write {}: {err}", pid_file.display()))?;
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
    /// The stand-in daemon process of [`Host::with_pid_file`], killed on drop.
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
