//! Helpers shared by the integration tests: fake programs and process checks.
#![allow(
    dead_code,
    reason = "each test file uses a different subset of the helpers"
)]

pub(crate) mod daemon;

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mps_host::{ProcessRunner, Query};
use tempfile::TempDir;

/// A short temp dir under `/tmp` (socket paths must stay under 108 bytes).
pub(crate) fn short_tempdir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/tmp")
        .unwrap()
}

/// `capture_with` through the process runner `options` describe (its search path): what the
/// real-daemon and capture tests all do.
pub(crate) fn capture_on(
    env: sharing_policy::EnvFacts,
    options: &mps_host::ProbeOptions,
) -> sharing_policy::HostFacts {
    let runner = ProcessRunner {
        search_path: options.search_path.clone(),
        ..ProcessRunner::default()
    };
    mps_host::capture_with(env, &runner, options)
}

/// The fake control front-end every crate's tests share
/// (`fixtures/fake-host/nvidia-cuda-mps-control`: a live 550 daemon answering each command it
/// reads), installed as `<root>/bin/nvidia-cuda-mps-control`, listing `servers`. Returns its state
/// directory, `<root>/daemon`, where a test writes what else it answers (`clients.<pid>`,
/// `percentage.<pid>`, `pinned.<pid>`, `status.<pid>`, `default-pinned`).
pub(crate) fn shared_fake_daemon(root: &Path, servers: &[u32]) -> PathBuf {
    let state = root.join("daemon");
    std::fs::create_dir_all(&state).unwrap();
    let listed = servers
        .iter()
        .fold(String::new(), |all, pid| all + &pid.to_string() + "\n");
    std::fs::write(state.join("servers"), listed).unwrap();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/fake-host/nvidia-cuda-mps-control");
    let script = std::fs::read_to_string(shared).unwrap();
    let body = script.strip_prefix("#!/bin/sh\n").unwrap();
    fake_program(&root.join("bin"), "nvidia-cuda-mps-control", body);
    state
}

/// Writes an executable `#!/bin/sh` script `name` into `dir`.
pub(crate) fn fake_program(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .unwrap();
    write!(file, "#!/bin/sh\n{body}\n").unwrap();
    file.sync_all().unwrap();
    drop(file);
    path
}

/// `source` compiled with `cc` into `dir/name`: a real program where a shell script would not
/// do (a process that holds a lock, or whose `comm` is a given name).
pub(crate) fn compile_c(dir: &Path, name: &str, source: &str) -> PathBuf {
    let file = dir.join(format!("{name}.c"));
    std::fs::write(&file, source).unwrap();
    let program = dir.join(name);
    #[allow(
        clippy::disallowed_methods,
        reason = "test harness: builds a helper program"
    )]
    let status = std::process::Command::new("cc")
        .arg("-o")
        .arg(&program)
        .arg(&file)
        .status()
        .expect("a C compiler (cc) builds the helper program");
    assert!(status.success(), "cc {}", file.display());
    program
}

/// A runner that finds programs only in `dir`.
pub(crate) fn runner_in(dir: &Path) -> ProcessRunner {
    ProcessRunner {
        search_path: Some(OsString::from(dir)),
        ..ProcessRunner::default()
    }
}

/// A query for `program` with `stdin` and `timeout`, nothing else.
pub(crate) fn query(program: &str, stdin: &str, timeout: Duration) -> Query {
    Query {
        program: program.to_owned(),
        args: Vec::new(),
        stdin: stdin.to_owned(),
        env: std::collections::BTreeMap::new(),
        env_removed: Vec::new(),
        timeout,
    }
}

/// The state letter of `/proc/<pid>/stat` (`R`, `S`, `T`, `Z`, …), or `None` when there is no
/// such process.
pub(crate) fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.rfind(')')?;
    stat[close + 1..].trim_start().chars().next()
}

/// True when `pid` is no longer running: gone, or a zombie waiting for a parent that does not
/// reap (this container's PID 1 does not).
pub(crate) fn is_dead(pid: i32) -> bool {
    matches!(process_state(pid), None | Some('Z' | 'X'))
}

/// Polls `condition` every 20 ms for up to `limit`.
pub(crate) fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if condition() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads PIDs written one per line by a fake program.
pub(crate) fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The live (not zombie) processes whose environment holds exactly `NAME=value`.
pub(crate) fn live_processes_with_env(name: &str, value: &[u8]) -> Vec<i32> {
    let mut needle = name.as_bytes().to_vec();
    needle.push(b'=');
    needle.extend_from_slice(value);
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ
            .split(|byte| *byte == 0)
            .any(|var| var == needle.as_slice())
            && !is_dead(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Runs `command` until its exec stops failing with ETXTBSY (20 tries, 50 ms apart): a binary
/// copied just before can still be open for writing in a child that another test forked
/// meanwhile.
pub(crate) fn output_when_not_busy(
    mut command: impl FnMut() -> std::process::Output,
) -> std::process::Output {
    let mut output = command();
    for _ in 0..20 {
        if !String::from_utf8_lossy(&output.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        output = command();
    }
    output
}

/// A fake host's daemon lock, as the kernel would show it: a real `control_lock` in `pipe`
/// (created if absent, never replaced, so its inode stays), and `<proc_root>/locks` whose one
/// line says `holder` holds a POSIX write lock on it, in `/proc/locks`' format.
#[allow(dead_code, reason = "not every test binary fakes a lock")]
pub(crate) fn fake_lock(proc_root: &Path, pipe: &Path, holder: i64) {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(pipe).unwrap();
    let lock = pipe.join("control_lock");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&lock)
        .unwrap();
    let meta = std::fs::metadata(&lock).unwrap();
    let line = format!(
        "1: POSIX  ADVISORY  WRITE {holder} {:02x}:{:02x}:{} 0 EOF\n",
        rustix::fs::major(meta.dev()),
        rustix::fs::minor(meta.dev()),
        meta.ino()
    );
    std::fs::write(proc_root.join("locks"), line).unwrap();
}

/// The front ends' `keep_waiting` for attest's rounds: the policy's judgement of a round.
pub(crate) fn worth_waiting(facts: &sharing_policy::AttestFacts) -> bool {
    sharing_policy::attest(facts).worth_waiting()
}
