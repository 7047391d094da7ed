//! The limits a running server applies (docs/mps-daemon.md §5b): the daemon's defaults apply
//! only to the next server ("If there is already a server spawned, this command will only
//! affect the next server"), so while a server is listed the stated minimums are judged
//! against what it applies: `get_active_thread_percentage <s>` and
//! `get_device_pinned_mem_limit <s> <dev>`. Decides only; the words are in
//! `message/server_limits.rs`.

use super::answers::{Answers, answer, daemon_ordinal};
use super::{Context, Findings, Served, message};
use crate::message::session::answer_unread;
use crate::{MemSize, Percentage};
use crate::{Pid, ReadOnlyCommand, served, session};

/// The listed servers and the lowest active-thread percentage they apply.
pub(super) struct Running {
    servers: Vec<Pid>,
    /// `Ok(None)`: no server listed; `Ok(Some((pid, p)))`: the lowest, and whose; `Err`: one
    /// could not be read.
    pub(super) percentage: Result<Option<(Pid, Percentage)>, String>,
}

/// The listed servers' own active-thread percentages, read from the settings session.
pub(super) fn running(context: &Context<'_>, answers: &Answers<'_>) -> Running {
    let servers: Vec<Pid> = served::server_pids(
        context.facts.daemon_query.as_ref(),
        context.directory.as_bytes(),
    )
    .into_iter()
    .filter_map(Pid::new)
    .collect();
    let mut lowest: Option<(Pid, Percentage)> = None;
    for &pid in &servers {
        let read =
            answer(answers, ReadOnlyCommand::GetActiveThreadPercentage(pid)).and_then(|lines| {
                session::server_percentage(pid, lines).map_err(|why| answer_unread(&why))
            });
        match read {
            Ok(found) => {
                if lowest.is_none_or(|(_, low)| found < low) {
                    lowest = Some((pid, found));
                }
            }
            Err(why) => {
                return Running {
                    servers,
                    percentage: Err(why),
                };
            }
        }
    }
    Running {
        servers,
        percentage: Ok(lowest),
    }
}

/// The stated minimum active-thread percentage against what the running servers apply.
pub(super) fn check_percentage(
    context: &Context<'_>,
    running: &Running,
    served: &mut Served,
    findings: &mut Findings,
) {
    let Some(wanted) = context.request.min_active_thread_percentage else {
        return;
    };
    match &running.percentage {
        Ok(Some((pid, found))) if *found < wanted => {
            let default = mps_protocol::default_percentage(context.facts.daemon_query.as_ref());
            findings.push(|| {
                message::server_limits::percentage_below(context, *pid, *found, wanted, default)
            });
        }
        Ok(_) => {}
        Err(why) => {
            let finding = message::server_limits::percentage_unverified(context, why.clone());
            served.unverified(context.request, findings, finding);
        }
    }
}

/// The lowest pinned-memory limit for the GPU the running servers apply, as printed (`None`:
/// no server, none set, or not read), and whether it meets the stated minimum.
pub(super) fn check_pinned(
    context: &Context<'_>,
    answers: &Answers<'_>,
    running: &Running,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<String> {
    if running.servers.is_empty() {
        return None;
    }
    let ordinal = daemon_ordinal(context);
    let read = ordinal.clone().and_then(|ordinal| {
        let mut lowest: Option<(Pid, MemSize, String)> = None;
        for &pid in &running.servers {
            let command = ReadOnlyCommand::GetDevicePinnedMemLimit(pid, ordinal);
            let limit = answer(answers, command).and_then(|lines| {
                session::server_pinned_limit(pid, ordinal, lines).map_err(|why| answer_unread(&why))
            })?;
            if let Some((size, raw)) = limit
                && lowest.as_ref().is_none_or(|(_, low, _)| size < *low)
            {
                lowest = Some((pid, size, raw));
            }
        }
        Ok(lowest)
    });
    let wanted = context.request.min_pinned_mem;
    match (read, wanted) {
        (Ok(lowest), Some(wanted)) => {
            let (pid, size, raw) = lowest?;
            if size < wanted {
                let ordinal = ordinal.as_ref().map_or(0, |o| *o);
                findings.push(|| {
                    message::server_limits::pinned_below(context, pid, &raw, ordinal, wanted)
                });
            }
            Some(raw)
        }
        (Ok(lowest), None) => lowest.map(|(_, _, raw)| raw),
        (Err(_), None) => None,
        (Err(why), Some(_)) => {
            let finding = message::server_limits::pinned_unverified(context, why);
            served.unverified(context.request, findings, finding);
            None
        }
    }
}
