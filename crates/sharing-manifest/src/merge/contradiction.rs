//! Evidence that contradicts itself: `validated: true` is written only for an
//! explicit `mps` request whose learner and collector resolved to one GPU, so a record claiming
//! it with another mode or with two GPUs was not written by the validator as it stands.

use sharing_policy::Evidence;

use super::{MergeCode, MergeFinding, RankRecord, json_text, quote_source};

/// The first way `evidence` contradicts itself, if any.
fn contradiction(evidence: &Evidence) -> Option<String> {
    if !evidence.validated {
        return None;
    }
    let mps = Some("mps");
    if evidence.configured.as_deref() != mps {
        return Some(format!(
            "validated is true but configured is {}, not \"mps\"",
            json_text(evidence.configured.as_deref())
        ));
    }
    if evidence.effective.as_deref() != mps {
        return Some(format!(
            "validated is true but effective is {}, not \"mps\"",
            json_text(evidence.effective.as_deref())
        ));
    }
    match (&evidence.learner_gpu_uuid, &evidence.collector_gpu_uuid) {
        (Some(learner), Some(collector)) if learner == collector => None,
        (Some(learner), Some(collector)) => Some(format!(
            "validated is true but the learner's GPU {} and the collector's GPU {} differ",
            json_text(Some(learner)),
            json_text(Some(collector))
        )),
        _ => Some("validated is true but a GPU UUID is missing".to_owned()),
    }
}

/// One finding per input whose evidence contradicts itself.
pub(super) fn check_contradictions(ranks: &[RankRecord], findings: &mut Vec<MergeFinding>) {
    for record in ranks {
        if let Some(why) = contradiction(&record.evidence) {
            findings.push(MergeFinding {
                code: MergeCode::ContradictoryEvidence,
                message: format!(
                    "{} contradicts itself: {why}; the validator never writes that, so this evidence cannot be trusted",
                    quote_source(&record.source)
                ),
                sources: vec![record.source.clone()],
            });
        }
    }
}
