//! The daemon's lock seen from a new PID namespace that kept its parent's `/proc` (as root:
//! `unshare --pid --fork`, no `--mount-proc`). `fcntl(F_GETLK)` names a holder by this
//! namespace's PID, which that `/proc` gives to another process (PID 2 there is the parent
//! namespace's `kthreadd`, a root process), so the probe must not ask it there: it reads the
//! kernel's lock table, whose PIDs are `/proc`'s, and proves the real holder.

use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};

use crate::support::{BIN, FakeHost, compile_lock_holder, finish, running_as_root, system_program};

#[test]
fn a_proc_of_another_pid_namespace_is_not_read_by_the_lock_tests_pid() {
    if !running_as_root() {
        eprintln!("skipped: a new PID namespace needs root");
        return;
    }
    let mut host = FakeHost::new();
    host.one_gpu().daemon_answers("").socket();
    let holder = host.root().join("nvidia-cuda-mps-control");
    compile_lock_holder(&holder);
    let lock = host.pipe().join("control_lock");
    std::fs::write(&lock, "").unwrap();
    let inode = std::fs::metadata(&lock).unwrap().ino();
    // The holder starts in the new namespace; the probe runs once the lock table shows it,
    // as that namespace's PID 1, so both end with it.
    let script = format!(
        "\"$0\" \"$1\" </dev/null & i=0; \
         while [ $i -lt 500 ] && ! \"$3\" -q ':{inode} ' /proc/locks; do \"$4\" 0.01; i=$((i+1)); done; \
         exec \"$2\" capture"
    );
    let template = host.command(&["capture"]);
    let mut command = Command::new(system_program("unshare"));
    command
        .env_clear()
        .envs(
            template
                .get_envs()
                .filter_map(|(key, value)| value.map(|value| (key, value))),
        )
        .current_dir(host.root())
        .args(["--pid", "--fork"])
        .arg(system_program("sh"))
        .args(["-c", &script])
        .arg(&holder)
        .arg(&lock)
        .arg(BIN)
        .arg(system_program("grep"))
        .arg(system_program("sleep"))
        .stdin(Stdio::null());
    let run = finish(&mut command);
    let snapshot = run.json("capture in a new PID namespace");
    let search = &snapshot["daemon_process"];
    assert_eq!(search["lock"]["test"], serde_json::Value::Null, "{search}");
    let lines = search["lock"]["locks"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{search}");
    assert_eq!(search["method"], "lock", "{search}");
    let daemon = &search["processes"][0];
    assert!(
        lines[0]
            .as_str()
            .unwrap()
            .contains(&format!(" WRITE {} ", daemon["pid"])),
        "{search}"
    );
    assert_eq!(daemon["comm"], "nvidia-cuda-mps", "{search}");
}
