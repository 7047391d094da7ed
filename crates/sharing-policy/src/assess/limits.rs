//! What the processes will be served with (docs/mps-daemon.md §5b): the
//! state of the server they would join (`FAULT` rejects every new client), and the daemon's
//! defaults against the request's stated minimums (active-thread percentage, pinned memory).

use super::answers::{Answers, CAPTURE_AGAIN, answer, daemon_ordinal, settings};
use super::{Context, Findings, Served, daemon_rejection, server_limits};
use crate::session::{self, ServerState};
use crate::{Code, Finding, Pid, ReadOnlyCommand, served};
use crate::{MemSize, Percentage};

/// What these checks add to the evidence.
#[derive(Debug, Default)]
pub(super) struct LimitsEvidence {
    /// The daemon's default pinned-memory limit for the GPU, as printed (`None`: no limit, or
    /// not read).
    pub(super) pinned_mem_limit: Option<String>,
    /// The first listed server's state, when read.
    pub(super) server_status: Option<String>,
    /// The live clients of the listed servers (`None`: no server, or not all read).
    pub(super) client_pids: Option<Vec<i64>>,
    /// The per-device client limit the listed clients were checked against, when every
    /// client list was read.
    pub(super) client_limit: Option<u32>,
    /// The lowest active-thread percentage a listed server applies, when every one was read.
    pub(super) server_percentage: Option<Percentage>,
    /// The lowest pinned-memory limit for the GPU a listed server applies, as printed.
    pub(super) server_pinned_mem_limit: Option<String>,
}

/// What `session::server_state` says of a daemon without `get_server_status`.
const BEFORE_550: &str = "drivers before 550";

/// The fix when the daemon cannot tell a server's state.
const NO_STATE_BEFORE_550: &str = "run a 550+ driver, whose daemon answers get_server_status; before 550 a server's state cannot be read (with --require-verified this is a rejection)";

/// The server state, then the stated minimums.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> LimitsEvidence {
    let answers = settings(context);
    let mut evidence = LimitsEvidence {
        server_status: servers(context, &answers, served, findings),
        ..LimitsEvidence::default()
    };
    if findings.settled() {
        return evidence;
    }
    (evidence.client_pids, evidence.client_limit) =
        super::clients::check(context, &answers, served, findings);
    if findings.settled() {
        return evidence;
    }
    let running = server_limits::running(context, &answers);
    evidence.server_percentage = running
        .percentage
        .as_ref()
        .ok()
        .copied()
        .flatten()
        .map(|(_, p)| p);
    // The daemon's defaults (what a server started for this job gets), then what a running
    // server applies (what this job gets while it runs): the minimum must hold for both.
    percentage(context, findings);
    if findings.settled() {
        return evidence;
    }
    server_limits::check_percentage(context, &running, served, findings);
    if findings.settled() {
        return evidence;
    }
    evidence.pinned_mem_limit = pinned(context, &answers, served, findings);
    if findings.settled() {
        return evidence;
    }
    evidence.server_pinned_mem_limit =
        server_limits::check_pinned(context, &answers, &running, served, findings);
    evidence
}

