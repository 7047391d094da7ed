//! The compute processes family's words: processes holding a GPU in `Exclusive_Process` that
//! keep the MPS server from starting, and a holding that could not be read.

use crate::assess::Context;
use crate::compute_apps::ComputeApp;
use crate::{Code, Finding};

/// How to read the compute processes.
const VERIFY: &str = "run nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name --format=csv,noheader on the node, or capture the host again with this mps-preflight (with --require-verified this is a rejection)";

/// Why the holding is unknown when a v4 snapshot did not record the compute-apps query.
pub(in crate::assess) fn query_not_recorded() -> String {
    "the snapshot does not record the compute-apps query this GPU in Exclusive_Process with no MPS server needs"
        .to_owned()
}

/// The unverified finding for compute processes that could not be read, `why` saying why.
pub(in crate::assess) fn unverified(context: &Context<'_>, why: String) -> Finding {
    let gpu = context.gpu.to_string();
    let what = format!("that no compute process holds GPU {gpu}");
    super::unverified_finding(context, Code::ComputeAppsUnverified, &what, why, VERIFY)
}

/// The finding for compute processes `apps` that hold the GPU, so the server cannot start.
pub(in crate::assess) fn held(context: &Context<'_>, apps: &[ComputeApp]) -> Finding {
    let gpu = context.gpu.to_string();
    let listed = crate::text::listed(
        apps.iter()
            .map(|app| format!("PID {} ({})", app.pid, crate::text::repr(&app.name))),
    );
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
            &gpu,
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
