//! The reach family's words: why the judged user's MPS server cannot reach the pipe directory,
//! or why that could not be told, and what to do.

use super::unverified_finding;
use crate::assess::Context;
use crate::{Blocked, Code, Finding, Need};

/// How to make the answer verifiable.
const VERIFY: &str = "probe with this version on the host (it records the mode, owner and group of every directory from / down to the pipe and log directories), give --as-user with the job's user, and where an ACL or SELinux is in play check as that user that it can write <pipe>/log and connect to <pipe>/control (with --require-verified this is a rejection)";

/// The finding for a request whose judged user is unknown (no `--as-user`, no caller recorded).
pub(in crate::assess) fn user_unknown(context: &Context<'_>) -> Finding {
    let why = "the user the request is judged for is unknown (no --as-user, and the snapshot recorded no caller)".to_owned();
    unverified_finding(
        context,
        Code::PipeAccessUnverified,
        "that the job's user can reach the pipe directory",
        why,
        VERIFY,
    )
}

/// The finding for a reach of UID `uid` that could not be told, for `why`.
pub(in crate::assess) fn unverified(context: &Context<'_>, uid: u32, why: String) -> Finding {
    let what = format!("that the MPS server of UID {uid} can reach the pipe directory");
    unverified_finding(context, Code::PipeAccessUnverified, &what, why, VERIFY)
}

/// Why the recorded modes do not count: they are of another pipe directory.
pub(in crate::assess) fn of_another_directory() -> String {
    "the modes recorded are of another pipe directory than the effective one".to_owned()
}

/// Why there are no modes to judge: a snapshot of `schema` did not record them.
pub(in crate::assess) fn modes_unrecorded(schema: &str) -> String {
    format!("the snapshot ({schema}) did not record the modes on the way to the pipe directory")
}

/// The rejection for a pipe directory that `blocked` keeps UID `uid`'s MPS server from.
pub(in crate::assess) fn unreachable(
    context: &Context<'_>,
    uid: u32,
    blocked: &Blocked,
) -> Finding {
    let path = blocked.path.to_string_lossy();
    let (class, letter) = (blocked.class.letter(), blocked.need.letter());
    let (needed, whom) = (
        match blocked.need {
            Need::Search => "search (x) on the directory",
            Need::Connect => "write (w) on the control socket, to connect to it",
            Need::WriteFifo => "write (w) on the log FIFO",
        },
        match blocked.class {
            crate::Class::Owner => "as its owner",
            crate::Class::Group => "through its group",
            crate::Class::Other => "as others",
        },
    );
    let what = format!(
        "{path} (mode {:04o}, owner {}, group {}) denies UID {uid} {needed} {whom}",
        blocked.mode, blocked.uid, blocked.gid
    );
    let fix = format!(
        "chmod {class}+{letter} {path}, or start the daemon with a CUDA_MPS_PIPE_DIRECTORY that every job user can reach (each directory above it searchable by others)"
    );
    let (gpu, path) = (context.gpu.to_string(), context.control_path());
    let subject = [
        " cannot share GPU ",
        &gpu,
        " through ",
        &path,
        ": the MPS server runs as the client's user, and ",
    ];
    let effect = ", so the server crash-loops with EACCES while the daemon still answers queries";
    super::with_fix(
        context,
        Code::PipeDirectoryUnreachable,
        &subject,
        what,
        effect,
        fix,
    )
}
