//! Whether the judged user's MPS server can reach the pipe directory (docs/mps-daemon.md,
//! "The job's user can reach the pipe directory"; notes row 6): the server runs as the
//! client's UID, so a pipe directory under a 0700 parent passes a root probe while every
//! non-root client's server crash-loops with EACCES. Judged for `--as-user`, else the caller,
//! with POSIX rules ([`crate::pipe_reach`]). What cannot be told is unverified, never a pass; a
//! v4 snapshot that did not record it is unverified too. A snapshot from before v4 never
//! recorded it and is judged as it was then, as for the other v4 checks. Decides only; the
//! words are in `message/reach.rs`.

use super::{Context, Findings, Served, message};
use crate::Reach;

/// Judges the recorded facts for the request's user; returns how the reach was proven (the
/// evidence's `pipe_access`), or `None` when it was not.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<&'static str> {
    if context.facts.pipe_access.is_none() && context.facts.schema != crate::SCHEMA {
        return None;
    }
    let Some(uid) = context.request.judged_for_uid(context.facts) else {
        let finding = message::reach::user_unknown(context);
        served.unverified(context.request, findings, finding);
        return None;
    };
    let why = match &context.facts.pipe_access {
        Some(facts) if uid != 0 && !of_this_directory(context, facts) => {
            message::reach::of_another_directory()
        }
        Some(facts) => match crate::pipe_reach(facts, uid) {
            Reach::Root => return Some("root"),
            Reach::Granted => return Some("modes"),
            Reach::Blocked(blocked) => {
                findings.push(|| message::reach::unreachable(context, uid, &blocked));
                return None;
            }
            Reach::Unverified(why) => why.to_string(),
        },
        None if uid == 0 => return Some("root"),
        None => message::reach::modes_unrecorded(&context.facts.schema),
    };
    let finding = message::reach::unverified(context, uid, why);
    served.unverified(context.request, findings, finding);
    None
}

/// Whether `facts` were recorded for the effective pipe directory: its components, and
/// `control` and `log` in it.
fn of_this_directory(context: &Context<'_>, facts: &crate::PipeAccessFacts) -> bool {
    let prefixes = crate::path_prefixes(context.directory);
    facts.pipe_path.len() == prefixes.len()
        && facts
            .pipe_path
            .iter()
            .zip(&prefixes)
            .all(|(entry, prefix)| entry.path == *prefix)
        && facts.control.path == crate::facts::join(context.directory, crate::CONTROL_PIPE_NAME)
        && facts.log_fifo.path == crate::facts::join(context.directory, crate::LOG_FIFO_NAME)
}
