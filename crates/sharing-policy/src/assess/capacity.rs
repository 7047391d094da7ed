//! Capacity advisories: what lowers how many clients a server takes without stopping one.
//! The caller's `CUDA_DEVICE_MAX_CONNECTIONS` above 2 and the proven daemon's open-files soft
//! limit below 16384 are advisories ([`Code::ADVISORY`](crate::Code::ADVISORY)): warnings
//! and evidence entries, never rejections, not even with `--require-verified`. The per-device
//! client limit is [`crate::clients_fit`], for the client-list facts to call. Decides only;
//! the words are in `message/capacity.rs`.

use super::{Context, Served, message};
use crate::host_extra::open_files_soft;

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
            served.advise(message::capacity::many_connections(context, text.trim()));
        }
    }
    let soft = capacity
        .daemon_max_open_files
        .as_deref()
        .and_then(open_files_soft);
    if let Some(limit) = soft
        && limit < MIN_OPEN_FILES
    {
        served.advise(message::capacity::few_open_files(
            context,
            capacity.daemon_pid,
            limit,
            MIN_OPEN_FILES,
        ));
    }
}
