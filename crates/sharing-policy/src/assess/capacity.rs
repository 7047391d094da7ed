//! Capacity advisories: what lowers how many clients a server takes without stopping one.
//! The caller's `CUDA_DEVICE_MAX_CONNECTIONS` above 2 and the proven daemon's open-files soft
//! limit below 16384 are advisories ([`Code::ADVISORY`]): warnings and evidence entries,
//! never rejections, not even with `--require-verified`. The per-device client limit is
//! [`crate::clients_fit`], for the client-list facts to call.

use super::{Context, Served};
use crate::host_extra::open_files_soft;
use crate::{Code, Finding};

/// The most work queues per client NVIDIA recommends under MPS.
const MAX_CONNECTIONS: u64 = 2;
/// The least open-files limit NVIDIA recommends for the control daemon.
const MIN_OPEN_FILES: u64 = 16384;

/// Records each advisory the capacity facts show.
pub(super) fn check(context: &Context<'_>, served: &mut Served) {
    let Some(capacity) = context.facts.capacity.as_ref() else {
        return;
    };
    if let Some(value) = &capacity.device_max_connections {
        let text = value.to_string_lossy();
        if text
            .trim()
            .parse::<u64>()
            .is_ok_and(|n| n > MAX_CONNECTIONS)
        {
            let what = format!("CUDA_DEVICE_MAX_CONNECTIONS is {}", text.trim());
            let fix = "set CUDA_DEVICE_MAX_CONNECTIONS=2 (or unset it) in the job's environment unless the job needs more queues".to_owned();
            served.advise(advisory(
                context,
                Code::DeviceMaxConnectionsHigh,
                what,
                ", so each client takes more of the server's shared work queues and fewer clients fit",
                fix,
            ));
        }
    }
    let soft = capacity
        .daemon_max_open_files
        .as_deref()
        .and_then(open_files_soft);
    if let Some(limit) = soft
        && limit < MIN_OPEN_FILES
    {
        let pid = capacity
            .daemon_pid
            .map_or_else(|| "?".to_owned(), |pid| pid.to_string());
        let what =
            format!("the control daemon (PID {pid}) has an open-files soft limit of {limit}");
        let fix = format!(
            "the daemon's owner restarts it with a higher limit (ulimit -n {MIN_OPEN_FILES} before nvidia-cuda-mps-control -d, or LimitNOFILE={MIN_OPEN_FILES} in its systemd unit)"
        );
        served.advise(advisory(
            context,
            Code::DaemonOpenFilesLow,
            what,
            &format!(", below the {MIN_OPEN_FILES} NVIDIA recommends, so the daemon can run out of descriptors with many clients"),
            fix,
        ));
    }
}

fn advisory(context: &Context<'_>, code: Code, what: String, effect: &str, fix: String) -> Finding {
    Finding::new(
        code,
        context.words(),
        [
            context.words().mps(),
            " advises on GPU ",
            &context.gpu.to_string(),
            ": ",
            &what,
            effect,
            ". To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        what,
        fix,
    )
}
