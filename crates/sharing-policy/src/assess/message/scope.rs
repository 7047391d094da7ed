//! The daemon scope family's words: why the daemon's scope could not be read and how to read
//! it, a GPU the daemon's mask leaves out, and a client index the daemon renumbers.

use gpu_uuid::GpuUuid;

use super::unverified_finding;
use crate::assess::Context;
use crate::assess::scope::Fix;
use crate::served::NotIdentified;
use crate::text::repr;
use crate::{Code, Finding, OsText};

/// How to make the daemon's environment readable.
const VERIFY: &str = "run the probe as root or as the daemon's user, so that the daemon's /proc/<pid>/environ is readable (with --require-verified this is a rejection)";

/// For a root caller when the daemon's process was not identified: root sees every process of
/// its PID namespace, unless /proc is mounted with hidepid and root lacks `CAP_SYS_PTRACE`
/// (hidepid shows a process to a reader that could trace it, and a reader without every
/// capability of the process needs `CAP_SYS_PTRACE` for that). So the daemon is not running,
/// runs elsewhere, or the capability is missing, the likely cause in a container.
const FIND_DAEMON: &str = "check that the control daemon runs in this PID namespace (`ps -C nvidia-cuda-mps-control`; a 550+ daemon's pid file names its PID), then probe again. The probe runs as root; if the daemon does run here, the likely cause is that the probe lacks CAP_SYS_PTRACE (a container's default capabilities do not include it) and /proc is mounted with hidepid: give it CAP_SYS_PTRACE (Kubernetes: securityContext.capabilities.add: [\"SYS_PTRACE\"]; docker run --cap-add SYS_PTRACE) (with --require-verified this is a rejection)";

/// When the daemon's process exited while it was read.
const DAEMON_GONE: &str = "probe again: the daemon's process no longer exists (it exited or restarted while it was read); if this repeats, check the daemon (with --require-verified this is a rejection)";

/// When the caller is root and /proc still hides the daemon's environment: reading another
/// process's environment takes, besides the same user, every capability that process has, or
/// `CAP_SYS_PTRACE`. A root probe in a container (Docker's and Kubernetes' default capability
/// set has no `CAP_SYS_PTRACE`) reading a host daemon that runs with full capabilities is
/// refused, so the missing capability is the likely cause; another PID namespace or hidepid
/// are the others.
const HIDDEN_FROM_ROOT: &str = "give the probe CAP_SYS_PTRACE, the likely cause since it already runs as root: /proc shows a process's environment only to a reader holding every capability that process has, or CAP_SYS_PTRACE, which a container's default capabilities do not include (Kubernetes: securityContext.capabilities.add: [\"SYS_PTRACE\"]; docker run --cap-add SYS_PTRACE); and run it in the daemon's PID namespace (hostPID, not another container's) (with --require-verified this is a rejection)";

/// When the caller is root and holds `CAP_SYS_PTRACE`, and /proc still hides the daemon's
/// environment: a security module (Docker's default `AppArmor` profile denies reading other
/// profiles' processes) or another PID namespace.
const HIDDEN_DESPITE_PTRACE: &str = "run the probe in the daemon's PID namespace (hostPID, not another container's) and without a security profile that denies reading other processes (Docker's default AppArmor profile does: --security-opt apparmor=unconfined, or a profile allowing ptrace read): it already runs as root with CAP_SYS_PTRACE (with --require-verified this is a rejection)";

/// When the caller is root, its effective capabilities were read, and `CAP_SYS_PTRACE` is not
/// among them: that is the cause, said as a fact.
const MISSING_PTRACE: &str = "give the probe CAP_SYS_PTRACE, which its effective capabilities lack: /proc shows a process's environment only to a reader holding every capability that process has, or CAP_SYS_PTRACE (Kubernetes: securityContext.capabilities.add: [\"SYS_PTRACE\"]; docker run --cap-add SYS_PTRACE); and run it in the daemon's PID namespace (hostPID) (with --require-verified this is a rejection)";

/// When the snapshot predates the daemon's process observation (v1).
const RECAPTURE: &str = "capture the host again with this version, which records the daemon's process (with --require-verified this is a rejection)";