/// Every listed server's state: `FAULT` is a rejection, an unread state unverified. Returns
/// the first server's state for the evidence.
fn servers(
    context: &Context<'_>,
    answers: &Answers<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<String> {
    let listed = served::server_pids(
        context.facts.daemon_query.as_ref(),
        context.directory.as_bytes(),
    );
    let mut first = None;
    for pid in listed.into_iter().filter_map(Pid::new) {
        let state = answer(answers, ReadOnlyCommand::GetServerStatus(pid))
            .and_then(|lines| session::server_state(pid, lines));
        match state {
            Ok(state) => {
                first.get_or_insert(state.as_str().to_owned());
                if state == ServerState::Fault {
                    findings.push(|| fault(context, pid));
                }
            }
            Err(why) => {
                // A driver without the command cannot be asked again to any effect.
                let fix = if why.contains(BEFORE_550) {
                    NO_STATE_BEFORE_550
                } else {
                    CAPTURE_AGAIN
                };
                let what = format!("the state of MPS server {pid}");
                let finding = super::unverified_finding(
                    context,
                    Code::ServerStatusUnverified,
                    &what,
                    why,
                    fix,
                );
                served.unverified(context.request, findings, finding);
            }
        }
    }
    first
}

fn fault(context: &Context<'_>, pid: Pid) -> Finding {
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

/// The daemon's default active-thread percentage meets the stated minimum.
fn percentage(context: &Context<'_>, findings: &mut Findings) {
    let Some(wanted) = context.request.min_active_thread_percentage else {
        return;
    };
    let Some(found) = mps_protocol::default_percentage(context.facts.daemon_query.as_ref()) else {
        // A live answer whose liveness line is not `%.1f` (every daemon prints `%.1f`): the
        // minimum cannot be compared, and the answer is not a known daemon's.
        findings.push(|| {
            let why = "the liveness line is not the daemon's %.1f active-thread percentage, so --min-active-thread-percentage cannot be checked".to_owned();
            let fix = "check the daemon by hand: printf 'get_default_active_thread_percentage\\n' | nvidia-cuda-mps-control".to_owned();
            Finding::new(
                Code::DaemonAnswerUnrecognized,
                context.words(),
                [context.words().mps(), " could not read the control daemon's default active-thread percentage: ", &why, ". To fix it, ", &fix, "."].concat(),
                why,
                fix,
            )
        });
        return;
    };
    if found >= wanted {
        return;
    }
    findings.push(|| below_percentage(context, found, wanted));
}

fn below_percentage(context: &Context<'_>, found: Percentage, wanted: Percentage) -> Finding {
    let what = format!(
        "the control daemon's default active-thread percentage is {found}, below the required {wanted}"
    );
    let fix = format!(
        "the daemon's owner runs echo set_default_active_thread_percentage {wanted} | CUDA_MPS_PIPE_DIRECTORY={} nvidia-cuda-mps-control (servers started afterwards get it), or the operator gives this job a larger share in the device plugin's MPS config (fewer replicas per GPU)",
        crate::shell_quote(&context.directory.to_string_lossy())
    );
    Finding::new(
        Code::ActiveThreadPercentageBelowRequirement,
        context.words(),
        [
            context.words().mps(),
            " cannot give each client the required share of GPU ",
            &context.gpu.to_string(),
            " through ",
            &context.control_path(),
            ": ",
            &what,
            " (a client cannot raise its own above the daemon's). To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        what,
        fix,
    )
}

/// The daemon's default pinned-memory limit for the GPU, as printed, and whether it meets the
/// stated minimum (no limit meets any). While a server is listed, the minimum is judged
/// against that server's own limit too ([`server_limits::check_pinned`]).
fn pinned(
    context: &Context<'_>,
    answers: &Answers<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<String> {
    let read = daemon_ordinal(context).and_then(|ordinal| {
        let command = ReadOnlyCommand::GetDefaultDevicePinnedMemLimit(ordinal);
        answer(answers, command).and_then(|lines| session::pinned_limit(ordinal, lines))
    });
    let wanted = context.request.min_pinned_mem;
    match (read, wanted) {
        // No limit set for that device, or unread without a minimum to compare.
        (Ok(None), _) | (Err(_), None) => None,
        (Ok(Some((found, raw))), Some(wanted)) if found < wanted => {
            findings.push(|| below_pinned(context, &raw, wanted));
            Some(raw)
        }
        (Ok(Some((_, raw))), _) => Some(raw),
        (Err(why), Some(_)) => {
            let what = format!(
                "the daemon's default pinned-memory limit for GPU {}",
                context.gpu
            );
            let finding = super::unverified_finding(
                context,
                Code::PinnedMemLimitUnverified,
                &what,
                why,
                CAPTURE_AGAIN,
            );
            served.unverified(context.request, findings, finding);
            None
        }
    }
}

fn below_pinned(context: &Context<'_>, raw: &str, wanted: MemSize) -> Finding {
    let what = format!(
        "the control daemon's default pinned-memory limit for GPU {} is {raw}, below the required {wanted}",
        context.gpu
    );
    let fix = "the daemon's owner raises it with set_default_device_pinned_mem_limit <device> <size> (servers started afterwards get it), or the operator gives this job more memory in the device plugin's MPS config (fewer replicas per GPU)".to_owned();
    Finding::new(
        Code::PinnedMemBelowRequirement,
        context.words(),
        [
            context.words().mps(),
            " cannot give each client the required device memory through ",
            &context.control_path(),
            ": ",
            &what,
            ". To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        what,
        fix,
    )
}
