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
    let why = match context.facts.compute_apps_query.as_ref() {
        Some(record) => match compute_apps::read(record, context.gpu) {
            AppsRead::Free => return Some(0),
            AppsRead::Held(apps) => {
                let count = apps.len();
                findings.push(|| message::apps::held(context, &apps));
                return Some(count);
            }
            AppsRead::Unknown(why) => crate::message::compute_apps::apps_unknown(&why),
        },
        // Only v4 asks; an older snapshot is judged as before.
        None if context.facts.schema != crate::SCHEMA => return None,
        None => message::apps::query_not_recorded(),
    };
    let finding = message::apps::unverified(context, why);
    served.unverified(context.request, findings, finding);
    None
}
