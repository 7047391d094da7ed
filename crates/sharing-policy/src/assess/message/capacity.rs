//! The capacity family's words: the advisories on what lowers how many clients a server takes.

use crate::assess::Context;
use crate::{Code, Finding};

/// The advisory for a caller's `CUDA_DEVICE_MAX_CONNECTIONS` of `value` (trimmed), above the
/// recommended 2.
pub(in crate::assess) fn many_connections(context: &Context<'_>, value: &str) -> Finding {
    let what = format!("CUDA_DEVICE_MAX_CONNECTIONS is {value}");
    let fix = "set CUDA_DEVICE_MAX_CONNECTIONS=2 (or unset it) in the job's environment unless the job needs more queues".to_owned();
    advisory(
        context,
        Code::DeviceMaxConnectionsHigh,
        what,
        ", so each client takes more of the server's shared work queues and fewer clients fit",
        fix,
    )
}

/// The advisory for the control daemon (PID `daemon_pid`) whose open-files soft limit `limit`
/// is below the `recommended` one.
pub(in crate::assess) fn few_open_files(
    context: &Context<'_>,
    daemon_pid: Option<i64>,
    limit: u64,
    recommended: u64,
) -> Finding {
    let pid = daemon_pid.map_or_else(|| "?".to_owned(), |pid| pid.to_string());
    let what = format!("the control daemon (PID {pid}) has an open-files soft limit of {limit}");
    let fix = format!(
        "the daemon's owner restarts it with a higher limit (ulimit -n {recommended} before nvidia-cuda-mps-control -d, or LimitNOFILE={recommended} in its systemd unit)"
    );
    advisory(
        context,
        Code::DaemonOpenFilesLow,
        what,
        &format!(
            ", below the {recommended} NVIDIA recommends, so the daemon can run out of descriptors with many clients"
        ),
        fix,
    )
}

/// An advisory in its one shape: "`MPS` advises on GPU `gpu`: `what``effect`. To fix it,
/// `fix`.", each name standing for its text.
fn advisory(context: &Context<'_>, code: Code, what: String, effect: &str, fix: String) -> Finding {
    let gpu = context.gpu.to_string();
    super::with_fix(
        context,
        code,
        &[" advises on GPU ", &gpu, ": "],
        what,
        effect,
        fix,
    )
}
