//! The server owner family: a daemon runs one server at a time, and a server of another user
//! makes this job's clients queue behind it, unless the daemon runs in multi-user mode
//! (docs/mps-daemon.md F17, T8). Decides only; the words are in `message/owner.rs`.

use super::{Context, Findings, Served, message};
use crate::served::{self, Owner, OwnerUnknown};

/// Every listed server runs as the user the request is judged for (`as_user`, else the probing
/// user), or the daemon is in multi-user mode.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let facts = context.facts;
    let pids = served::server_pids(facts.daemon_query.as_ref(), context.directory.as_bytes());
    if pids.is_empty() {
        return; // an idle daemon: no server to queue behind
    }
    let multiuser = served::daemon_multiuser(&context.daemon);
    if multiuser == Some(true) {
        return; // the evidence's daemon_multiuser says why
    }
    let Some(judged) = context.request.judged_for_uid(facts) else {
        let finding = message::owner::uid_not_recorded(context);
        served.unverified(context.request, findings, finding);
        return;
    };
    let owners = served::server_owners(facts, &pids);
    let others: Vec<(i64, u32)> = owners
        .iter()
        .filter_map(|(pid, owner)| match owner {
            Owner::Uid(uid) if *uid != judged => Some((*pid, *uid)),
            _ => None,
        })
        .collect();
    if !others.is_empty() {
        findings.push(|| message::owner::another_user(context, &others, judged, multiuser));
        return;
    }
    let unknown: Vec<(i64, OwnerUnknown)> = owners
        .into_iter()
        .filter_map(|(pid, owner)| match owner {
            Owner::Unknown(why) => Some((pid, why)),
            Owner::Uid(_) => None,
        })
        .collect();
    if !unknown.is_empty() {
        let finding = message::owner::owners_unknown(context, &unknown);
        served.unverified(context.request, findings, finding);
    }
}
