//! The daemon scope family: the `CUDA_VISIBLE_DEVICES` the daemon started with defines the GPUs
//! it serves, renumbered from 0 (docs/mps-daemon.md F5, T5). Decides only; the words are in
//! `message/scope.rs`.

use super::{Context, Findings, Served, message};
use crate::daemon_identity::NotByLock;
use crate::proc_text::{FileUnread, says_process_gone};
use crate::served::{self, DaemonProcess, NotIdentified, ScanFound, Scope, ScopeUnknown};

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

/// The unverified scope of the daemon at `path`, for `why` (the fix follows from it, and from
/// whether a recorded error says a process was `gone` while it was read).
fn unverified(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
    path: &str,
    identified: bool,
    why: String,
    gone: bool,
) {
    let fix = verify_fix(context, identified, gone);
    let finding = message::scope::unverified(context, path, why, fix);
    served.unverified(context.request, findings, finding);
}

/// Whether an OS error recorded in why the daemon is not identified says a process was gone
/// (`ENOENT`, `ESRCH`): a `/proc` that could not be listed, a daemon whose environment or
/// status vanished while it was read.
fn gone_unidentified(why: &NotIdentified<'_>) -> bool {
    match why {
        NotIdentified::NotByLock(NotByLock::StatusUnread(unread)) => unread.process_gone(),
        NotIdentified::Scan {
            search,
            found: ScanFound::None,
        } => search.error.as_deref().is_some_and(says_process_gone),
        NotIdentified::Scan {
            found: ScanFound::Unreadable(daemons),
            ..
        } => daemons
            .iter()
            .any(|daemon| FileUnread::of(daemon, "environ").process_gone()),
        _ => false,
    }
}

/// The fix for an unverified scope that follows from why: "run as root" only for a caller that
/// is not (or not known to be) root, when no process vanished (`gone`).
fn verify_fix(context: &Context<'_>, identified: bool, gone: bool) -> Fix {
    if context.facts.daemon_process.is_none() {
        return Fix::Recapture;
    }
    if gone {
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
            let gone = gone_unidentified(why);
            let why = message::scope::not_identified(why);
            unverified(context, served, findings, &path, identified, why, gone);
            return;
        }
    };
    let daemon_mask = match scope {
        Scope::Unscoped => return,
        Scope::Unknown(why) => {
            let gone = matches!(&why, ScopeUnknown::EnvironUnread(unread) if unread.process_gone());
            let why = crate::message::served::scope_unknown(&why);
            unverified(context, served, findings, &path, identified, why, gone);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DaemonSearch, DaemonSearchMethod, OsText, ProcessFacts};

    fn none_found(search: &DaemonSearch) -> NotIdentified<'_> {
        NotIdentified::Scan {
            search,
            found: ScanFound::None,
        }
    }

    #[test]
    fn a_scan_that_finds_a_daemon_gone_says_so_and_a_denied_read_does_not() {
        let mut search = DaemonSearch {
            proc_root: OsText::from("/proc"),
            method: DaemonSearchMethod::ProcScan,
            scanned: 0,
            limit: 4096,
            stopped: None,
            error: Some("No such file or directory (os error 2)".to_owned()),
            processes: vec![],
            lock: None,
        };
        assert!(gone_unidentified(&none_found(&search)));
        search.error = Some("Permission denied (os error 13)".to_owned());
        assert!(!gone_unidentified(&none_found(&search)));
        let mut daemon = ProcessFacts::new(4400);
        daemon.errors.insert(
            "environ".to_owned(),
            "No such process (os error 3)".to_owned(),
        );
        let unreadable = NotIdentified::Scan {
            search: &search,
            found: ScanFound::Unreadable(vec![&daemon]),
        };
        assert!(gone_unidentified(&unreadable));
        assert!(!gone_unidentified(&NotIdentified::NotObserved));
    }
}
