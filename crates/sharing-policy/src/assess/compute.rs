//! The compute mode family (docs/mps-daemon.md T3): `Prohibited` allows no context, `Exclusive_Thread`
//! cannot host an MPS server for two processes; `Default` and `Exclusive_Process` (NVIDIA's
//! recommended mode for MPS) are recorded. Decides only; the words are in `message/compute.rs`.

use super::{Context, Findings, Served, message};

/// Why a compute mode keeps two MPS clients from sharing the GPU.
#[derive(Clone, Copy)]
pub(super) enum Forbidding {
    /// `Prohibited`: no CUDA context at all.
    Prohibited,
    /// `Exclusive_Thread`: a legacy mode that cannot host a server for two processes.
    ExclusiveThread,
    /// A mode this validator does not know.
    Unknown,
}

/// The proven GPU's compute mode allows two MPS clients.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let Some(mode) = served.facts.compute_mode.clone() else {
        let finding = message::compute::not_recorded(context);
        served.unverified(context.request, findings, finding);
        return;
    };
    let forbidding = match mode.as_str() {
        "Default" | "Exclusive_Process" => return,
        "Prohibited" => Forbidding::Prohibited,
        "Exclusive_Thread" => Forbidding::ExclusiveThread,
        not_reported if not_reported.starts_with('[') => {
            let finding = message::compute::not_reported(context, &mode);
            served.unverified(context.request, findings, finding);
            return;
        }
        _ => Forbidding::Unknown,
    };
    findings.push(|| message::compute::forbids_sharing(context, &mode, forbidding));
}
