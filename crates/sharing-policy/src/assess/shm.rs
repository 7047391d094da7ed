//! The `/dev/shm` family: a client and its MPS server exchange memory through `/dev/shm`, so
//! the probing process must see the same filesystem as the control daemon (whose servers
//! inherit its mounts), and, when the request states a minimum (`--min-shm`), it must have
//! that much room. A v4 snapshot without `/dev/shm` facts is unverified; an older one
//! (recorded before this check) is not judged here.

use super::{Context, Findings, Served};
use crate::{Code, Finding, MemSize, ShmView};

/// What this check adds to the evidence: the caller's free and total bytes.
#[derive(Debug, Default)]
pub(super) struct ShmEvidence {
    pub(super) free_bytes: Option<u64>,
    pub(super) total_bytes: Option<u64>,
}

/// How to let the probe read the daemon's `/dev/shm`.
const READ_DAEMON: &str = "run the probe with access to the daemon's /proc/<pid>/root (as root, or as the daemon's user) in the control daemon's PID namespace (on Kubernetes, a pod with hostPID: true), where the daemon's lock proves its process and /proc/<daemon>/root is readable, and probe again (with --require-verified this is a rejection)";

/// Same filesystem, then the room left.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> ShmEvidence {
    let Some(shm) = context.facts.shm.as_ref() else {
        // A v4 snapshot records /dev/shm; one without it proves nothing (an older one never
        // read it and is judged as before).
        if context.facts.schema == crate::SCHEMA {
            let why = "this v4 snapshot does not record /dev/shm (shm is absent)".to_owned();
            let what = "that this process shares the MPS server's /dev/shm";
            let finding =
                super::unverified_finding(context, Code::ShmUnverified, what, why, READ_DAEMON);
            served.unverified(context.request, findings, finding);
        }
        return ShmEvidence::default();
    };
    let evidence = ShmEvidence {
        free_bytes: shm.caller.free_bytes,
        total_bytes: shm.caller.total_bytes,
    };
    // Only the view of the daemon this walk identified counts.
    let daemon = match (&context.daemon, shm.daemon_pid) {
        (crate::served::DaemonProcess::Found(process), Some(pid)) if process.pid == pid => {
            shm.daemon.as_ref()
        }
        _ => None,
    };
    match same_filesystem(&shm.caller, daemon) {
        Ok(true) => {}
        Ok(false) => {
            findings.push(|| not_shared(context, &shm.caller, daemon, shm.daemon_pid));
            return evidence;
        }
        Err(why) => {
            let what = "that this process shares the MPS server's /dev/shm";
            let finding =
                super::unverified_finding(context, Code::ShmUnverified, what, why, READ_DAEMON);
            served.unverified(context.request, findings, finding);
        }
    }
    if findings.settled() {
        return evidence;
    }
    if let Some(wanted) = context.request.min_shm {
        room(context, &shm.caller, wanted, served, findings);
    }
    evidence
}

/// Whether the caller's `/dev/shm` is the daemon's: the same `st_dev` and `st_ino` (the same
/// filesystem and the same directory in it, so a bind mount of another subdirectory of the
/// same tmpfs differs too); `Err` says why it cannot be told.
fn same_filesystem(caller: &ShmView, daemon: Option<&ShmView>) -> Result<bool, String> {
    let identity = |view: &ShmView| match (view.device, view.inode) {
        (Some(device), Some(inode)) => Ok((device, inode)),
        _ => Err(format!(
            "{} could not be read ({})",
            view.path.to_string_lossy(),
            view.errors
                .get("stat")
                .map_or("not recorded", String::as_str)
        )),
    };
    let Some(daemon) = daemon else {
        return Err(
            "the /dev/shm of the control daemon identified here was not recorded (no daemon proven by its lock)"
                .to_owned(),
        );
    };
    let mine = identity(caller)?;
    let theirs = identity(daemon)?;
    Ok(mine == theirs)
}

fn not_shared(
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
    Finding::new(
        Code::ShmNotShared,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            &context.gpu.to_string(),
            " through ",
            &context.control_path(),
            ": ",
            &what,
            ", so clients fail at CUDA init (error 805, a segfault in cudaSetDevice, or SIGBUS). To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        what,
        fix,
    )
}

/// `--min-shm`: the free bytes against the minimum; unread free space is unverified.
fn room(
    context: &Context<'_>,
    caller: &ShmView,
    wanted: MemSize,
    served: &mut Served,
    findings: &mut Findings,
) {
    let wanted_bytes = wanted.mib().saturating_mul(1024 * 1024);
    let Some(free) = caller.free_bytes else {
        let why = format!(
            "statvfs of {} failed ({}), so --min-shm {wanted} cannot be checked",
            caller.path.to_string_lossy(),
            caller
                .errors
                .get("statvfs")
                .map_or("not recorded", String::as_str)
        );
        let fix = "check that /dev/shm is mounted and readable (df /dev/shm) and probe again (with --require-verified this is a rejection)";
        let finding = super::unverified_finding(
            context,
            Code::ShmUnverified,
            "the free space of /dev/shm",
            why,
            fix,
        );
        served.unverified(context.request, findings, finding);
        return;
    };
    if free >= wanted_bytes {
        return;
    }
    findings.push(|| {
        let what = format!(
            "{} has {} MiB free of {} MiB, below the required {wanted}",
            caller.path.to_string_lossy(),
            free / (1024 * 1024),
            caller.total_bytes.unwrap_or_default() / (1024 * 1024)
        );
        let fix = "remove stale files from /dev/shm (ls -la /dev/shm: leftovers of killed jobs), or give the job a larger /dev/shm (on Kubernetes an emptyDir with medium: Memory and a sizeLimit at /dev/shm; docker --shm-size)".to_owned();
        Finding::new(
            Code::ShmBelowRequirement,
            context.words(),
            [
                context.words().mps(),
                " cannot give the clients room in /dev/shm: ",
                &what,
                ", so clients can die with SIGBUS or fail at CUDA init. To fix it, ",
                &fix,
                ".",
            ]
            .concat(),
            what,
            fix,
        )
    });
}
