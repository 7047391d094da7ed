//! The limits family's words: a server's state (`FAULT`, or unread), and the daemon's defaults
//! against the request's stated minimums (active-thread percentage, pinned memory).

use super::CAPTURE_AGAIN;
use super::{daemon_rejection, unverified_finding, with_fix};
use crate::assess::Context;
use crate::{Code, Finding, MemSize, Percentage, Pid};

/// The fix when the daemon cannot tell a server's state.
const NO_STATE_BEFORE_550: &str = "run a 550+ driver, whose daemon answers get_server_status; before 550 a server's state cannot be read (with --require-verified this is a rejection)";

/// The unverified state of MPS server `pid`: `why`, and the fix (a driver before 550 cannot
/// be asked again to any effect).
pub(in crate::assess) fn status_unverified(
    context: &Context<'_>,
    pid: Pid,
    why: String,
    before_550: bool,
) -> Finding {
    let fix = if before_550 {
        NO_STATE_BEFORE_550
    } else {
        CAPTURE_AGAIN
    };
    let what = format!("the state of MPS server {pid}");
    unverified_finding(context, Code::ServerStatusUnverified, &what, why, fix)
}

/// The rejection for MPS server `pid` in `FAULT`.
pub(in crate::assess) fn fault(context: &Context<'_>, pid: Pid) -> Finding {
    let found = format!("MPS server {pid} is in FAULT");
    let fix = format!(
        "wait for its clients to exit so that the daemon starts a new server, or have the daemon's owner stop it (echo shutdown_server {pid} -f | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control); then retry",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    daemon_rejection(
        context,
        Code::ServerFault,
        found,
        ", which rejects every new client with CUDA_ERROR_MPS_SERVER_NOT_READY",
        fix,
    )
}

/// The finding for a live answer whose liveness line is not the daemon's `%.1f` default
/// active-thread percentage, so the stated minimum cannot be compared.
pub(in crate::assess) fn percentage_unrecognized(context: &Context<'_>) -> Finding {
    let why = "the liveness line is not the daemon's %.1f active-thread percentage, so --min-active-thread-percentage cannot be checked".to_owned();
    let fix = "check the daemon by hand: printf 'get_default_active_thread_percentage\\n' | nvidia-cuda-mps-control".to_owned();
    let subject = [" could not read the control daemon's default active-thread percentage: "];
    with_fix(
        context,
        Code::DaemonAnswerUnrecognized,
        &subject,
        why,
        "",
        fix,
    )
}

/// The rejection for a daemon's default active-thread percentage (`found`) below the
/// `wanted` minimum.
pub(in crate::assess) fn below_percentage(
    context: &Context<'_>,
    found: Percentage,
    wanted: Percentage,
) -> Finding {
    let what = format!(
        "the control daemon's default active-thread percentage is {found}, below the required {wanted}"
    );
    let fix = format!(
        "the daemon's owner runs echo set_default_active_thread_percentage {wanted} | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control (servers started afterwards get it), or the operator gives this job a larger share in the device plugin's MPS config (fewer replicas per GPU)",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    let (gpu, path) = (context.gpu.to_string(), context.control_path());
    let subject = [
        " cannot give each client the required share of GPU ",
        &gpu,
        " through ",
        &path,
        ": ",
    ];
    let effect = " (a client cannot raise its own above the daemon's)";
    with_fix(
        context,
        Code::ActiveThreadPercentageBelowRequirement,
        &subject,
        what,
        effect,
        fix,
    )
}

/// The unverified default pinned-memory limit for the GPU, and `why`.
pub(in crate::assess) fn pinned_unverified(context: &Context<'_>, why: String) -> Finding {
    let what = format!(
        "the daemon's default pinned-memory limit for GPU {}",
        context.gpu
    );
    unverified_finding(
        context,
        Code::PinnedMemLimitUnverified,
        &what,
        why,
        CAPTURE_AGAIN,
    )
}

/// The rejection for a daemon's default pinned-memory limit (`raw`, as printed) below the
/// `wanted` minimum.
pub(in crate::assess) fn below_pinned(
    context: &Context<'_>,
    raw: &str,
    wanted: MemSize,
) -> Finding {
    let what = format!(
        "the control daemon's default pinned-memory limit for GPU {} is {raw}, below the required {wanted}",
        context.gpu
    );
    let fix = "the daemon's owner raises it with set_default_device_pinned_mem_limit <device> <size> (servers started afterwards get it), or the operator gives this job more memory in the device plugin's MPS config (fewer replicas per GPU)".to_owned();
    let path = context.control_path();
    let subject = [
        " cannot give each client the required device memory through ",
        &path,
        ": ",
    ];
    with_fix(
        context,
        Code::PinnedMemBelowRequirement,
        &subject,
        what,
        "",
        fix,
    )
}
