//! The daemon liveness family: the read-only query's answer (deliberate change 4: live = a
//! read-only query exited 0 in time with the known shape). Decides only; the words are in
//! `message/liveness.rs`.

use gpu_uuid::GpuUuid;

use super::{Findings, inconsistent, message};
use crate::daemon::DaemonStatus;
use crate::{HostFacts, OsText};

/// The daemon's answer (deliberate change 4: live = a read-only query exited 0 in time).
pub(super) fn check(
    facts: &HostFacts,
    directory: &OsText,
    pin: Option<GpuUuid>,
    findings: &mut Findings,
) -> Option<i64> {
    let words = findings.words;
    let status = crate::daemon::reference::status_with_pid_file(
        facts.daemon_query.as_ref(),
        directory.as_bytes(),
        crate::served::corroborating_pid_file(facts),
    );
    match status {
        DaemonStatus::Live { server_pid } => server_pid,
        DaemonStatus::NotTheProbe(mismatch) => {
            findings
                .push(|| inconsistent(words, crate::message::daemon::probe_mismatch(&mismatch)));
            None
        }
        status => {
            findings
                .push(|| message::liveness::unreachable(words, status, directory, &facts.env, pin));
            None
        }
    }
}
