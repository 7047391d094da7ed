//! The GPU identity family: both devices' physical GPUs, resolved without CUDA, and that they
//! are one (deliberate changes 1-3).

use gpu_uuid::{GpuTableView, GpuUuid};

use super::{Findings, Identity, clause};
use crate::device::Role;
use crate::gpu::{self, Failure, HostTableError};
use crate::text::repr;
use crate::{Code, Finding, HostFacts, QueryOutcome, Vocabulary};

/// Resolves both physical GPUs (deliberate change 1: the learner's from the caller-supplied
/// UUID or, like the collector's, from `CUDA_VISIBLE_DEVICES` and the host table; nothing
/// initialises CUDA) and checks they are one.
pub(super) fn check(
    facts: &HostFacts,
    text: &Result<gpu::TableText<'_>, HostTableError>,
    table: &Result<GpuTableView<'_>, HostTableError>,
    learner_index: Option<u32>,
    collector_index: Option<u32>,
    findings: &mut Findings,
) -> Identity {
    let visible = gpu::visible(facts, text, table);
    let resolve = |index| visible.as_ref().map_err(Clone::clone)?.uuid(index);
    let words = findings.words;
    // `nvidia-smi` could not be run at all: the way out is to install it, not to check it.
    let no_nvidia_smi = facts
        .gpu_query
        .as_ref()
        .is_some_and(|query| matches!(query.outcome, QueryOutcome::SpawnFailed { .. }));
    let unresolved = |role, index, failure: &Failure| {
        let failure = Unresolved {
            failure,
            no_nvidia_smi,
        };
        gpu_finding(words, role, index, &failure)
    };
    let mut identity = Identity::default();
    let mut learner_failure = None;
    if let Some(index) = learner_index {
        match &facts.learner_uuid {
            Some(supplied) => match GpuUuid::parse(supplied) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(err) => findings.push(|| learner_uuid_finding(words, supplied, &err)),
            },
            None => match resolve(index) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(failure) => {
                    findings.push(|| unresolved(Role::Learner, index, &failure));
                    learner_failure = Some(failure);
                }
            },
        }
    }
    if let Some(index) = collector_index {
        match resolve(index) {
            Ok(uuid) => identity.collector = Some(uuid),
            Err(failure) => {
                // One host-level problem (no table, a mask that hides every GPU, a MIG mask, an
                // untrusted order, an odd record) is one unmet prerequisite, even though both
                // devices hit it. An index out of range is about the device, so it is kept.
                let same_cause = learner_failure.as_ref() == Some(&failure)
                    && !matches!(failure, Failure::OutOfRange(_));
                if !same_cause {
                    findings.push(|| unresolved(Role::Collector, index, &failure));
                }
            }
        }
    }
    if let (Some(learner), Some(collector)) = (identity.learner, identity.collector)
        && learner != collector
    {
        findings.push(|| different_gpus(words, learner, collector));
    }
    identity
}

/// The finding for a caller-supplied learner UUID that is not a GPU UUID.
fn learner_uuid_finding(words: Vocabulary, supplied: &str, err: &gpu_uuid::UuidError) -> Finding {
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
fn different_gpus(words: Vocabulary, learner: GpuUuid, collector: GpuUuid) -> Finding {
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

/// Why a device's GPU could not be resolved, and whether `nvidia-smi` could be run at all.
struct Unresolved<'a> {
    failure: &'a Failure,
    no_nvidia_smi: bool,
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
fn gpu_finding(words: Vocabulary, role: Role, index: u32, unresolved: &Unresolved<'_>) -> Finding {
    let failure = unresolved.failure;
    let (mps, sharing) = (words.mps(), words.sharing());
    let device = format!("cuda:{index}");
    let code = failure.code(role);
    let mut found = failure.describe();
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
                super::request::lowercase_first(way_out),
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
