//! The daemon identity family: which process is the control daemon is proven by the lock it
//! holds (docs/mps-daemon.md, "Identity"), never by a pid file or a process's name, which any
//! local user can write. An unproven identity leaves every fact of the daemon's process
//! (scope, multi-user mode, PID) unverified; a pid file naming another process is reported; a
//! proven daemon run by an ordinary user serves only that user (starting a server for another
//! UID is root-only). Decides only; the words are in `message/daemon_identity.rs`.

use super::{Context, Findings, Served, message};
use crate::daemon_identity::pid_file_disagreement;
use crate::proc_text::effective_uid;
use crate::served::DaemonProcess;

/// The lock proves the daemon; a pid file naming another process is reported, not used.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let locked = context
        .facts
        .daemon_process
        .as_ref()
        .is_some_and(|search| search.lock.is_some());
    if let (DaemonProcess::Unknown(why), true) = (&context.daemon, locked) {
        let finding = message::daemon_identity::unproven(context, why);
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
            findings
                .push(|| message::daemon_identity::another_user(context, daemon.pid, uid, judged));
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
        let finding = message::daemon_identity::pid_file_disagrees(context, &path, named, holder);
        served.unverified(context.request, findings, finding);
    }
}
