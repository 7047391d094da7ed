//! Running the built binary, on fake hosts: a temp pipe directory with a real bound Unix
//! socket, fake `nvidia-smi` / `nvidia-cuda-mps-control` scripts on a temp `PATH`.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::RwLock;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_mps-preflight");
/// A server PID line for a fake daemon: above Linux's largest `pid_max` (2^22), so the probe's
/// `/proc/<pid>` reads find no process, whatever runs on this machine.
pub(crate) const NO_SUCH_PID_LINE: &str = "4194399\n";

pub(crate) const SCHEMA: &str = "mps-preflight/host-facts/v1";

/// GPU UUIDs of the fake hosts (from docs/cuda-visibility.md's example tables).
pub(crate) const GPU0: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
pub(crate) const GPU1: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";

/// The explicit request most tests make: learner and collector both `cuda:0`, backend mjwarp.
/// Without its first two words (`&MPS_REQUEST[2..]`) it is the same request left null.
pub(crate) const MPS_REQUEST: [&str; 8] = [
    "--request",
    "mps",
    "--learner-device",
    "cuda:0",
    "--collector-device",
    "cuda:0",
    "--backend",
    "mjwarp",
];

/// `command`, then `request`, then `extra`: one command line.
pub(crate) fn args<'a>(command: &'a str, request: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![command];
    args.extend_from_slice(request);
    args.extend_from_slice(extra);
    args
}

/// One run of the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// Exit code, stdout and stderr as one text, for snapshots.
    pub(crate) fn render(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// The output discipline every run keeps, whatever the command.
    pub(crate) fn assert_discipline(&self, what: &str) {
        assert!(
            matches!(self.code, 0..=2),
            "{what}: exit {}\n{}",
            self.code,
            self.render()
        );
        for needle in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
            assert!(
                !self.stderr.contains(needle),
                "{what}: panic text\n{}",
                self.render()
            );
            assert!(
                !self.stdout.contains(needle),
                "{what}: panic text\n{}",
                self.render()
            );
        }
        if self.code != 0 {
            assert!(
                self.stderr.starts_with("error: "),
                "{what}: stderr must begin `error: `\n{}",
                self.render()
            );
        }
    }

    /// Exit 0 with exactly one JSON object on stdout and nothing on stderr.
    pub(crate) fn json(&self, what: &str) -> serde_json::Value {
        assert_eq!(self.code, 0, "{what}\n{}", self.render());
        assert!(
            self.stderr.is_empty(),
            "{what}: stderr not empty\n{}",
            self.render()
        );
        let value: serde_json::Value = serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("{what}: stdout is not JSON: {err}\n{}", self.render()));
        assert!(
            value.is_object(),
            "{what}: not an object\n{}",
            self.render()
        );
        value
    }

    /// Exit 1, stdout empty, stderr one `error: ` message.
    pub(crate) fn assert_rejected(&self, what: &str) {
        assert_eq!(self.code, 1, "{what}\n{}", self.render());
        assert!(
            self.stdout.is_empty(),
            "{what}: stdout not empty\n{}",
            self.render()
        );
        assert!(
            self.stderr.starts_with("error: "),
            "{what}\n{}",
            self.render()
        );
    }
}

/// Forks take this lock shared, writes of executables take it exclusively: a child forked
/// while a test holds an executable open for writing would keep that descriptor until its
/// `exec`, and running the executable then fails with ETXTBSY ("Text file busy").
static EXEC_LOCK: RwLock<()> = RwLock::new(());

/// Spawns `command` (never while an executable is being written). A fork made outside this
/// lock (a test's own `Command::status`) can still hold a written file open for a moment, so
/// ETXTBSY is retried: 20 tries, 50 ms apart.
pub(crate) fn spawn(command: &mut Command) -> Child {
    for _ in 0..20 {
        let result = {
            let _shared = EXEC_LOCK
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            command.spawn()
        };
        match result {
            Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other.expect("spawn"),
        }
    }
    command.spawn().expect("spawn")
}

