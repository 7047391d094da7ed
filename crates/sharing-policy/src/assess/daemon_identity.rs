//! The daemon identity family: which process is the control daemon is proven by the lock it
//! holds (docs/mps-daemon.md, "Identity"), never by a pid file or a process's name, which any
//! local user can write. An unproven identity leaves every fact of the daemon's process
//! (scope, multi-user mode, PID) unverified; a pid file naming another process is reported.

use super::{Context, Findings, Served};
use crate::Code;
use crate::daemon_identity::pid_file_disagreement;
use crate::served::DaemonProcess;

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
