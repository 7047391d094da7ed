//! The suggested commands in rejections are safe to paste: each one is run
//! through `sh` in a sandbox whose pipe directory has a hostile name, with a fake
//! `nvidia-cuda-mps-control` on `PATH` that records what it was given. Only the intended
//! directories may appear, the daemon must get exactly the intended paths, and nothing the name
//! spells (`$(touch pwned)`, `;rm -rf canary;`, …) may run.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{FakeHost, GPU0, MPS_REQUEST, args, finish, write_executable};

/// Directory names a hostile (or careless) user could put in `CUDA_MPS_PIPE_DIRECTORY`.
const HOSTILE: &[&str] = &[
    "my runs",
    "o'brien",
    "say \"hi\"",
    "$(touch pwned)",
    "`touch pwned`",
    "a\nb",
    ";rm -rf canary;",
    "&& touch pwned ||",
    "| touch pwned",
    "> pwned",
    "*",
    "$HOME",
    "back\\slash",
    "-rf",
];

/// The hostile names whose suggested commands are pasted and run. A name with a control
/// character (`a\nb`) is escaped in the one-line message instead: see
/// `a_name_with_a_newline_stays_on_one_error_line`.
fn pasteable() -> impl Iterator<Item = &'static &'static str> {
    HOSTILE
        .iter()
        .filter(|name| !name.chars().any(char::is_control))
}

/// Every path below `root` (relative, links not followed).
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                pending.push(path.clone());
            }
            found.insert(path.strip_prefix(root).unwrap().to_owned());
        }
    }
    found
}

/// `path` and its ancestors below `root`, relative to it.
fn with_ancestors(root: &Path, path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .take_while(|ancestor| *ancestor != root)
        .map(|ancestor| ancestor.strip_prefix(root).unwrap().to_owned())
        .collect()
}

/// What the recording `nvidia-cuda-mps-control` was given.
#[derive(Debug, PartialEq, Eq)]
struct Recorded {
    args: String,
    pipe: String,
    log: String,
    visible: String,
    stdin: String,
}

/// A `PATH` entry holding a fake `nvidia-cuda-mps-control` that records its arguments,
/// environment and standard input (NUL-separated, so names with newlines survive).
struct Recorder {
    dir: tempfile::TempDir,
}

impl Recorder {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record");
        let script = format!(
            "#!/bin/sh\nstdin=$(cat)\nprintf '%s\\0' \"$*\" \"$CUDA_MPS_PIPE_DIRECTORY\" \
             \"$CUDA_MPS_LOG_DIRECTORY\" \"${{CUDA_VISIBLE_DEVICES-unset}}\" \"$stdin\" > '{}'\n",
            record.display()
        );
        write_executable(&dir.path().join("nvidia-cuda-mps-control"), |program| {
            std::fs::write(program, script).unwrap();
        });
        Self { dir }
    }

    /// Runs `command` with `sh -c` in `cwd`, this recorder first on `PATH`, and returns what
    /// the fake daemon front-end was given.
    fn run(&self, command: &str, cwd: &Path) -> Recorded {
        let record = self.dir.path().join("record");
        let _ = std::fs::remove_file(&record);
        let mut path = self.dir.path().as_os_str().to_owned();
        path.push(":/usr/bin:/bin");
        let run = finish(
            Command::new("/bin/sh")
                .arg("-c")
                .arg(command)
                .env_clear()
                .env("PATH", path)
                .env("HOME", self.dir.path())
                .current_dir(cwd),
        );
        assert_eq!(run.code, 0, "{command}\n{}", run.render());
        let bytes = std::fs::read(&record)
            .unwrap_or_else(|err| panic!("the daemon front-end did not run: {err}\n{command}"));
        let fields: Vec<&[u8]> = bytes.split(|byte| *byte == 0).collect();
        assert_eq!(fields.len(), 6, "{bytes:?}");
        let text = |field: &[u8]| String::from_utf8(field.to_vec()).unwrap();
        Recorded {
            args: text(fields[0]),
            pipe: text(fields[1]),
            log: text(fields[2]),
            visible: text(fields[3]),
            stdin: text(fields[4]),
        }
    }
}

