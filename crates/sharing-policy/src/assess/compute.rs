//! The compute mode family (docs/mps-daemon.md T3): `Prohibited` allows no context, `Exclusive_Thread`
//! cannot host an MPS server for two processes; `Default` and `Exclusive_Process` (NVIDIA's
//! recommended mode for MPS) are recorded.

use super::{Context, Findings, Served};
use crate::text::repr;
use crate::{Code, Finding};

/// How to record the compute mode.
const VERIFY: &str = "capture the host again with this mps-preflight, whose nvidia-smi query records compute_mode (with --require-verified this is a rejection)";

/// The proven GPU's compute mode allows two MPS clients.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let gpu = context.gpu.to_string();
    let Some(mode) = served.facts.compute_mode.clone() else {
        let why = format!("the GPU query recorded no compute mode for {gpu}");
        let what = format!("the compute mode of GPU {gpu}");
        let finding =
            super::unverified_finding(context, Code::ComputeModeUnverified, &what, why, VERIFY);
        served.unverified(context.request, findings, finding);
        return;
    };
    let why = match mode.as_str() {
        "Default" | "Exclusive_Process" => return,
        "Prohibited" => "which allows no CUDA context at all",
        "Exclusive_Thread" => "a legacy mode that cannot host an MPS server for two processes",
        not_reported if not_reported.starts_with('[') => {
            let why = format!("nvidia-smi reported its compute mode as {}", repr(&mode));
            let finding = Finding::new(
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
            );
            served.unverified(context.request, findings, finding);
            return;
        }
        _ => "which this validator does not know",
    };
    findings.push(|| {
        let found = format!("GPU {gpu} is in compute mode {}", repr(&mode));
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
                &repr(&mode),
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
    });
}
