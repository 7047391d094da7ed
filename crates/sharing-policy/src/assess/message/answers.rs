//! The answers' words: why the daemon's recorded answer to a question, or the device number it
//! gives this GPU, is not known. They are the reasons the checks that read the answers word.

use gpu_uuid::ResolveError;

use crate::ReadOnlyCommand;
use crate::served::NotIdentified;

/// Why there is no settings session: the snapshot predates schema v3.
pub(in crate::assess) fn no_settings_query() -> String {
    "the snapshot holds no settings query (captured before schema v3)".to_owned()
}

/// Why there is no answer to `command`: the settings session did not ask it.
pub(in crate::assess) fn not_asked(command: ReadOnlyCommand) -> String {
    format!("the settings query did not ask `{}`", command.line())
}

/// Why the daemon's device number for this GPU is unknown: its process is unknown, for `why`.
pub(in crate::assess) fn daemon_unknown(why: &NotIdentified<'_>) -> String {
    format!(
        "which device number the daemon gives this GPU is unknown: {}",
        crate::message::served::not_identified(why)
    )
}

/// Why the daemon's device number for this GPU is unknown: the environment of the daemon (PID
/// `pid`) was not read.
pub(in crate::assess) fn environ_unread(pid: i64) -> String {
    format!(
        "which device number the daemon gives this GPU is unknown: /proc/{pid}/environ was not read"
    )
}

/// Why the daemon's `CUDA_VISIBLE_DEVICES` places no GPU: `err`.
pub(in crate::assess) fn visible_devices(err: &ResolveError) -> String {
    format!("the daemon's CUDA_VISIBLE_DEVICES: {err}")
}

/// Why the daemon's numbering cannot be mapped to the host's on a mixed-model host.
pub(in crate::assess) fn order_may_differ() -> String {
    "on this mixed-model host the daemon's CUDA device order may differ from nvidia-smi's"
        .to_owned()
}

/// Why there is no device number: the daemon does not serve this GPU.
pub(in crate::assess) fn gpu_not_served() -> String {
    "the daemon does not serve this GPU".to_owned()
}
