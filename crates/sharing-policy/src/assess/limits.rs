//! What the processes will be served with (docs/mps-daemon.md §5b): the
//! state of the server they would join (`FAULT` rejects every new client), and the daemon's
//! defaults against the request's stated minimums (active-thread percentage, pinned memory).
//! Decides only; the words are in `message/limits.rs`.

use super::answers::{Answers, answer, daemon_ordinal, settings};
use super::{Context, Findings, Served, message, server_limits};
use crate::message::session::answer_unread;
use crate::session::{self, AnswerUnread, ServerState};
use crate::{Percentage, Pid, ReadOnlyCommand, served};

/// What these checks add to the evidence.
#[derive(Debug, Default)]
pub(super) struct LimitsEvidence {
    /// The daemon's default pinned-memory limit for the GPU, as printed (`None`: no limit, or
    /// not read).
    pub(super) pinned_mem_limit: Option<String>,
    /// The first listed server's state, when read.
    pub(super) server_status: Option<String>,
    /// The live clients of the listed servers (`None`: no server, or not all read).
    pub(super) client_pids: Option<Vec<i64>>,
    /// The per-device client limit the listed clients were checked against, when every
    /// client list was read.
    pub(super) client_limit: Option<u32>,
    /// The lowest active-thread percentage a listed server applies, when every one was read.
    pub(super) server_percentage: Option<Percentage>,
    /// The lowest pinned-memory limit for the GPU a listed server applies, as printed.
    pub(super) server_pinned_mem_limit: Option<String>,
}

/// The server state, then the stated minimums.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> LimitsEvidence {
    let answers = settings(context);
    let mut evidence = LimitsEvidence {
        server_status: servers(context, &answers, served, findings),
        ..LimitsEvidence::default()
    };
    if findings.settled() {
        return evidence;
    }
    (evidence.client_pids, evidence.client_limit) =
        super::clients::check(context, &answers, served, findings);
    if findings.settled() {
        return evidence;
    }
    let running = server_limits::running(context, &answers);
    evidence.server_percentage = running
        .percentage
        .as_ref()
        .ok()
        .copied()
        .flatten()
        .map(|(_, p)| p);
    // The daemon's defaults (what a server started for this job gets), then what a running
    // server applies (what this job gets while it runs): the minimum must hold for both.
    percentage(context, findings);
    if findings.settled() {
        return evidence;
    }
    server_limits::check_percentage(context, &running, served, findings);
    if findings.settled() {
        return evidence;
    }
    evidence.pinned_mem_limit = pinned(context, &answers, served, findings);
    if findings.settled() {
        return evidence;
    }
    evidence.server_pinned_mem_limit =
        server_limits::check_pinned(context, &answers, &running, served, findings);
    evidence
}

/// Every listed server's state: `FAULT` is a rejection, an unread state unverified. Returns
/// the first server's state for the evidence.
fn servers(
    context: &Context<'_>,
    answers: &Answers<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<String> {
    let listed = served::server_pids(
        context.facts.daemon_query.as_ref(),
        context.directory.as_bytes(),
    );
    let mut first = None;
    for pid in listed.into_iter().filter_map(Pid::new) {
        let state = answer(answers, ReadOnlyCommand::GetServerStatus(pid))
            .map(|lines| session::server_state(pid, lines));
        let (why, before_550) = match state {
            Ok(Ok(state)) => {
                first.get_or_insert(state.as_str().to_owned());
                if state == ServerState::Fault {
                    findings.push(|| message::limits::fault(context, pid));
                }
                continue;
            }
            // A driver without the command (before 550) cannot be asked again to any effect.
            Ok(Err(unread)) => (
                answer_unread(&unread),
                matches!(unread, AnswerUnread::UnknownCommand(_)),
            ),
            Err(why) => (why, false),
        };
        let finding = message::limits::status_unverified(context, pid, why, before_550);
        served.unverified(context.request, findings, finding);
    }
    first
}

/// The daemon's default active-thread percentage meets the stated minimum.
fn percentage(context: &Context<'_>, findings: &mut Findings) {
    let Some(wanted) = context.request.min_active_thread_percentage else {
        return;
    };
    let Some(found) = mps_protocol::default_percentage(context.facts.daemon_query.as_ref()) else {
        // A live answer whose liveness line is not `%.1f` (every daemon prints `%.1f`): the
        // minimum cannot be compared, and the answer is not a known daemon's.
        findings.push(|| message::limits::percentage_unrecognized(context));
        return;
    };
    if found >= wanted {
        return;
    }
    findings.push(|| message::limits::below_percentage(context, found, wanted));
}

/// The daemon's default pinned-memory limit for the GPU, as printed, and whether it meets the
/// stated minimum (no limit meets any). While a server is listed, the minimum is judged
/// against that server's own limit too ([`server_limits::check_pinned`]).
fn pinned(
    context: &Context<'_>,
    answers: &Answers<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<String> {
    let read = daemon_ordinal(context).and_then(|ordinal| {
        let command = ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(ordinal);
        answer(answers, command).and_then(|lines| {
            session::pinned_limit(ordinal, lines).map_err(|why| answer_unread(&why))
        })
    });
    let wanted = context.request.min_pinned_mem;
    match (read, wanted) {
        // No limit set for that device, or unread without a minimum to compare.
        (Ok(None), _) | (Err(_), None) => None,
        (Ok(Some((found, raw))), Some(wanted)) if found < wanted => {
            findings.push(|| message::limits::below_pinned(context, &raw, wanted));
            Some(raw)
        }
        (Ok(Some((_, raw))), _) => Some(raw),
        (Err(why), Some(_)) => {
            let finding = message::limits::pinned_unverified(context, why);
            served.unverified(context.request, findings, finding);
            None
        }
    }
}
