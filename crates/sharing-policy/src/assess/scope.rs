//! The daemon scope family: the `CUDA_VISIBLE_DEVICES` the daemon started with defines the GPUs
//! it serves, renumbered from 0 (docs/mps-daemon.md F5, T5).

use super::{Context, Findings, Served};
use crate::served::{self, DaemonProcess, Scope};
use crate::text::repr;
use crate::{Code, Finding};

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

/// The fix for an unverified scope that follows from why: "run as root" only for a caller that
/// is not (or not known to be) root, when no process vanished.
fn verify_fix(context: &Context<'_>, identified: bool, why: &str) -> &'static str {
    if context.facts.daemon_process.is_none() {
        return RECAPTURE;
    }
    if why.contains("(os error 2)") || why.contains("(os error 3)") {
        return DAEMON_GONE;
    }
    let root = context
        .facts
        .caller
        .as_ref()
        .is_some_and(|caller| caller.euid == 0);
    let ptrace = context
        .facts
        .caller
        .as_ref()
        .and_then(|caller| caller.cap_eff)
        .map(|caps| caps & (1 << crate::CAP_SYS_PTRACE_BIT) != 0);
    match (root, identified) {
        (true, true) => match ptrace {
            Some(true) => HIDDEN_DESPITE_PTRACE,
            Some(false) => MISSING_PTRACE,
            None => HIDDEN_FROM_ROOT,
        },
        (true, false) => FIND_DAEMON,
        (false, _) => VERIFY,
    }
}

/// The GPU is in the daemon's scope, and a client index is not renumbered by it.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let identified = matches!(context.daemon, DaemonProcess::Found(_));
    let locked = context
        .facts
        .daemon_process
        .as_ref()
        .is_some_and(|search| search.lock.is_some());
    if let (DaemonProcess::Unknown(_), true) = (&context.daemon, locked) {
        // The identity finding says why; the scope is unverified for that one reason.
        let what = format!(
            "which GPUs the control daemon at {} serves",
            context.control_path()
        );
        let why = "the control daemon's process is not proven (daemon-identity-unverified)";
        let finding = super::unverified_finding(
            context,
            Code::DaemonScopeUnverified,
            &what,
            why.to_owned(),
            super::daemon_identity::PROVE,
        );
        served.unverified(context.request, findings, finding);
        return;
    }
    let scope = match &context.daemon {
        DaemonProcess::Found(daemon) => served::scope(daemon, context.table, context.gpu),
        DaemonProcess::Unknown(why) => Scope::Unknown(format!(
            "the control daemon's process was not identified: {why}"
        )),
    };
    let path = context.control_path();
    let daemon_mask = match scope {
        Scope::Unscoped => return,
        Scope::Unknown(why) => {
            let fix = verify_fix(context, identified, &why);
            let what = format!("which GPUs the control daemon at {path} serves");
            let finding =
                super::unverified_finding(context, Code::DaemonScopeUnverified, &what, why, fix);
            served.unverified(context.request, findings, finding);
            return;
        }
        Scope::Excludes { mask, detail } => {
            findings.push(|| outside(context, &path, &mask, &detail));
            return;
        }
        Scope::Covers(mask) => mask,
    };
    let client_mask = context.facts.env.cuda_visible_devices.as_ref();
    if let Some(index) = served::renumbered_index(client_mask) {
        findings.push(|| {
            let client = client_mask.map(crate::OsText::to_string_lossy).unwrap_or_default();
            let found = format!(
                "CUDA_VISIBLE_DEVICES={} (index {index}) against a daemon scoped to CUDA_VISIBLE_DEVICES={}",
                repr(&client),
                repr(&daemon_mask)
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
                    &path,
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
        });
    }
}

/// The finding for a GPU the daemon's mask leaves out.
fn outside(context: &Context<'_>, path: &str, mask: &str, detail: &str) -> Finding {
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
