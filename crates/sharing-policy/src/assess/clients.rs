//! What a killed run left behind (docs/mps-daemon.md §5c): the clients each listed server
//! names (`get_client_list <s>`), as `/proc` shows them. A dead or zombie client means the
//! server is in an undefined state that NVIDIA says needs a restart of the server and all its
//! clients: a rejection. Live clients are recorded, and reported as an advisory warning:
//! another job may share the server on purpose. Every listed client and the two to come must
//! fit the per-device client limit ([`crate::clients_fit`], docs/mps-daemon.md §5f).
//! Decides only; the words are in `message/clients.rs`.

use super::answers::{Answers, answer};
use super::{Context, Findings, Served, message};
use crate::message::session::answer_unread;
use crate::served::{DaemonProcess, Scope};
use crate::session;
use crate::{ClientFacts, Pid, ReadOnlyCommand, served};

/// What a listed client is, as `/proc` shows it.
enum Seen {
    Live,
    /// Dead or a zombie: how, for the message.
    Stale(Stale),
    /// Not known: why, as the message says it.
    Unknown(String),
}

/// How a stale client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stale {
    /// `/proc/<pid>` no longer exists.
    Gone,
    /// Its state is `Z`.
    Zombie,
    /// Its state is `X`.
    Dead,
}

/// The processes a validated request starts: the learner and the collector.
pub(super) const COMING: u32 = 2;

/// The live clients of the listed servers (`None`: no server listed, or a client list not
/// read) and the client limit checked (`None`: not every list read); a stale client or a
/// full server is a rejection, an unread list or client unverified.
pub(super) fn check(
    context: &Context<'_>,
    answers: &Answers<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> (Option<Vec<i64>>, Option<u32>) {
    let servers = served::server_pids(
        context.facts.daemon_query.as_ref(),
        context.directory.as_bytes(),
    );
    if servers.is_empty() {
        return (None, None);
    }
    let split = crate::daemon_identity::lock_split(context.facts.daemon_process.as_ref())
        .map(crate::message::daemon_identity::lock_split);
    let mut live: Vec<(Pid, Pid)> = Vec::new();
    let mut read_all = true;
    // Every client the lists name (live, stale or unknown), and whether every list was read.
    let (mut listed_count, mut lists_read) = (0_u32, true);
    for server in servers.into_iter().filter_map(Pid::new) {
        let listed = answer(answers, ReadOnlyCommand::GetClientList(server)).and_then(|lines| {
            session::client_pids(server, lines).map_err(|why| answer_unread(&why))
        });
        let clients = match listed {
            Ok(clients) => clients,
            Err(why) => {
                (read_all, lists_read) = (false, false);
                let finding = message::clients::list_unverified(
                    context,
                    server,
                    why,
                    answers.settings_unread(),
                );
                served.unverified(context.request, findings, finding);
                continue;
            }
        };
        listed_count =
            listed_count.saturating_add(u32::try_from(clients.len()).unwrap_or(u32::MAX));
        for client in clients {
            match seen(context, client, split.as_deref()) {
                Seen::Live => live.push((server, client)),
                Seen::Stale(how) => {
                    findings.push(|| message::clients::stale(context, server, client, how));
                    if findings.settled() {
                        return (None, None);
                    }
                }
                Seen::Unknown(why) => {
                    read_all = false;
                    let finding = message::clients::client_unverified(context, server, client, why);
                    served.unverified(context.request, findings, finding);
                }
            }
        }
    }
    // The judged GPU is a whole GPU (a MIG mask is refused before this walk), so the
    // whole device's limit applies.
    let mut limit = lists_read.then(|| crate::client_limit(None));
    if lists_read && let Err(over) = crate::clients_fit(listed_count, COMING, None) {
        // The lists do not say which GPU a client uses: the sum is this GPU's count only
        // when the daemon serves this GPU alone; otherwise the clients may be on its others.
        match daemon_gpus(context) {
            Some(1) => {
                findings.push(|| message::clients::limit_reached(context, listed_count, over));
                if findings.settled() {
                    return (None, Some(over));
                }
            }
            gpus => {
                limit = None;
                let finding = message::clients::limit_unverified(context, listed_count, over, gpus);
                served.unverified(context.request, findings, finding);
            }
        }
    }
    if !live.is_empty() {
        served.advise(message::clients::has_clients(context, &live));
    }
    let live = read_all.then(|| live.into_iter().map(|(_, client)| client.get()).collect());
    (live, limit)
}

/// How many GPUs the control daemon serves (the judged one among them): its mask's, or every
/// GPU of the host when it has none; `None` when the daemon or its scope is not known on a host
/// with several GPUs.
fn daemon_gpus(context: &Context<'_>) -> Option<usize> {
    let host_gpus = context.table.rows().len();
    if host_gpus == 1 {
        return Some(1);
    }
    let DaemonProcess::Found(daemon) = &context.daemon else {
        return None;
    };
    match served::scope(daemon, context.table, context.gpu) {
        Scope::Unscoped => Some(host_gpus),
        Scope::Covers { gpus, .. } => Some(gpus),
        Scope::Excludes { .. } | Scope::Unknown(_) => None,
    }
}

/// What `/proc` shows of `client`, as [`crate::HostFacts::listed_clients`] recorded it.
fn seen(context: &Context<'_>, client: Pid, split: Option<&str>) -> Seen {
    let Some(facts) = context
        .facts
        .listed_clients
        .as_deref()
        .and_then(|clients| clients.iter().find(|c| c.pid == client.get()))
    else {
        return Seen::Unknown(message::clients::not_observed(client));
    };
    judge(facts, split)
}

/// A recorded client: live, dead or a zombie, or unknown (unreadable, or absent while the
/// daemon runs in another PID namespace, where its PIDs need not exist in this one).
fn judge(client: &ClientFacts, split: Option<&str>) -> Seen {
    match (client.exists, client.state.as_deref()) {
        (Some(false), _) => match split {
            Some(detail) => Seen::Unknown(message::clients::not_in_namespace(client.pid, detail)),
            None => Seen::Stale(Stale::Gone),
        },
        (_, Some(state)) if state.starts_with('Z') => Seen::Stale(Stale::Zombie),
        (_, Some(state)) if state.starts_with('X') => Seen::Stale(Stale::Dead),
        (Some(true), Some(_)) => Seen::Live,
        _ => {
            // The errors of the files that tell the state, named in the message.
            let errors: Vec<(&str, &str)> = client
                .errors
                .iter()
                .filter(|(name, _)| matches!(name.as_str(), "entry" | "status"))
                .map(|(name, error)| (name.as_str(), error.as_str()))
                .collect();
            Seen::Unknown(message::clients::state_unread(client.pid, &errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(exists: Option<bool>, state: Option<&str>) -> ClientFacts {
        let mut client = ClientFacts::new(77);
        client.exists = exists;
        client.state = state.map(str::to_owned);
        client
    }

    #[test]
    fn dead_and_zombie_clients_are_stale_and_live_ones_live() {
        assert!(matches!(
            judge(&client(Some(false), None), None),
            Seen::Stale(_)
        ));
        assert!(matches!(
            judge(&client(Some(true), Some("Z (zombie)")), None),
            Seen::Stale(Stale::Zombie)
        ));
        assert!(matches!(
            judge(&client(Some(true), Some("S (sleeping)")), None),
            Seen::Live
        ));
        assert!(matches!(judge(&client(None, None), None), Seen::Unknown(_)));
        assert!(matches!(
            judge(
                &client(Some(false), None),
                Some("the lock's holder is not visible")
            ),
            Seen::Unknown(_)
        ));
    }
}
