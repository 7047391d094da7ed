//! The clients family's words: a client list or a client that could not be read, a stale
//! client, a full server, and the live clients another job may share the GPU with.

use super::CAPTURE_AGAIN;
use super::unverified_finding;
use crate::assess::Context;
use crate::assess::clients::{COMING, Stale};
use crate::{Code, Finding, Pid};

/// How to read the clients again.
const VERIFY: &str = "run the probe as root in the daemon's PID namespace, so that the daemon answers get_client_list and each client's /proc/<pid> is readable (with --require-verified this is a rejection)";

/// The unverified finding for a client list of `server` that could not be read; a session
/// that was never recorded or is unreadable (`settings_unread`) is asked again.
pub(in crate::assess) fn list_unverified(
    context: &Context<'_>,
    server: Pid,
    why: String,
    settings_unread: bool,
) -> Finding {
    let what = format!("the clients of MPS server {server}");
    let fix = if settings_unread {
        CAPTURE_AGAIN
    } else {
        VERIFY
    };
    unverified_finding(context, Code::ServerClientsUnverified, &what, why, fix)
}

/// The unverified finding for a listed `client` of `server` whose state `/proc` did not show.
pub(in crate::assess) fn client_unverified(
    context: &Context<'_>,
    server: Pid,
    client: Pid,
    why: String,
) -> Finding {
    let what = format!("the clients of MPS server {server} (client {client})");
    unverified_finding(context, Code::ServerClientsUnverified, &what, why, VERIFY)
}

/// Why a listed `client` is unknown when the snapshot holds no observation of it.
pub(in crate::assess) fn not_observed(client: Pid) -> String {
    format!(
        "/proc/{client} was not observed (a snapshot taken before the probe read listed clients, or more than {} were listed)",
        crate::MAX_LISTED_CLIENTS
    )
}

/// Why a client absent from this PID namespace is unknown while the daemon runs in another
/// one (`detail` says how that split was seen).
pub(in crate::assess) fn not_in_namespace(pid: i64, detail: &str) -> String {
    format!("PID {pid} is not running in this PID namespace, and {detail}")
}

/// Why a client whose `/proc/<pid>/status` shows no state is unknown: the `errors` of its
/// entry and status files (name, error), or none when the file was read without a `State:`
/// line.
pub(in crate::assess) fn state_unread(pid: i64, errors: &[(&str, &str)]) -> String {
    if errors.is_empty() {
        format!("/proc/{pid}/status has no State: line")
    } else {
        let errors: Vec<String> = errors
            .iter()
            .map(|(name, error)| format!("{name}: {error}"))
            .collect();
        format!("/proc/{pid} could not be read ({})", errors.join("; "))
    }
}

/// The rejection for the servers' `listed` clients plus the ones this job starts going over
/// `limit` clients per device.
pub(in crate::assess) fn limit_reached(context: &Context<'_>, listed: u32, limit: u32) -> Finding {
    let found = format!(
        "the listed MPS servers already serve {listed} client(s), and the {COMING} this job starts would make {}, over the limit of {limit} clients per device",
        listed.saturating_add(COMING)
    );
    let fix = "wait until other jobs' clients on this GPU exit, or run this job on another GPU; also check that every DataLoader or environment worker that touches CUDA is needed, since each is a client".to_owned();
    let path = context.control_path();
    let subject = [" cannot add two clients to the MPS server at ", &path, ": "];
    let effect = ". A client beyond the limit fails at context creation";
    super::with_fix(
        context,
        Code::ServerClientLimitReached,
        &subject,
        found,
        effect,
        fix,
    )
}

/// The unverified finding for listed clients over the per-device `limit` on a daemon that
/// serves `gpus` GPUs (`None`: its scope is not known): they may not be on this one.
pub(in crate::assess) fn limit_unverified(
    context: &Context<'_>,
    listed: u32,
    limit: u32,
    gpus: Option<usize>,
) -> Finding {
    let gpus = gpus.map_or_else(
        || "the GPUs the control daemon serves (its scope is not known)".to_owned(),
        |gpus| format!("the {gpus} GPUs the control daemon serves"),
    );
    let why = format!(
        "the listed MPS servers serve {listed} client(s) across {gpus}, and get_client_list does not say which GPU each uses; {} on this GPU would be over the limit of {limit} clients per device",
        listed.saturating_add(COMING)
    );
    let fix = "count the clients on this GPU (`echo ps | nvidia-cuda-mps-control` on 535 and newer lists each client with its device), or run the job where its control daemon serves this GPU alone (with --require-verified this is a rejection)";
    unverified_finding(
        context,
        Code::ServerClientLimitUnverified,
        "that this GPU has room for the job's two clients",
        why,
        fix,
    )
}

/// How a stale client is, in the message's words.
fn how(stale: Stale) -> &'static str {
    match stale {
        Stale::Gone => "no longer exists",
        Stale::Zombie => "is a zombie",
        Stale::Dead => "is dead",
    }
}

/// The rejection for a `client` of `server` that is dead or a zombie.
pub(in crate::assess) fn stale(
    context: &Context<'_>,
    server: Pid,
    client: Pid,
    stale: Stale,
) -> Finding {
    let found = format!(
        "MPS server {server} lists client {client}, which {}",
        how(stale)
    );
    let fix = format!(
        "have the daemon's owner restart that server with all its clients: stop the job that still uses it, then echo shutdown_server {server} -f | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control (the daemon starts a new server for the next client); then retry",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    let path = context.control_path();
    let subject = [
        " would join an MPS server left in an undefined state at ",
        &path,
        ": ",
    ];
    let effect = ". A client killed without synchronising its GPU work leaves the server in an undefined state, and NVIDIA says the server and all its clients must be restarted; a new client may hang at CUDA init";
    super::with_fix(
        context,
        Code::StaleServerClient,
        &subject,
        found,
        effect,
        fix,
    )
}

/// The advisory warning for the `live` clients (server, client) of the listed servers.
pub(in crate::assess) fn has_clients(context: &Context<'_>, live: &[(Pid, Pid)]) -> Finding {
    let listed = crate::text::listed(
        live.iter()
            .map(|(server, client)| format!("client {client} of MPS server {server}")),
    );
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