/// Writes an executable file (never while a child is being forked).
pub(crate) fn write_executable(path: &Path, write: impl FnOnce(&Path)) {
    let _exclusive = EXEC_LOCK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    write(path);
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Runs `command` to the end and keeps its output.
pub(crate) fn finish(command: &mut Command) -> Run {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = spawn(command).wait_with_output().expect("the binary runs");
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// A fake host: its own `PATH`, pipe directory and environment. Nothing of the real host is
/// inherited (the environment is cleared), so a GPU machine runs these tests the same way.
pub(crate) struct FakeHost {
    dir: tempfile::TempDir,
    pipe: PathBuf,
    env: Vec<(OsString, OsString)>,
    listener: Option<UnixListener>,
    daemon: Option<Child>,
}

impl FakeHost {
    /// No GPU tool installed, an empty pipe directory.
    pub(crate) fn new() -> Self {
        Self::with_pipe_name(OsStr::new("pipe"))
    }

    /// The healthy idle host most tests start from: one H100, a daemon that answers and lists
    /// no server, a live control socket.
    pub(crate) fn healthy() -> Self {
        let mut host = Self::new();
        host.one_gpu().daemon_answers("").socket();
        host
    }

    /// The same, with the pipe directory named `name` (non-UTF-8 names allowed).
    pub(crate) fn with_pipe_name(name: &OsStr) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mpf")
            .tempdir()
            .expect("temp dir");
        fs::create_dir(dir.path().join("bin")).expect("bin dir");
        let pipe = dir.path().join(name);
        fs::create_dir(&pipe).expect("pipe dir");
        let env = vec![
            (
                OsString::from("PATH"),
                dir.path().join("bin").into_os_string(),
            ),
            (
                OsString::from("CUDA_MPS_PIPE_DIRECTORY"),
                pipe.clone().into_os_string(),
            ),
        ];
        Self {
            dir,
            pipe,
            env,
            listener: None,
            daemon: None,
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn pipe(&self) -> &Path {
        &self.pipe
    }

    /// Sets (or replaces) an environment variable of every run.
    pub(crate) fn env(&mut self, key: &str, value: impl AsRef<OsStr>) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self.env
            .push((OsString::from(key), value.as_ref().to_owned()));
        self
    }

    /// Unsets an environment variable of every run.
    pub(crate) fn unset(&mut self, key: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self
    }

    /// A fake tool that prints `stdout` and `stderr` and exits `code` (shell builtins only:
    /// `PATH` holds nothing else).
    pub(crate) fn tool(&mut self, name: &str, stdout: &str, stderr: &str, code: i32) -> &mut Self {
        let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
        let script = format!(
            "#!/bin/sh\nwhile read -r line; do :; done\nprintf '%s' {} \nprintf '%s' {} >&2\nexit {code}\n",
            quote(stdout),
            quote(stderr)
        );
        let path = self.dir.path().join("bin").join(name);
        write_executable(&path, |path| fs::write(path, script).expect("write tool"));
        self
    }

    /// A fake tool `name` running the shell script `body` (only shell builtins are on `PATH`;
    /// name other programs by [`system_program`]'s absolute path).
    pub(crate) fn script(&mut self, name: &str, body: &str) -> &mut Self {
        let path = self.dir.path().join("bin").join(name);
        write_executable(&path, |path| {
            fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        });
        self
    }

    /// `nvidia-smi` listing `rows` (`index, uuid, name, pci.bus_id` lines), each GPU in the
    /// `Default` compute mode of driver 550.163.01, healthy with persistence on (the probe's
    /// query asks for those first).
    pub(crate) fn gpus(&mut self, rows: &[&str]) -> &mut Self {
        self.gpus_in_mode("Default", rows)
    }

    /// [`Self::gpus`] with every GPU in compute mode `mode`.
    pub(crate) fn gpus_in_mode(&mut self, mode: &str, rows: &[&str]) -> &mut Self {
        let text = rows.iter().fold(String::new(), |text, row| {
            text + mode + ", 550.163.01, Enabled, None, No, No, No, " + row + "\n"
        });
        self.tool("nvidia-smi", &text, "", 0)
    }

    /// One H100.
    pub(crate) fn one_gpu(&mut self) -> &mut Self {
        self.gpus(&[&format!(
            "0, {GPU0}, NVIDIA H100 80GB HBM3, 00000000:18:00.0"
        )])
    }

    /// Two H100s.
    pub(crate) fn two_gpus(&mut self) -> &mut Self {
        self.gpus(&[
            &format!("0, {GPU0}, NVIDIA H100 80GB HBM3, 00000000:18:00.0"),
            &format!("1, {GPU1}, NVIDIA H100 80GB HBM3, 00000000:3B:00.0"),
        ])
    }

    /// A GTX 1660 SUPER and an RTX 3090.
    pub(crate) fn mixed_gpus(&mut self) -> &mut Self {
        self.gpus(&[
            &format!("0, {GPU0}, NVIDIA GeForce GTX 1660 SUPER, 00000000:01:00.0"),
            &format!("1, {GPU1}, NVIDIA GeForce RTX 3090, 00000000:02:00.0"),
        ])
    }

    /// A control daemon that answers (`servers`: the server list lines): the fake front-end
    /// shared with Python's tests (`fixtures/fake-host/nvidia-cuda-mps-control`).
    pub(crate) fn daemon_answers(&mut self, servers: &str) -> &mut Self {
        let state = self.dir.path().join("daemon");
        fs::create_dir_all(&state).expect("create the fake daemon's state directory");
        fs::write(state.join("servers"), servers).expect("write the fake daemon's servers");
        let shared = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/fake-host/nvidia-cuda-mps-control");
        let script = fs::read(shared).expect("read the shared fake front-end");
        let path = self.dir.path().join("bin").join("nvidia-cuda-mps-control");
        write_executable(&path, |path| fs::write(path, &script).expect("write tool"));
        self
    }

    /// The control front-end finds no daemon (what the real one prints).
    pub(crate) fn daemon_gone(&mut self) -> &mut Self {
        self.tool(
            "nvidia-cuda-mps-control",
            "",
            "Cannot find MPS control daemon process\n",
            1,
        )
    }

    /// A real listening Unix socket at `<pipe>/control`, kept open for the host's lifetime.
    pub(crate) fn socket(&mut self) -> &mut Self {
        self.listener =
            Some(UnixListener::bind(self.pipe.join("control")).expect("bind the control socket"));
        self
    }

    /// A FIFO at `<pipe>/control`.
    pub(crate) fn fifo(&mut self) -> &mut Self {
        mkfifo(&self.pipe.join("control"));
        self
    }

    /// A regular file at `<pipe>/control`.
    pub(crate) fn regular_control(&mut self) -> &mut Self {
        fs::write(self.pipe.join("control"), b"").expect("write control");
        self
    }

    /// A live process named like the control daemon that holds the daemon's POSIX write lock
    /// on `<pipe>/control_lock`, as the real daemon does, and a pid file naming it.
    pub(crate) fn live_daemon_pid(&mut self) -> u32 {
        let daemon_dir = self.dir.path().join("daemon");
        fs::create_dir_all(&daemon_dir).expect("daemon dir");
        let program = daemon_dir.join("nvidia-cuda-mps-control");
        compile_lock_holder(&program);
        let lock = self.pipe.join("control_lock");
        let child = spawn(Command::new(&program).arg(&lock).stdin(Stdio::null()));
        let pid = child.id();
        self.daemon = Some(child);
        wait_for_lock(pid);
        fs::write(
            self.pipe.join("nvidia-cuda-mps-control.pid"),
            pid.to_string(),
        )
        .expect("pid file");
        pid
    }

    /// Runs the binary with `args` in this host's environment.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_os(&args.iter().map(OsStr::new).collect::<Vec<_>>())
    }

    /// The same, with arguments that need not be UTF-8.
    pub(crate) fn run_os(&self, args: &[&OsStr]) -> Run {
        finish(&mut self.command(args))
    }

    /// The binary with `args` in this host's environment, not yet started.
    pub(crate) fn command<A: AsRef<OsStr>>(&self, args: &[A]) -> Command {
        let mut command = Command::new(BIN);
        command
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.dir.path())
            .args(args);
        command
    }

    /// Runs the binary as `nobody` (UID and GID 65534, no groups) through `setpriv`, with a copy
    /// of the binary that `nobody` can reach. `None`, after saying why, where that is not
    /// possible (not root, or no `setpriv`). The host's directories are made world-searchable.
    pub(crate) fn run_as_nobody(&self, args: &[&str]) -> Option<Run> {
        if !running_as_root() {
            eprintln!("skipping: dropping privileges needs root");
            return None;
        }
        let Some(setpriv) = ["/bin/setpriv", "/usr/bin/setpriv"]
            .into_iter()
            .find(|path| Path::new(path).exists())
        else {
            eprintln!("skipping: setpriv (util-linux) is not installed");
            return None;
        };
        for dir in [self.dir.path(), &self.dir.path().join("bin")] {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let copy = self.dir.path().join("bin").join("mps-preflight-copy");
        if !copy.exists() {
            write_executable(&copy, |copy| {
                fs::copy(BIN, copy).expect("copy the binary");
            });
        }
        let mut command = Command::new(setpriv);
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&copy)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.dir.path())
            .args(args);
        Some(finish(&mut command))
    }

    /// Runs the binary as `uid` (a user with no other process, so its process count is this
    /// run's alone) under `RLIMIT_NPROC` = `nproc`, through `prlimit` and `setpriv`. `None`
    /// where that is not possible (not root, or no `setpriv`/`prlimit`).
    pub(crate) fn run_limited(&self, uid: u32, nproc: u32, args: &[&str]) -> Option<Run> {
        self.run_prlimited(uid, &format!("--nproc={nproc}:{nproc}"), args)
    }

    /// [`Self::run_limited`] with any one `prlimit` limit (`--nofile=4:4`).
    pub(crate) fn run_prlimited(&self, uid: u32, limit: &str, args: &[&str]) -> Option<Run> {
        let prlimit = Path::new("/usr/bin/prlimit");
        if !prlimit.exists() {
            eprintln!("skipping: prlimit (util-linux) is not installed");
            return None;
        }
        // Makes the copy of the binary and the directories reachable, or says why not.
        self.run_as_nobody(&["--version"])?;
        let copy = self.dir.path().join("bin").join("mps-preflight-copy");
        let mut command = Command::new(prlimit);
        command
            .arg(limit)
            .arg("--")
            .arg(system_program("setpriv"))
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={uid}"))
            .args(["--clear-groups", "--"])
            .arg(&copy)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(self.dir.path())
            .args(args);
        Some(finish(&mut command))
    }

    /// Replaces this host's temp paths, the machine's host name (as a JSON `host_name` value)
    /// and `pid`, when given, with stable names, for snapshots.
    pub(crate) fn redact(&self, text: &str, pid: Option<u32>) -> String {
        let mut text = text.replace(&self.dir.path().display().to_string(), "[HOST]");
        let host_name = serde_json::Value::from(mps_host::read_host_name().to_string_lossy());
        text = text.replace(
            &format!("\"host_name\": {host_name}"),
            "\"host_name\": \"[HOST_NAME]\"",
        );
        if let Some(pid) = pid {
            text = text.replace(&pid.to_string(), "[DAEMON_PID]");
        }
        text
    }
}

