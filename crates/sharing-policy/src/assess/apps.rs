//! The compute processes holding the GPU (docs/mps-daemon.md §5g): with the GPU in
//! `Exclusive_Process` and no server started, a compute process already holding it keeps the
//! MPS server from starting. Judged only there; a v4 snapshot that did not record the query
//! is unverified, an older one (which never asked) is judged as before.

use super::{Context, Findings, Served};
use crate::compute_apps::{self, AppsRead, ComputeApp, EXCLUSIVE_PROCESS};
use crate::{Code, Finding, served};

/// How to read the compute processes.
const VERIFY: &str = "run nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name --format=csv,noheader on the node, or capture the host again with this mps-preflight (with --require-verified this is a rejection)";

/// The number of compute processes found on the GPU (`Some(0)` when it is free), for the
/// evidence; `None` when the query was not needed or not read.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<usize> {
    if served.facts.compute_mode.as_deref() != Some(EXCLUSIVE_PROCESS)
        || !served::server_pids(
            context.facts.daemon_query.as_ref(),
            context.directory.as_bytes(),
        )
        .is_empty()
    {
        return None;
    }
    let gpu = context.gpu.to_string();
    let what = format!("that no compute process holds GPU {gpu}");
    let read = match context.facts.compute_apps_query.as_ref() {
        Some(record) => compute_apps::read(record, context.gpu),
        // Only v4 asks; an older snapshot is judged as before.
        None if context.facts.schema != crate::SCHEMA => return None,
        None => AppsRead::Unknown(
            "the snapshot does not record the compute-apps query this GPU in Exclusive_Process with no MPS server needs"
                .to_owned(),
        ),
    };
    match read {
        AppsRead::Free => Some(0),
        AppsRead::Held(apps) => {
            let count = apps.len();
            findings.push(|| held(context, &gpu, &apps));
            Some(count)
        }
        AppsRead::Unknown(why) => {
            let finding =
                super::unverified_finding(context, Code::ComputeAppsUnverified, &what, why, VERIFY);
            served.unverified(context.request, findings, finding);
            None
        }
    }
}

fn held(context: &Context<'_>, gpu: &str, apps: &[ComputeApp]) -> Finding {
    let listed = apps
        .iter()
        .map(|app| format!("PID {} ({})", app.pid, crate::text::repr(&app.name)))
        .collect::<Vec<_>>()
        .join(", ");
    let held = format!(
        "it is in Exclusive_Process and no MPS server runs, but {} compute process(es) hold it: {listed}",
        apps.len()
    );
    let found = format!("GPU {gpu}: {held}");
    let fix = format!(
        "stop those processes (or wait for them to exit) before the job starts, so the daemon can start its server on the GPU; or run them as MPS clients of this daemon; or, as root, nvidia-smi -i {gpu} -c DEFAULT if exclusivity is not needed"
    );
    Finding::new(
        Code::GpuHeldByComputeProcess,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            gpu,
            ": ",
            &held,
            ". In Exclusive_Process mode the MPS server needs the GPU to itself, so it cannot start and every client fails with \"all CUDA-capable devices are busy or unavailable\". To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}
