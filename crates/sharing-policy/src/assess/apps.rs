//! The compute processes holding the GPU (docs/mps-daemon.md §5g): with the GPU in
//! `Exclusive_Process` and no server started, a compute process already holding it keeps the
//! MPS server from starting. Judged only there; a v4 snapshot that did not record the query
//! is unverified, an older one (which never asked) is judged as before. Decides only; the
//! words are in `message/apps.rs`.

use super::{Context, Findings, Served, message};
use crate::compute_apps::{self, AppsRead, EXCLUSIVE_PROCESS};
use crate::served;

/// The number of compute processes found on the GPU (`Some(0)` when it is free), for the
/// evidence; `None` when the query was not needed or not read.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<usize> {
    if served.facts.compute_mode.as_deref() != Some(EXCLUSIVE_PROCESS)
        || !served::server_pids(
            context.facts.daemon_query.as_ref(),
            context.directory.as_bytes(),
        )
        .is_empty()
    {
        return None;
    }
    let read = match context.facts.compute_apps_query.as_ref() {
        Some(record) => compute_apps::read(record, context.gpu),
        // Only v4 asks; an older snapshot is judged as before.
        None if context.facts.schema != crate::SCHEMA => return None,
        None => AppsRead::Unknown(message::apps::query_not_recorded()),
    };
    match read {
        AppsRead::Free => Some(0),
        AppsRead::Held(apps) => {
            let count = apps.len();
            findings.push(|| message::apps::held(context, &apps));
            Some(count)
        }
        AppsRead::Unknown(why) => {
            let finding = message::apps::unverified(context, why);
            served.unverified(context.request, findings, finding);
            None
        }
    }
}
