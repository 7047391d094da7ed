//! The GPU identity family: both devices' physical GPUs, resolved without CUDA, and that they
//! are one (deliberate changes 1-3).

use gpu_uuid::{GpuTableView, GpuUuid};

use super::{Findings, Identity, MPS, SHARING, clause};
use crate::device::Role;
use crate::gpu::{self, Failure, HostTableError};
use crate::text::repr;
use crate::{Code, Finding, HostFacts};

/// Resolves both physical GPUs (deliberate change 1: the learner's from the caller-supplied
/// UUID or, like the collector's, from `CUDA_VISIBLE_DEVICES` and the host table; nothing
/// initialises CUDA) and checks they are one.
pub(super) fn check(
    facts: &HostFacts,
    table: &Result<GpuTableView<'_>, HostTableError>,
    learner_index: Option<u32>,
    collector_index: Option<u32>,
    findings: &mut Findings,
) -> Identity {
    let visible = gpu::visible(&facts.env, table);
    let resolve = |index| visible.as_ref().map_err(Clone::clone)?.uuid(index);
    let mut identity = Identity::default();
    let mut learner_failure = None;
    if let Some(index) = learner_index {
        match &facts.learner_uuid {
            Some(supplied) => match GpuUuid::parse(supplied) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(err) => findings.push(|| Finding::new(
                    Code::LearnerUuidUnresolved,
                    format!(
                        "{SHARING} could not resolve the learner CUDA device UUID: the supplied learner UUID {} is not a GPU UUID ({err}). Pass the UUID the learner's CUDA runtime reports (GPU-…), or none to resolve it from CUDA_VISIBLE_DEVICES.",
                        repr(supplied)
                    ),
                    format!("learner UUID {}", repr(supplied)),
                    "pass the learner's GPU UUID as GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".to_owned(),
                )),
            },
            None => match resolve(index) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(failure) => {
                    findings.push(|| gpu_finding(Role::Learner, index, &failure));
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
                    findings.push(|| gpu_finding(Role::Collector, index, &failure));
                }
            }
        }
    }
    if let (Some(learner), Some(collector)) = (identity.learner, identity.collector)
        && learner != collector
    {
        findings.push(|| different_gpus(learner, collector));
    }
    identity
}

/// The finding for two devices that resolve to two physical GPUs.
fn different_gpus(learner: GpuUuid, collector: GpuUuid) -> Finding {
    let (l, c) = (learner.canonical_token(), collector.canonical_token());
    Finding::new(
        Code::DifferentGpus,
        format!(
            "{MPS} requires the learner and collector to share one physical GPU. Resolved UUIDs: learner={}, collector={}. Give both processes the same GPU, ideally as CUDA_VISIBLE_DEVICES={learner}.",
            repr(&l),
            repr(&c)
        ),
        format!("learner={learner}, collector={collector}"),
        format!(
            "run both processes on one GPU, e.g. with CUDA_VISIBLE_DEVICES={learner} and device cuda:0"
        ),
    )
}

/// The finding for a device whose GPU could not be resolved.
fn gpu_finding(role: Role, index: u32, failure: &Failure) -> Finding {
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
                "{MPS} could not resolve the collector CUDA UUID: the {} device {device} cannot be mapped to a physical GPU: {what}.",
                role.name()
            ),
            "set CUDA_VISIBLE_DEVICES to a full GPU UUID (GPU-…), or unset it".to_owned(),
        ),
        (Code::AmbiguousDeviceOrder, _) => (
            format!(
                "{MPS} cannot trust index-based device mapping for the {} device {device}: {what}, so CUDA's device order may differ from nvidia-smi's. Set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or export CUDA_DEVICE_ORDER=PCI_BUS_ID.",
                role.name()
            ),
            "set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or export CUDA_DEVICE_ORDER=PCI_BUS_ID".to_owned(),
        ),
        (Code::InconsistentSnapshot, _) => (
            format!("{MPS} cannot use this host snapshot: {what}. Capture the host again with mps-preflight."),
            "capture the host again with mps-preflight".to_owned(),
        ),
        (Code::CudaUnavailable, Failure::NoneVisible(_)) => (
            format!(
                "{SHARING} requires CUDA, but CUDA is unavailable for the learner device {device}: {what}. Set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…) or unset it."
            ),
            "set CUDA_VISIBLE_DEVICES to the GPU's UUID (GPU-…), or unset it".to_owned(),
        ),
        (Code::CudaUnavailable, _) => (
            format!(
                "{SHARING} requires CUDA, but CUDA is unavailable for the learner device {device}: {what}. Check the NVIDIA driver with `nvidia-smi`, or pass the learner's GPU UUID."
            ),
            "check the NVIDIA driver with `nvidia-smi`, or pass the learner's GPU UUID".to_owned(),
        ),
        (Code::DeviceOutOfRange, _) => (
            format!(
                "{SHARING} learner device {device} is out of range; {what}. Use a smaller index, or widen CUDA_VISIBLE_DEVICES."
            ),
            "use an index below the number of visible GPUs, or widen CUDA_VISIBLE_DEVICES".to_owned(),
        ),
        _ => (
            format!(
                "{MPS} could not resolve the collector CUDA UUID for '{device}' ({what}); run nvidia-smi --query-gpu=index,uuid --format=csv and verify the rank-local mask."
            ),
            "run nvidia-smi --query-gpu=index,uuid --format=csv and verify the rank-local CUDA_VISIBLE_DEVICES".to_owned(),
        ),
    };
    Finding::new(code, message, found, fix)
}