/// The command a rejection suggests: everything after `marker` in the one `error: ` message.
fn suggestion(host: &FakeHost, marker: &str) -> String {
    let run = host.run(&args("probe", &MPS_REQUEST, &[]));
    run.assert_rejected(marker);
    let message = run
        .stderr
        .strip_prefix("error: ")
        .and_then(|text| text.strip_suffix('\n'))
        .unwrap();
    let (_, command) = message
        .split_once(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in\n{}", run.render()));
    command.to_owned()
}

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// Runs a start command suggested for `pipe` in `sandbox` and checks that it creates exactly
/// the pipe and log directories and starts the daemon on them, pinned to the GPU.
fn check_start_command(
    recorder: &Recorder,
    command: &str,
    sandbox: &Path,
    pipe: &Path,
    log: &Path,
) {
    let before = tree(sandbox);
    let given = recorder.run(command, sandbox);
    assert_eq!(
        given,
        Recorded {
            args: "-d".to_owned(),
            pipe: text(pipe),
            log: text(log),
            visible: GPU0.to_owned(),
            stdin: String::new(),
        },
        "{command}"
    );
    let mut expected = before;
    expected.extend(with_ancestors(sandbox, pipe));
    expected.extend(with_ancestors(sandbox, log));
    assert_eq!(tree(sandbox), expected, "{command}");
    assert!(pipe.is_dir() && log.is_dir(), "{command}");
}

/// No control pipe: "Start a control daemon with: mkdir -p … && … nvidia-cuda-mps-control -d",
/// with the pipe directory (and, for every other name, the log directory) hostile.
#[test]
fn the_start_command_for_a_missing_pipe_creates_only_its_directories() {
    let recorder = Recorder::new();
    for (number, name) in pasteable().enumerate() {
        let mut host = FakeHost::new();
        host.one_gpu().daemon_gone();
        let sandbox = host.root().join("sandbox");
        std::fs::create_dir_all(sandbox.join("canary")).unwrap();
        let pipe = sandbox.join(name).join("mps");
        host.env("CUDA_MPS_PIPE_DIRECTORY", &pipe);
        let log = if number % 2 == 0 {
            let log = sandbox.join(format!("log {name}"));
            host.env("CUDA_MPS_LOG_DIRECTORY", &log);
            log
        } else {
            sandbox.join(name).join("log")
        };
        let command = suggestion(&host, "Start a control daemon with: ");
        check_start_command(&recorder, &command, &sandbox, &pipe, &log);
    }
}

/// A socket nobody answers behind ("Verify the daemon and retry: …"), and a regular file in the
/// control pipe's place ("Move it aside and start a control daemon with: …"), in a pipe
/// directory with a hostile name: the start command adds only the log directory.
#[test]
fn the_start_command_beside_a_stale_or_wrong_pipe_creates_only_the_log_directory() {
    let recorder = Recorder::new();
    for name in pasteable() {
        for stale in [true, false] {
            let mut host = FakeHost::with_pipe_name(OsStr::new(name));
            host.one_gpu().daemon_gone();
            let marker = if stale {
                host.socket();
                "Verify the daemon and retry: "
            } else {
                host.regular_control();
                "start a control daemon with: "
            };
            std::fs::create_dir(host.root().join("canary")).unwrap();
            let command = suggestion(&host, marker);
            let (root, pipe) = (host.root().to_owned(), host.pipe().to_owned());
            check_start_command(&recorder, &command, &root, &pipe, &root.join("log"));
        }
    }
}

/// A daemon that answers something unrecognised: "Check the daemon by hand: printf … |
/// `CUDA_MPS_PIPE_DIRECTORY=… nvidia-cuda-mps-control`" asks the right directory, read-only,
/// and creates nothing.
#[test]
fn the_check_by_hand_command_asks_the_hostile_directory_and_creates_nothing() {
    let recorder = Recorder::new();
    for name in pasteable() {
        let mut host = FakeHost::with_pipe_name(OsStr::new(name));
        host.one_gpu()
            .socket()
            .tool("nvidia-cuda-mps-control", "surprise\n", "", 0);
        std::fs::create_dir(host.root().join("canary")).unwrap();
        let command = suggestion(&host, "Check the daemon by hand: ");
        let before = tree(host.root());
        let given = recorder.run(&command, host.root());
        assert_eq!(
            given,
            Recorded {
                args: String::new(),
                pipe: text(host.pipe()),
                log: String::new(),
                visible: "unset".to_owned(),
                stdin: "get_default_active_thread_percentage".to_owned(),
            },
            "{command}"
        );
        assert_eq!(tree(host.root()), before, "{command}");
    }
}

/// A pipe directory named `a\n<forged error line>`: the rejection stays one `error:` line, the
/// newline written `\n`, in every message that names it.
#[test]
fn a_name_with_a_newline_stays_on_one_error_line() {
    for marker in [
        "Start a control daemon with: ",
        "Verify the daemon and retry: ",
    ] {
        let mut host = FakeHost::with_pipe_name(OsStr::new("a\nerror: forged"));
        host.one_gpu().daemon_gone();
        if marker.starts_with("Verify") {
            host.socket();
        }
        let run = host.run(&args("probe", &MPS_REQUEST, &[]));
        run.assert_rejected(marker);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.render());
        assert!(run.stderr.contains(r"a\nerror: forged"), "{}", run.render());
    }
}
