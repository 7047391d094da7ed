//! The `/dev/shm` family's words: why the probe's `/dev/shm` could not be compared with the
//! daemon's, why it is not the daemon's, and why it has too little room, with what to do.

use super::unverified_finding;
use crate::assess::Context;
use crate::{Code, Finding, MemSize, ShmView};

/// How to let the probe read the daemon's `/dev/shm`.
const READ_DAEMON: &str = "run the probe with access to the daemon's /proc/<pid>/root (as root, or as the daemon's user) in the control daemon's PID namespace (on Kubernetes, a pod with hostPID: true), where the daemon's lock proves its process and /proc/<daemon>/root is readable, and probe again (with --require-verified this is a rejection)";

/// The finding for a v4 snapshot that does not record `/dev/shm` at all.
pub(in crate::assess) fn unrecorded(context: &Context<'_>) -> Finding {
    let why = "this v4 snapshot does not record /dev/shm (shm is absent)".to_owned();
    not_compared(context, why)
}

/// The finding for a `/dev/shm` that could not be compared with the daemon's, for `why`.
pub(in crate::assess) fn not_compared(context: &Context<'_>, why: String) -> Finding {
    let what = "that this process shares the MPS server's /dev/shm";
    unverified_finding(context, Code::ShmUnverified, what, why, READ_DAEMON)
}

/// Why `view`'s identity (device and inode) is unknown: its `stat` failed or was not recorded.
pub(in crate::assess) fn unreadable(view: &ShmView) -> String {
    format!(
        "{} could not be read ({})",
        view.path.to_string_lossy(),
        view.errors
            .get("stat")
            .map_or("not recorded", String::as_str)
    )
}

/// Why there is no daemon view to compare with: none of the daemon proven here was recorded.
pub(in crate::assess) fn daemon_view_unrecorded() -> String {
    "the /dev/shm of the control daemon identified here was not recorded (no daemon proven by its lock)"
        .to_owned()
}

/// The rejection for a caller's `/dev/shm` that is not the control daemon's (PID `daemon_pid`).
pub(in crate::assess) fn not_shared(
    context: &Context<'_>,
    caller: &ShmView,
    daemon: Option<&ShmView>,
    daemon_pid: Option<i64>,
) -> Finding {
    let describe = |view: &ShmView| {
        let mut text = format!(
            "device {} inode {}",
            view.device.unwrap_or_default(),
            view.inode.unwrap_or_default()
        );
        if let Some(root) = &view.mount_root {
            text.push_str(", mount root ");
            text.push_str(root);
        }
        text
    };
    let pid = daemon_pid.map_or_else(|| "?".to_owned(), |pid| pid.to_string());
    let what = format!(
        "this process's /dev/shm ({}) is not the control daemon's (PID {pid}: {})",
        describe(caller),
        daemon.map(describe).unwrap_or_default()
    );
    let fix = "run the job in the daemon's IPC and mount setup: on Kubernetes give the pod hostIPC: true or mount the host's /dev/shm at /dev/shm (the same one the daemon's pod mounts); in a container runtime pass --ipc=host; or run the daemon inside the job's container".to_owned();
    let (gpu, path) = (context.gpu.to_string(), context.control_path());
    let subject = [" cannot share GPU ", &gpu, " through ", &path, ": "];
    let effect =
        ", so clients fail at CUDA init (error 805, a segfault in cudaSetDevice, or SIGBUS)";
    super::with_fix(context, Code::ShmNotShared, &subject, what, effect, fix)
}

/// The finding for a caller's `/dev/shm` whose free space was not read, so `--min-shm`
/// (`wanted`) cannot be checked.
pub(in crate::assess) fn free_space_unread(
    context: &Context<'_>,
    caller: &ShmView,
    wanted: MemSize,
) -> Finding {
    let why = format!(
        "statvfs of {} failed ({}), so --min-shm {wanted} cannot be checked",
        caller.path.to_string_lossy(),
        caller
            .errors
            .get("statvfs")
            .map_or("not recorded", String::as_str)
    );
    let fix = "check that /dev/shm is mounted and readable (df /dev/shm) and probe again (with --require-verified this is a rejection)";
    unverified_finding(
        context,
        Code::ShmUnverified,
        "the free space of /dev/shm",
        why,
        fix,
    )
}

/// The rejection for a caller's `/dev/shm` with `free` bytes, below `--min-shm` (`wanted`).
pub(in crate::assess) fn below_requirement(
    context: &Context<'_>,
    caller: &ShmView,
    free: u64,
    wanted: MemSize,
) -> Finding {
    let what = format!(
        "{} has {} MiB free of {} MiB, below the required {wanted}",
        caller.path.to_string_lossy(),
        free / (1024 * 1024),
        caller.total_bytes.unwrap_or_default() / (1024 * 1024)
    );
    let fix = "remove stale files from /dev/shm (ls -la /dev/shm: leftovers of killed jobs), or give the job a larger /dev/shm (on Kubernetes an emptyDir with medium: Memory and a sizeLimit at /dev/shm; docker --shm-size)".to_owned();
    let subject = [" cannot give the clients room in /dev/shm: "];
    let effect = ", so clients can die with SIGBUS or fail at CUDA init";
    super::with_fix(
        context,
        Code::ShmBelowRequirement,
        &subject,
        what,
        effect,
        fix,
    )
}
