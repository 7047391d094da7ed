//! The server owner family's words: servers of another user that this job's clients would
//! queue behind, and servers whose owner could not be read.

use crate::assess::Context;
use crate::served::OwnerUnknown;
use crate::{Code, Finding};

/// How to make the servers' owners readable.
const VERIFY: &str = "run the probe as root, or where /proc is not mounted with hidepid, so that the servers' /proc/<pid>/status is readable (with --require-verified this is a rejection)";

/// The unverified finding for a snapshot that did not record the probing user's UID.
pub(in crate::assess) fn uid_not_recorded(context: &Context<'_>) -> Finding {
    let why = "the probing user's UID was not recorded (a v1 snapshot)".to_owned();
    unverified(context, why)
}

/// The unverified finding for servers whose owner is unknown: each `(pid, why)` of `unknown`.
pub(in crate::assess) fn owners_unknown(
    context: &Context<'_>,
    unknown: &[(i64, OwnerUnknown)],
) -> Finding {
    let why = unknown
        .iter()
        .map(|(pid, why)| {
            format!(
                "server PID {pid}: {}",
                crate::message::served::owner_unknown(why)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    unverified(context, why)
}

/// The unverified finding for the servers' owners, `why` saying why they are not known.
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

/// The finding for servers of other users: `others` lists each server's `(pid, uid)`, `ours`
/// is the UID the job is judged for, `multiuser` whether the daemon runs in multi-user mode
/// (`None` when that could not be verified).
pub(in crate::assess) fn another_user(
    context: &Context<'_>,
    others: &[(i64, u32)],
    ours: u32,
    multiuser: Option<bool>,
) -> Finding {
    let listed = crate::text::listed(
        others
            .iter()
            .map(|(pid, uid)| format!("PID {pid} (uid {uid})")),
    );
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