/// The text of a [`Fix`].
fn fix_text(fix: Fix) -> &'static str {
    match fix {
        Fix::Recapture => RECAPTURE,
        Fix::DaemonGone => DAEMON_GONE,
        Fix::HiddenDespitePtrace => HIDDEN_DESPITE_PTRACE,
        Fix::MissingPtrace => MISSING_PTRACE,
        Fix::HiddenFromRoot => HIDDEN_FROM_ROOT,
        Fix::FindDaemon => FIND_DAEMON,
        Fix::Verify => VERIFY,
    }
}

/// What an unverified scope could not verify: the GPUs the daemon at `path` serves.
fn what(path: &str) -> String {
    format!("which GPUs the control daemon at {path} serves")
}

/// The unverified scope while the daemon's process is not proven: the identity finding says
/// why, and the scope is unverified for that one reason.
pub(in crate::assess) fn identity_unproven(context: &Context<'_>) -> Finding {
    let why = "the control daemon's process is not proven (daemon-identity-unverified)";
    unverified_finding(
        context,
        Code::DaemonScopeUnverified,
        &what(&context.control_path()),
        why.to_owned(),
        super::PROVE,
    )
}

/// Why the scope is unknown when the daemon's process was not identified (`why`).
pub(in crate::assess) fn not_identified(why: &NotIdentified<'_>) -> String {
    format!(
        "the control daemon's process was not identified: {}",
        crate::message::served::not_identified(why)
    )
}

/// The unverified scope of the daemon at `path`: `why` it is unknown, and the `fix` that
/// follows from it.
pub(in crate::assess) fn unverified(
    context: &Context<'_>,
    path: &str,
    why: String,
    fix: Fix,
) -> Finding {
    unverified_finding(
        context,
        Code::DaemonScopeUnverified,
        &what(path),
        why,
        fix_text(fix),
    )
}

/// The finding for a GPU the daemon's `mask` leaves out (`detail` says what it selects).
pub(in crate::assess) fn outside(
    context: &Context<'_>,
    path: &str,
    mask: &str,
    served: &[GpuUuid],
) -> Finding {
    let detail = crate::message::served::excluded_detail(served);
    let gpu = context.gpu.to_string();
    let start = context.start();
    let found = format!(
        "the daemon's CUDA_VISIBLE_DEVICES={} does not include {gpu} ({detail})",
        repr(mask)
    );
    let fix = format!(
        "run both processes on a GPU the daemon serves, or start a daemon for {gpu} on its own CUDA_MPS_PIPE_DIRECTORY: {start}"
    );
    Finding::new(
        Code::GpuOutsideDaemonScope,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            &gpu,
            " through the control daemon at ",
            path,
            ": ",
            &found,
            ", so a client on that GPU sees no CUDA device. Either ",
            &fix,
        ]
        .concat(),
        found,
        fix,
    )
}

/// The finding for a client mask that names the GPU by an `index` the daemon, scoped to
/// `daemon_mask`, renumbers.
pub(in crate::assess) fn index_remap(
    context: &Context<'_>,
    path: &str,
    client_mask: Option<&OsText>,
    index: u32,
    daemon_mask: &str,
) -> Finding {
    let client = client_mask.map(OsText::to_string_lossy).unwrap_or_default();
    let found = format!(
        "CUDA_VISIBLE_DEVICES={} (index {index}) against a daemon scoped to CUDA_VISIBLE_DEVICES={}",
        repr(&client),
        repr(daemon_mask)
    );
    let fix = "name the GPU by UUID: devices=$(mps-preflight visibility) && export CUDA_VISIBLE_DEVICES=\"$devices\"".to_owned();
    Finding::new(
        Code::DaemonIndexRemap,
        context.words(),
        [
            context.words().mps(),
            " cannot use ",
            &found,
            " at ",
            path,
            ": the daemon renumbers the GPUs it serves from 0, so index ",
            &index.to_string(),
            " names a device that does not exist there (\"No CUDA GPUs are available\") or another GPU. Use `mps-preflight visibility` to ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}
