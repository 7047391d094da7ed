//! The identity family's words: a learner UUID that is not one, a device whose physical GPU
//! could not be resolved, and two devices on two GPUs.

use gpu_uuid::GpuUuid;

use crate::assess::identity::Unresolved;
use crate::assess::request;
use crate::device::Role;
use crate::gpu::Failure;
use crate::text::{clause, repr};
use crate::{Code, Finding, Vocabulary};

/// The finding for a caller-supplied learner UUID that is not a GPU UUID.
pub(in crate::assess) fn invalid_learner_uuid(
    words: Vocabulary,
    supplied: &str,
    err: &gpu_uuid::UuidError,
) -> Finding {
    let (message, found, fix) = match words {
        Vocabulary::Reference => (
            format!(
                "training.cuda_process_sharing could not resolve the learner CUDA device UUID: the supplied learner UUID {} is not a GPU UUID ({err}). Pass the UUID the learner's CUDA runtime reports (GPU-…), or none to resolve it from CUDA_VISIBLE_DEVICES.",
                repr(supplied)
            ),
            format!("learner UUID {}", repr(supplied)),
            "pass the learner's GPU UUID as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
        ),
        Vocabulary::Cli => (
            format!(
                "--request mps could not resolve the learner CUDA device UUID: --learner-uuid {} is not a GPU UUID ({err}). Pass as --learner-uuid the UUID the learner's CUDA runtime reports (GPU-…), or leave it out to resolve the learner from CUDA_VISIBLE_DEVICES.",
                repr(supplied)
            ),
            format!("--learner-uuid {}", repr(supplied)),
            "pass --learner-uuid GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
        ),
    };
    Finding::new(
        Code::LearnerUuidUnresolved,
        words,
        message,
        found,
        fix.to_owned(),
    )
}

/// The finding for two devices that resolve to two physical GPUs.
pub(in crate::assess) fn different_gpus(
    words: Vocabulary,
    learner: GpuUuid,
    collector: GpuUuid,
) -> Finding {
    let (l, c) = (learner.canonical_token(), collector.canonical_token());
    Finding::new(
        Code::DifferentGpus,
        words,
        format!(
            "{} requires the learner and collector to share one physical GPU. Resolved UUIDs: learner={}, collector={}. Give both processes the same GPU, ideally as CUDA_VISIBLE_DEVICES={learner}.",
            words.mps(),
            repr(&l),
            repr(&c)
        ),
        format!("learner={learner}, collector={collector}"),
        format!(
            "run both processes on one GPU, e.g. with CUDA_VISIBLE_DEVICES={learner} and device cuda:0"
        ),
    )
}

/// How to get past "CUDA is unavailable" without a host GPU table.
fn no_table_way_out(words: Vocabulary, no_nvidia_smi: bool) -> &'static str {
    match (words, no_nvidia_smi) {
        (Vocabulary::Reference, false) => {
            "Check the NVIDIA driver with `nvidia-smi`, or pass the learner's GPU UUID"
        }
        (Vocabulary::Reference, true) => {
            "Install the NVIDIA driver tools (nvidia-smi), or pass the learner's GPU UUID through torch_module="
        }
        (Vocabulary::Cli, false) => {
            "Check the NVIDIA driver with `nvidia-smi`, or pass --learner-uuid with the GPU UUID the learner's CUDA runtime reports"
        }
        (Vocabulary::Cli, true) => {
            "Install the NVIDIA driver tools (nvidia-smi), or pass --learner-uuid with the GPU UUID the learner's CUDA runtime reports"
        }
    }
}

/// The finding for a device whose GPU could not be resolved.
pub(in crate::assess) fn unresolved_gpu(
    words: Vocabulary,
    role: Role,
    index: u32,
    unresolved: &Unresolved<'_>,
) -> Finding {
    let failure = unresolved.failure;
    let (mps, sharing) = (words.mps(), words.sharing());
    let device = format!("cuda:{index}");
    let code = failure.code(role);
    let mut found = crate::message::gpu::failure(failure);
    if let (Role::Collector, Failure::OutOfRange(_)) = (role, failure) {
        found = format!("{device} is out of range; {found}");
    }
    let what = clause(&found);
    let (message, fix) = match (code, failure) {
        (Code::MigVisibilityUnsupported, _) => (
            // Users grep for the phrase every unresolvable collector gets; a MIG mask hides
            // both devices' GPUs, whichever is reported.
            format!(
                "{mps} could not resolve the collector CUDA UUID: the {} device {device} cannot be mapped to a physical GPU: {what}.",
                role.name()
            ),
            "set CUDA_VISIBLE_DEVICES to a full GPU UUID (GPU-…), or unset it".to_owned(),
        ),
        (Code::AmbiguousDeviceOrder, _) => (
            format!(
                "{mps} cannot trust index-based device mapping for the {} device {device}: {what}, so CUDA's device order may differ from nvidia-smi's. Set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or export CUDA_DEVICE_ORDER=PCI_BUS_ID.",
                role.name()
            ),
            "set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or export CUDA_DEVICE_ORDER=PCI_BUS_ID".to_owned(),
        ),
        (Code::InconsistentSnapshot, _) => (
            format!("{mps} cannot use this host snapshot: {what}. Capture the host again with mps-preflight."),
            "capture the host again with mps-preflight".to_owned(),
        ),
        (Code::CudaUnavailable, Failure::NoneVisible(_)) => (
            format!(
                "{sharing} requires CUDA, but CUDA is unavailable for the learner device {device}: {what}. Set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…) or unset it."
            ),
            "set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or unset it".to_owned(),
        ),
        (Code::CudaUnavailable, _) => {
            let way_out = no_table_way_out(words, unresolved.no_nvidia_smi);
            (
                format!(
                    "{sharing} requires CUDA, but CUDA is unavailable for the learner device {device}: {what}. {way_out}."
                ),
                request::lowercase_first(way_out),
            )
        }
        (Code::DeviceOutOfRange, _) => (
            format!(
                "{sharing} learner device {device} is out of range; {what}. Use a smaller index, or widen CUDA_VISIBLE_DEVICES."
            ),
            "use an index below the number of visible GPUs, or widen CUDA_VISIBLE_DEVICES".to_owned(),
        ),
        _ => {
            let mask = match words {
                Vocabulary::Reference => ("the rank-local mask", "the rank-local CUDA_VISIBLE_DEVICES"),
                Vocabulary::Cli => ("the CUDA_VISIBLE_DEVICES this process runs with", "the CUDA_VISIBLE_DEVICES this process runs with"),
            };
            (
                format!(
                    "{mps} could not resolve the collector CUDA UUID for '{device}' ({what}); run nvidia-smi --query-gpu=index,uuid --format=csv and verify {}.",
                    mask.0
                ),
                format!("run nvidia-smi --query-gpu=index,uuid --format=csv and verify {}", mask.1),
            )
        }
    };
    Finding::new(code, words, message, found, fix)
}
