//! The health family's words: a GPU that needs a recovery action, health columns that could
//! not be verified, and persistence mode off.

use super::super::Context;
use super::unverified_finding;
use crate::gpu::HealthRejected;
use crate::text::repr;
use crate::{Code, Finding};

/// How to record the health columns.
const VERIFY: &str = "run nvidia-smi -q on the node and read GPU Recovery Action, Retired Pages and Remapped Rows, or capture it again with a driver whose nvidia-smi knows gpu_recovery_action (with --require-verified this is a rejection)";

/// How to keep the compute mode and the GPU initialised between jobs.
const PERSISTENCE: &str = "enable persistence as root (run nvidia-persistenced, or nvidia-smi -pm 1), then set the compute mode again (with --require-verified this is a rejection)";

/// Health columns as a list: each name and its value quoted, joined with commas.
fn columns(columns: &[(&str, &str)]) -> String {
    crate::text::listed(
        columns
            .iter()
            .map(|(name, value)| format!("{name} {}", repr(value))),
    )
}

/// The unverified finding for the health of the context's GPU, and `why`.
fn unverified(context: &Context<'_>, gpu: &str, why: String) -> Finding {
    let what = format!("the health of GPU {gpu}");
    unverified_finding(context, Code::GpuHealthUnverified, &what, why, VERIFY)
}

/// The unverified finding for a v4 snapshot whose GPU query did not ask the health columns.
pub(in crate::assess) fn not_asked(context: &Context<'_>) -> Finding {
    let gpu = context.gpu.to_string();
    let why = format!(
        "this v4 snapshot's GPU query did not ask the health columns for {gpu}, and records no rejection of them"
    );
    unverified(context, &gpu, why)
}

/// The unverified finding for health columns that `nvidia-smi` rejected.
pub(in crate::assess) fn rejected(context: &Context<'_>, rejected: &HealthRejected) -> Finding {
    let why = format!(
        "nvidia-smi rejected the GPU health columns as an older driver does ({}), so only the base columns were read",
        repr(crate::message::gpu::health_rejected(rejected))
    );
    unverified(context, &context.gpu.to_string(), why)
}

/// The unverified finding for a GPU query that recorded no health columns for the GPU.
pub(in crate::assess) fn no_row(context: &Context<'_>) -> Finding {
    let gpu = context.gpu.to_string();
    let why = format!("the GPU query recorded no health columns for {gpu}");
    unverified(context, &gpu, why)
}

/// The unverified finding for health columns whose values could not be read (`unreadable`:
/// each name and value).
pub(in crate::assess) fn unreadable(context: &Context<'_>, unreadable: &[(&str, &str)]) -> Finding {
    let why = format!("nvidia-smi reported {}", columns(unreadable));
    unverified(context, &context.gpu.to_string(), why)
}

/// The rejection for a GPU whose columns ask for a recovery action (`faults`: each name and
/// value).
pub(in crate::assess) fn needs_recovery(context: &Context<'_>, faults: &[(&str, &str)]) -> Finding {
    let gpu = context.gpu.to_string();
    let faults = columns(faults);
    let found = format!("GPU {gpu} reports {faults}");
    let fix = format!(
        "drain the node and do what nvidia-smi -q -i {gpu} asks under GPU Recovery Action (Reset: as root, nvidia-smi -r -i {gpu} once no process uses it; Reboot: reboot the node); a pending retired page or row remap is applied by a GPU reset, a failed row remap needs the GPU replaced"
    );
    Finding::new(
        Code::GpuNeedsRecovery,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            &gpu,
            ": it needs a recovery action (",
            &faults,
            "), and under MPS one fatal fault takes every client of the GPU down. To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}

/// The unverified finding for persistence mode reported as `mode` (not `Enabled`).
pub(in crate::assess) fn persistence_off(context: &Context<'_>, mode: &str) -> Finding {
    let gpu = context.gpu.to_string();
    let why = format!(
        "nvidia-smi reported persistence_mode {} for GPU {gpu}: the compute mode read is only a snapshot, lost when the GPU deinitialises after its last client, and a new MPS server's initialisation is slow",
        repr(mode)
    );
    let message = [
        context.words().mps(),
        " found persistence mode off: ",
        &why,
        ". To keep it, ",
        PERSISTENCE,
        ".",
    ]
    .concat();
    Finding::new(
        Code::PersistenceModeDisabled,
        context.words(),
        message,
        why,
        PERSISTENCE.to_owned(),
    )
}
