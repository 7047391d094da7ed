//! The daemon scope family: the `CUDA_VISIBLE_DEVICES` the daemon started with defines the GPUs
//! it serves, renumbered from 0 (docs/mps-daemon.md F5, T5). Decides only; the words are in
//! `message/scope.rs`.

use super::{Context, Findings, Served, message};
use crate::served::{self, DaemonProcess, Scope};

/// The fix for an unverified scope, as the message layer words it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fix {
    /// The snapshot predates the daemon's process observation (v1).
    Recapture,
    /// The daemon's process exited while it was read.
    DaemonGone,
    /// The caller is root with `CAP_SYS_PTRACE`, and /proc still hides the environment.
    HiddenDespitePtrace,
    /// The caller is root, and its effective capabilities lack `CAP_SYS_PTRACE`.
    MissingPtrace,
    /// The caller is root, its capabilities unread, and /proc hides the environment.
    HiddenFromRoot,
    /// The caller is root, and the daemon's process was not identified.
    FindDaemon,
    /// The caller is not (or not known to be) root.
    Verify,
}

/// The unverified scope of the daemon at `path`, for `why` (the fix follows from it).
fn unverified(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
    path: &str,
    identified: bool,
    why: String,
) {
    let fix = verify_fix(context, identified, &why);
    let finding = message::scope::unverified(context, path, why, fix);
    served.unverified(context.request, findings, finding);
}

/// The fix for an unverified scope that follows from why: "run as root" only for a caller that
/// is not (or not known to be) root, when no process vanished.
fn verify_fix(context: &Context<'_>, identified: bool, why: &str) -> Fix {
    if context.facts.daemon_process.is_none() {
        return Fix::Recapture;
    }
    if why.contains("(os error 2)") || why.contains("(os error 3)") {
        return Fix::DaemonGone;
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
            Some(true) => Fix::HiddenDespitePtrace,
            Some(false) => Fix::MissingPtrace,
            None => Fix::HiddenFromRoot,
        },
        (true, false) => Fix::FindDaemon,
        (false, _) => Fix::Verify,
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
        let finding = message::scope::identity_unproven(context);
        served.unverified(context.request, findings, finding);
        return;
    }
    let path = context.control_path();
    let scope = match &context.daemon {
        DaemonProcess::Found(daemon) => served::scope(daemon, context.table, context.gpu),
        DaemonProcess::Unknown(why) => {
            let why = message::scope::not_identified(why);
            unverified(context, served, findings, &path, identified, why);
            return;
        }
    };
    let daemon_mask = match scope {
        Scope::Unscoped => return,
        Scope::Unknown(why) => {
            let why = crate::message::served::scope_unknown(&why);
            unverified(context, served, findings, &path, identified, why);
            return;
        }
        Scope::Excludes { mask, served: gpus } => {
            findings.push(|| message::scope::outside(context, &path, &mask, &gpus));
            return;
        }
        Scope::Covers { mask, .. } => mask,
    };
    let client_mask = context.facts.env.cuda_visible_devices.as_ref();
    if let Some(index) = served::renumbered_index(client_mask) {
        findings
            .push(|| message::scope::index_remap(context, &path, client_mask, index, &daemon_mask));
    }
}
