//! The compute mode family's words: a mode that was not recorded or not reported, and a mode
//! that keeps two MPS clients from sharing the GPU.

use crate::assess::Context;
use crate::assess::compute::Forbidding;
use crate::text::repr;
use crate::{Code, Finding};

/// How to record the compute mode.
const VERIFY: &str = "capture the host again with this mps-preflight, whose nvidia-smi query records compute_mode (with --require-verified this is a rejection)";

/// The unverified finding for a GPU query that recorded no compute mode.
pub(in crate::assess) fn not_recorded(context: &Context<'_>) -> Finding {
    let gpu = context.gpu.to_string();
    let why = format!("the GPU query recorded no compute mode for {gpu}");
    let what = format!("the compute mode of GPU {gpu}");
    super::unverified_finding(context, Code::ComputeModeUnverified, &what, why, VERIFY)
}

/// The unverified finding for a compute mode nvidia-smi did not report (`mode` is one of its
/// bracketed placeholders, such as `[N/A]`).
pub(in crate::assess) fn not_reported(context: &Context<'_>, mode: &str) -> Finding {
    let gpu = context.gpu.to_string();
    let why = format!("nvidia-smi reported its compute mode as {}", repr(mode));
    Finding::new(
        Code::ComputeModeUnverified,
        context.words(),
        [
            context.words().mps(),
            " could not verify the compute mode of GPU ",
            &gpu,
            ": ",
            &why,
            ".",
        ]
        .concat(),
        why,
        "check the GPU's compute mode with nvidia-smi -q -d COMPUTE".to_owned(),
    )
}

/// The finding for a compute `mode` that keeps two MPS clients from sharing the GPU, for the
/// reason `forbidding` names.
pub(in crate::assess) fn forbids_sharing(
    context: &Context<'_>,
    mode: &str,
    forbidding: Forbidding,
) -> Finding {
    let gpu = context.gpu.to_string();
    let why = match forbidding {
        Forbidding::Prohibited => "which allows no CUDA context at all",
        Forbidding::ExclusiveThread => {
            "a legacy mode that cannot host an MPS server for two processes"
        }
        Forbidding::Unknown => "which this validator does not know",
    };
    let found = format!("GPU {gpu} is in compute mode {}", repr(mode));
    let fix = format!(
        "as root: nvidia-smi -i {gpu} -c EXCLUSIVE_PROCESS (NVIDIA's recommended mode for MPS), or -c DEFAULT"
    );
    Finding::new(
        Code::ComputeModeForbidsSharing,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            &gpu,
            ": its compute mode is ",
            &repr(mode),
            ", ",
            why,
            ". Set the mode ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}