impl Drop for FakeHost {
    fn drop(&mut self) {
        if let Some(child) = &mut self.daemon {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The absolute path of a system program (`sleep`, `rm`, …): fake hosts' `PATH` holds only
/// their fake tools.
pub(crate) fn system_program(name: &str) -> PathBuf {
    ["/bin", "/usr/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("{name} is not in /bin or /usr/bin"))
}

/// Whether this test runs with effective UID 0 (`/proc/self/status`).
pub(crate) fn running_as_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// `mkfifo` without a dependency: the coreutils tool.
pub(crate) fn mkfifo(path: &Path) {
    let status = spawn(Command::new("mkfifo").arg(path))
        .wait()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A minimal snapshot of this schema: a Linux host where nothing was observed.
pub(crate) fn bare_snapshot() -> serde_json::Value {
    serde_json::json!({
        "schema": SCHEMA,
        "os": "linux",
        "env": {
            "cuda_visible_devices": null,
            "cuda_device_order": null,
            "cuda_mps_pipe_directory": null,
            "cuda_mps_log_directory": null
        },
        "gpu_query": null,
        "control_pipe": null,
        "daemon_query": null,
        "pid_file": null,
        "learner_uuid": null
    })
}

/// The repository's `fixtures/hosts` directory.
pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts")
}

/// Bytes that are not UTF-8.
pub(crate) fn not_utf8(prefix: &str) -> OsString {
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(b"\xff\xfe");
    OsStr::from_bytes(&bytes).to_owned()
}

/// A C program that takes a POSIX write lock on the whole file named by its argument (created
/// 0666 if absent), as the control daemon holds `control_lock`, then waits for a signal.
const LOCK_HOLDER_C: &str = "#include <fcntl.h>\n#include <unistd.h>\n\
int main(int argc, char **argv) {\n\
  if (argc < 2) return 2;\n\
  int fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0666);\n\
  struct flock lock = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };\n\
  if (fd < 0 || fcntl(fd, F_SETLKW, &lock) != 0) return 1;\n\
  pause();\n\
  return 0;\n\
}\n";

/// Compiles [`LOCK_HOLDER_C`] to `program` with the system's C compiler.
pub(crate) fn compile_lock_holder(program: &Path) {
    let source = program.with_extension("c");
    fs::write(&source, LOCK_HOLDER_C).expect("write the lock holder's source");
    let status = Command::new("cc")
        .arg("-o")
        .arg(program)
        .arg(&source)
        .status()
        .expect("a C compiler (cc) builds the fake daemon");
    assert!(status.success(), "cc failed on the lock holder");
}

/// Waits (5 s at most) until `/proc/locks` shows a POSIX write lock held by `pid`.
fn wait_for_lock(pid: u32) {
    let held = format!(" WRITE {pid} ");
    for _ in 0..500 {
        let locks = fs::read_to_string("/proc/locks").unwrap_or_default();
        if locks
            .lines()
            .any(|line| line.contains("POSIX") && line.contains(&held))
        {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the fake daemon {pid} took no lock");
}
