//! The daemon identity family's words: a daemon whose identity is unproven, a pid file naming
//! another process, and a daemon of an ordinary user other than the judged one.

use super::super::Context;
use super::PROVE;
use super::unverified_finding;
use crate::served::NotIdentified;
use crate::{Code, Finding};

/// The unverified finding for a control daemon whose identity the lock could not prove, and
/// `why`.
pub(in crate::assess) fn unproven(context: &Context<'_>, why: &NotIdentified<'_>) -> Finding {
    let why = crate::message::served::not_identified(why);
    let what = format!(
        "which process is the control daemon at {}",
        context.control_path()
    );
    unverified_finding(context, Code::DaemonIdentityUnverified, &what, why, PROVE)
}

/// The unverified finding for a pid file at `path` that names PID `named` while PID `holder`
/// holds the daemon's lock.
pub(in crate::assess) fn pid_file_disagrees(
    context: &Context<'_>,
    path: &str,
    named: i64,
    holder: i64,
) -> Finding {
    let what = format!("the control daemon's pid file {path}");
    let why = format!(
        "it names PID {named}, but PID {holder} holds the daemon's lock and is the daemon; the pid file is not used"
    );
    let fix = format!(
        "as the daemon's owner, remove the stale pid file {path} or restart the daemon so that it writes its own (with --require-verified this is a rejection)"
    );
    unverified_finding(context, Code::DaemonPidFileDisagrees, &what, why, &fix)
}

/// The finding for a daemon (PID `pid`) run by an ordinary user (`uid`) other than the judged
/// one (`judged`): it cannot start a server for this job's user (starting a server for another
/// UID is root-only).
pub(in crate::assess) fn another_user(
    context: &Context<'_>,
    pid: i64,
    uid: u32,
    judged: u32,
) -> Finding {
    let whose = if context.request.as_user.is_some() {
        "the job is judged for uid"
    } else {
        "this process is uid"
    };
    let found = format!("control daemon PID {pid} runs as uid {uid}, not root; {whose} {judged}");
    let fix = format!(
        "run the job as uid {uid}, or use a control daemon started by root (the node's own, e.g. `sudo nvidia-cuda-mps-control -d`, or the device plugin's), pointing CUDA_MPS_PIPE_DIRECTORY at its pipe directory"
    );
    Finding::new(
        Code::DaemonOfAnotherUser,
        context.words(),
        [
            context.words().mps(),
            " would not be served by the control daemon at ",
            &context.control_path(),
            ": ",
            &found,
            ". A daemon not run by root can start MPS servers only for its own user, so this job's clients would wait for a server that never starts. Either ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}
