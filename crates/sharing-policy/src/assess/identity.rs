//! The GPU identity family: both devices' physical GPUs, resolved without CUDA, and that they
//! are one (deliberate changes 1-3). Decides only; the words are in `message/identity.rs`.

use gpu_uuid::{GpuTableView, GpuUuid};

use super::{Findings, Identity, message};
use crate::device::Role;
use crate::gpu::{self, Failure, ReadError};
use crate::{HostFacts, QueryOutcome};

/// Resolves both physical GPUs (deliberate change 1: the learner's from the caller-supplied
/// UUID or, like the collector's, from `CUDA_VISIBLE_DEVICES` and the host table; nothing
/// initialises CUDA) and checks they are one.
pub(super) fn check(
    facts: &HostFacts,
    text: &Result<gpu::TableText<'_>, ReadError>,
    table: &Result<GpuTableView<'_>, ReadError>,
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
        message::identity::unresolved_gpu(words, role, index, &failure)
    };
    let mut identity = Identity::default();
    let mut learner_failure = None;
    if let Some(index) = learner_index {
        match &facts.learner_uuid {
            Some(supplied) => match GpuUuid::parse(supplied) {
                Ok(uuid) => identity.learner = Some(uuid),
                Err(err) => {
                    findings
                        .push(|| message::identity::invalid_learner_uuid(words, supplied, &err));
                }
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
        findings.push(|| message::identity::different_gpus(words, learner, collector));
    }
    identity
}

/// Why a device's GPU could not be resolved, and whether `nvidia-smi` could be run at all.
pub(super) struct Unresolved<'a> {
    pub(super) failure: &'a Failure,
    pub(super) no_nvidia_smi: bool,
}
