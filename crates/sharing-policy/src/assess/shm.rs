//! The `/dev/shm` family: a client and its MPS server exchange memory through `/dev/shm`, so
//! the probing process must see the same filesystem as the control daemon (whose servers
//! inherit its mounts), and, when the request states a minimum (`--min-shm`), it must have
//! that much room. A v4 snapshot without `/dev/shm` facts is unverified; an older one
//! (recorded before this check) is not judged here. Decides only; the words are in
//! `message/shm.rs`.

use super::{Context, Findings, Served, message};
use crate::{MemSize, ShmView};

/// What this check adds to the evidence: the caller's free and total bytes.
#[derive(Debug, Default)]
pub(super) struct ShmEvidence {
    pub(super) free_bytes: Option<u64>,
    pub(super) total_bytes: Option<u64>,
}

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
            let finding = message::shm::unrecorded(context);
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
            findings
                .push(|| message::shm::not_shared(context, &shm.caller, daemon, shm.daemon_pid));
            return evidence;
        }
        Err(why) => {
            let finding = message::shm::not_compared(context, why);
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
    let identity = |view: &ShmView| {
        view.identity()
            .ok_or_else(|| message::shm::unreadable(view))
    };
    let Some(daemon) = daemon else {
        return Err(message::shm::daemon_view_unrecorded());
    };
    let mine = identity(caller)?;
    let theirs = identity(daemon)?;
    Ok(mine == theirs)
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
        let finding = message::shm::free_space_unread(context, caller, wanted);
        served.unverified(context.request, findings, finding);
        return;
    };
    if free >= wanted_bytes {
        return;
    }
    findings.push(|| message::shm::below_requirement(context, caller, free, wanted));
}
