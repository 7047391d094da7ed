//! The server limits family's words: a running server's own active-thread percentage or
//! pinned-memory limit below the stated minimum, or unread.

use super::{unverified_finding, with_fix};
use crate::assess::Context;
use crate::{Code, Finding, MemSize, Percentage, Pid};

/// The fix when a running server's limits could not be read.
const VERIFY: &str = "capture the host again while the server runs, as a user the daemon answers (with --require-verified this is a rejection)";

/// The rejection for MPS server `pid` applying an active-thread percentage (`found`) below
/// the `wanted` minimum; `default` is the daemon's default, when read.
pub(in crate::assess) fn percentage_below(
    context: &Context<'_>,
    pid: Pid,
    found: Percentage,
    wanted: Percentage,
    default: Option<Percentage>,
) -> Finding {
    let default = default.map_or_else(|| "unread".to_owned(), |p| p.to_string());
    let what = format!(
        "MPS server {pid} applies an active-thread percentage of {found}, below the required {wanted} (the daemon's default active-thread percentage is {default}, which only the next server gets)"
    );
    let fix = format!(
        "the daemon's owner runs echo set_active_thread_percentage {pid} {wanted} | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control, or waits for that server to exit so that the next one gets the default",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    below(
        context,
        Code::ActiveThreadPercentageBelowRequirement,
        what,
        fix,
    )
}

/// The unverified active-thread percentage of the running server, and `why`.
pub(in crate::assess) fn percentage_unverified(context: &Context<'_>, why: String) -> Finding {
    unverified_finding(
        context,
        Code::ServerLimitsUnverified,
        "the active-thread percentage the running MPS server applies",
        why,
        VERIFY,
    )
}

/// The rejection for MPS server `pid` applying a pinned-memory limit (`raw`, as printed) for
/// the GPU, daemon device `ordinal`, below the `wanted` minimum.
pub(in crate::assess) fn pinned_below(
    context: &Context<'_>,
    pid: Pid,
    raw: &str,
    ordinal: u32,
    wanted: MemSize,
) -> Finding {
    let what = format!(
        "MPS server {pid} applies a pinned-memory limit of {raw} for GPU {}, below the required {wanted} (the daemon's default pinned-memory limit for GPU {} applies only to the next server)",
        context.gpu, context.gpu
    );
    let fix = format!(
        "the daemon's owner runs echo set_device_pinned_mem_limit {pid} {ordinal} {wanted} | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control, or waits for that server to exit so that the next one gets the default",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    below(context, Code::PinnedMemBelowRequirement, what, fix)
}

/// The unverified pinned-memory limit of the running server for the GPU, and `why`.
pub(in crate::assess) fn pinned_unverified(context: &Context<'_>, why: String) -> Finding {
    let what = format!(
        "the pinned-memory limit the running MPS server applies for GPU {}",
        context.gpu
    );
    unverified_finding(context, Code::ServerLimitsUnverified, &what, why, VERIFY)
}

/// A running server's limit below a stated minimum: `what` it applies, and the `fix`.
fn below(context: &Context<'_>, code: Code, what: String, fix: String) -> Finding {
    let (gpu, path) = (context.gpu.to_string(), context.control_path());
    let subject = [
        " cannot give each client the required share of GPU ",
        &gpu,
        " through ",
        &path,
        ": ",
    ];
    with_fix(context, code, &subject, what, "", fix)
}
