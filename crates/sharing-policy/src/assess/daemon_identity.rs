//! The daemon identity family: which process is the control daemon is proven by the lock it
//! holds (docs/mps-daemon.md, "Identity"), never by a pid file or a process's name, which any
//! local user can write. An unproven identity leaves every fact of the daemon's process
//! (scope, multi-user mode, PID) unverified; a pid file naming another process is reported; a
//! proven daemon run by an ordinary user serves only that user (starting a server for another
//! UID is root-only).

use super::{Context, Findings, Served};
use crate::daemon_identity::pid_file_disagreement;
use crate::proc_text::effective_uid;
use crate::served::DaemonProcess;
use crate::{Code, Finding};

/// How to let the probe prove the daemon's identity.
pub(super) const PROVE: &str = "run the probe in the control daemon's PID namespace (on Kubernetes, a pod with hostPID: true) where /proc/locks is readable, check that the daemon runs (`ps -C nvidia-cuda-mps-control`) as root or as the owner of the pipe directory, and probe again (with --require-verified this is a rejection)";

/// The lock proves the daemon; a pid file naming another process is reported, not used.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let locked = context
        .facts
        .daemon_process
        .as_ref()
        .is_some_and(|search| search.lock.is_some());
    if let (DaemonProcess::Unknown(why), true) = (&context.daemon, locked) {
        let what = format!(
            "which process is the control daemon at {}",
            context.control_path()
        );
        let finding = super::unverified_finding(
            context,
            Code::DaemonIdentityUnverified,
            &what,
            why.clone(),
            PROVE,
        );
        served.unverified(context.request, findings, finding);
        return;
    }
    if let DaemonProcess::Found(daemon) = &context.daemon {
        let uid = daemon.status_uid.as_deref().and_then(effective_uid);
        let judged = context.request.judged_for_uid(context.facts);
        if let (Some(uid), Some(judged)) = (uid, judged)
            && uid != 0
            && uid != judged
        {
            findings.push(|| another_user(context, daemon.pid, uid, judged));
            return;
        }
    }
    if let Some((named, holder)) = pid_file_disagreement(context.facts) {
        let path = context
            .facts
            .pid_file
            .as_ref()
            .map(|file| file.path.to_string_lossy())
            .unwrap_or_default();
        let what = format!("the control daemon's pid file {path}");
        let why = format!(
            "it names PID {named}, but PID {holder} holds the daemon's lock and is the daemon; the pid file is not used"
        );
        let fix = format!(
            "as the daemon's owner, remove the stale pid file {path} or restart the daemon so that it writes its own (with --require-verified this is a rejection)"
        );
        let finding =
            super::unverified_finding(context, Code::DaemonPidFileDisagrees, &what, why, &fix);
        served.unverified(context.request, findings, finding);
    }
}

/// The finding for a daemon run by an ordinary user other than the judged one: it cannot
/// start a server for this job's user (starting a server for another UID is root-only).
fn another_user(context: &Context<'_>, pid: i64, uid: u32, judged: u32) -> Finding {
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
