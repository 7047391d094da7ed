//! The server owner family: a daemon runs one server at a time, and a server of another user
//! makes this job's clients queue behind it, unless the daemon runs in multi-user mode
//! (docs/mps-daemon.md F17, T8).

use super::{Context, Findings, Served};
use crate::served::{self, Owner};
use crate::{Code, Finding};

/// How to make the servers' owners readable.
const VERIFY: &str = "run the probe as root, or where /proc is not mounted with hidepid, so that the servers' /proc/<pid>/status is readable (with --require-verified this is a rejection)";

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
        let why = "the probing user's UID was not recorded (a v1 snapshot)".to_owned();
        served.unverified(context.request, findings, unverified(context, why));
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
        findings.push(|| another_user(context, &others, judged, multiuser));
        return;
    }
    let unknown: Vec<String> = owners
        .into_iter()
        .filter_map(|(pid, owner)| match owner {
            Owner::Unknown(why) => Some(format!("server PID {pid}: {why}")),
            Owner::Uid(_) => None,
        })
        .collect();
    if !unknown.is_empty() {
        served.unverified(
            context.request,
            findings,
            unverified(context, unknown.join("; ")),
        );
    }
}

fn unverified(context: &Context<'_>, why: String) -> Finding {
    let what = format!(
        "that the MPS servers of the control daemon at {} run as {}",
        context.control_path(),
        context
            .request
            .as_user
            .map_or_else(|| "this user".to_owned(), |uid| format!("uid {uid}"))
    );
    super::unverified_finding(context, Code::ServerOwnerUnverified, &what, why, VERIFY)
}

/// The finding for servers of other users.
fn another_user(
    context: &Context<'_>,
    others: &[(i64, u32)],
    ours: u32,
    multiuser: Option<bool>,
) -> Finding {
    let listed = others
        .iter()
        .map(|(pid, uid)| format!("PID {pid} (uid {uid})"))
        .collect::<Vec<_>>()
        .join(", ");
    let whose = if context.request.as_user.is_some() {
        "the job is judged for uid"
    } else {
        "this process is uid"
    };
    let found = format!("MPS server {listed}; {whose} {ours}");
    let first_uid = others.first().map_or(0, |(_, uid)| *uid);
    let mode = if multiuser.is_none() {
        " Whether the daemon runs in multi-user mode could not be verified (its process or command line was not observed, or no known version's option parser reads it)."
    } else {
        ""
    };
    let fix = format!(
        "wait for that job to finish, run as uid {first_uid}, or use a control daemon started in multi-user mode (nvidia-cuda-mps-control -d -multiuser-server on 555, -d -M on 580; Volta or newer)"
    );
    Finding::new(
        Code::ServerOfAnotherUser,
        context.words(),
        [
            context.words().mps(),
            " would queue behind another user's MPS server at ",
            &context.control_path(),
            ": ",
            &found,
            ". The daemon asks that server to exit once its clients finish and holds this job's clients until then (a hang at CUDA init, or a run serialised behind another job).",
            mode,
            " Either ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}
