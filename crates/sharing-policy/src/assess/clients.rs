//! What a killed run left behind (docs/mps-daemon.md §5c): the clients each listed server
//! names (`get_client_list <s>`), as `/proc` shows them. A dead or zombie client means the
//! server is in an undefined state that NVIDIA says needs a restart of the server and all its
//! clients: a rejection. Live clients are recorded, and reported as an advisory warning:
//! another job may share the server on purpose. Every listed client and the two to come must
//! fit the per-device client limit ([`crate::clients_fit`], docs/mps-daemon.md §5f).

use super::answers::{Answers, CAPTURE_AGAIN, answer};
use super::{Context, Findings, Served};
use crate::session;
use crate::{ClientFacts, Code, Finding, Pid, ReadOnlyCommand, served};

/// How to read the clients again.
const VERIFY: &str = "run the probe as root in the daemon's PID namespace, so that the daemon answers get_client_list and each client's /proc/<pid> is readable (with --require-verified this is a rejection)";

/// What a listed client is, as `/proc` shows it.
enum Seen {
    Live,
    /// Dead or a zombie: how, for the message.
    Stale(&'static str),
    Unknown(String),
}

/// The processes a validated request starts: the learner and the collector.
const COMING: u32 = 2;

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
    let split = crate::daemon_identity::lock_split(context.facts.daemon_process.as_ref());
    let mut live: Vec<(Pid, Pid)> = Vec::new();
    let mut read_all = true;
    // Every client the lists name (live, stale or unknown), and whether every list was read.
    let (mut listed_count, mut lists_read) = (0_u32, true);
    for server in servers.into_iter().filter_map(Pid::new) {
        let listed = answer(answers, ReadOnlyCommand::GetClientList(server))
            .and_then(|lines| session::client_pids(server, lines));
        let clients = match listed {
            Ok(clients) => clients,
            Err(why) => {
                (read_all, lists_read) = (false, false);
                let what = format!("the clients of MPS server {server}");
                // A session that was never recorded or is unreadable is asked again.
                let fix = if answers.settings_unread() {
                    CAPTURE_AGAIN
                } else {
                    VERIFY
                };
                let finding = super::unverified_finding(
                    context,
                    Code::ServerClientsUnverified,
                    &what,
                    why,
                    fix,
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
                    findings.push(|| stale(context, server, client, how));
                    if findings.settled() {
                        return (None, None);
                    }
                }
                Seen::Unknown(why) => {
                    read_all = false;
                    let what = format!("the clients of MPS server {server} (client {client})");
                    let finding = super::unverified_finding(
                        context,
                        Code::ServerClientsUnverified,
                        &what,
                        why,
                        VERIFY,
                    );
                    served.unverified(context.request, findings, finding);
                }
            }
        }
    }
    // The judged GPU is a whole GPU (a MIG mask is refused before this walk), so the
    // whole device's limit applies.
    let limit = lists_read.then(|| crate::client_limit(None));
    if lists_read && let Err(limit) = crate::clients_fit(listed_count, COMING, None) {
        findings.push(|| limit_reached(context, listed_count, limit));
        if findings.settled() {
            return (None, Some(limit));
        }
    }
    if !live.is_empty() {
        served.advise(has_clients(context, &live));
    }
    let live = read_all.then(|| live.into_iter().map(|(_, client)| client.get()).collect());
    (live, limit)
}

fn limit_reached(context: &Context<'_>, listed: u32, limit: u32) -> Finding {
    let found = format!(
        "the listed MPS servers already serve {listed} client(s), and the {COMING} this job starts would make {}, over the limit of {limit} clients per device",
        listed.saturating_add(COMING)
    );
    let fix = "wait until other jobs' clients on this GPU exit, or run this job on another GPU; also check that every DataLoader or environment worker that touches CUDA is needed, since each is a client".to_owned();
    Finding::new(
        Code::ServerClientLimitReached,
        context.words(),
        [
            context.words().mps(),
            " cannot add two clients to the MPS server at ",
            &context.control_path(),
            ": ",
            &found,
            ". A client beyond the limit fails at context creation. To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}

/// What `/proc` shows of `client`, as [`crate::HostFacts::listed_clients`] recorded it.
fn seen(context: &Context<'_>, client: Pid, split: Option<&str>) -> Seen {
    let Some(facts) = context
        .facts
        .listed_clients
        .as_deref()
        .and_then(|clients| clients.iter().find(|c| c.pid == client.get()))
    else {
        return Seen::Unknown(format!(
            "/proc/{client} was not observed (a snapshot taken before the probe read listed clients, or more than {} were listed)",
            crate::MAX_LISTED_CLIENTS
        ));
    };
    judge(facts, split)
}

/// A recorded client: live, dead or a zombie, or unknown (unreadable, or absent while the
/// daemon runs in another PID namespace, where its PIDs need not exist in this one).
fn judge(client: &ClientFacts, split: Option<&str>) -> Seen {
    match (client.exists, client.state.as_deref()) {
        (Some(false), _) => match split {
            Some(detail) => Seen::Unknown(format!(
                "PID {} is not running in this PID namespace, and {detail}",
                client.pid
            )),
            None => Seen::Stale("no longer exists"),
        },
        (_, Some(state)) if state.starts_with('Z') => Seen::Stale("is a zombie"),
        (_, Some(state)) if state.starts_with('X') => Seen::Stale("is dead"),
        (Some(true), Some(_)) => Seen::Live,
        _ => {
            let errors: Vec<String> = client
                .errors
                .iter()
                .filter(|(name, _)| matches!(name.as_str(), "entry" | "status"))
                .map(|(name, error)| format!("{name}: {error}"))
                .collect();
            Seen::Unknown(if errors.is_empty() {
                format!("/proc/{}/status has no State: line", client.pid)
            } else {
                format!(
                    "/proc/{} could not be read ({})",
                    client.pid,
                    errors.join("; ")
                )
            })
        }
    }
}

fn stale(context: &Context<'_>, server: Pid, client: Pid, how: &str) -> Finding {
    let found = format!("MPS server {server} lists client {client}, which {how}");
    let fix = format!(
        "have the daemon's owner restart that server with all its clients: stop the job that still uses it, then echo shutdown_server {server} -f | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control (the daemon starts a new server for the next client); then retry",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    Finding::new(
        Code::StaleServerClient,
        context.words(),
        [
            context.words().mps(),
            " would join an MPS server left in an undefined state at ",
            &context.control_path(),
            ": ",
            &found,
            ". A client killed without synchronising its GPU work leaves the server in an undefined state, and NVIDIA says the server and all its clients must be restarted; a new client may hang at CUDA init. To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}

/// The advisory warning for live clients.
fn has_clients(context: &Context<'_>, live: &[(Pid, Pid)]) -> Finding {
    let listed = live
        .iter()
        .map(|(server, client)| format!("client {client} of MPS server {server}"))
        .collect::<Vec<_>>()
        .join(", ");
    let found = format!("{} live client(s): {listed}", live.len());
    let fix = "nothing, if another job shares this GPU on purpose; otherwise find and stop the job that runs those processes before this one starts".to_owned();
    Finding::new(
        Code::ServerHasClients,
        context.words(),
        [
            context.words().mps(),
            " found that the MPS server at ",
            &context.control_path(),
            " already serves ",
            &found,
            ". This job will share the GPU with them. If that is not intended, ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
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
            Seen::Stale("is a zombie")
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
