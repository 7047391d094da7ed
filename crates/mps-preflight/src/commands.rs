//! The subcommands that observe or judge a host (probe, capture, check, doctor) and merge ranks,
//! one module each, and what they share: where the facts come from and how a verdict
//! becomes output.

use std::path::Path;

use sharing_policy::{Evidence, HostFacts, Rejection};

use crate::args::RequestArgs;
use crate::output::{Output, json_text};

pub(crate) mod capture;
pub(crate) mod check;
pub(crate) mod codes;
pub(crate) mod doctor;
pub(crate) mod merge;
pub(crate) mod probe;

/// The note for a host on which nothing about MPS was observed (`sharing_policy::nothing_observed`),
/// ending with what that means for what was printed (`consequence`).
pub(crate) fn unobserved_note(facts: &HostFacts, consequence: &str) -> Option<String> {
    sharing_policy::nothing_observed(facts, sharing_policy::Vocabulary::Cli).map(|what| {
        format!("nothing about MPS could be observed on this host: {what}; {consequence}")
    })
}

/// The snapshot, with `--learner-uuid` (when given) replacing the recorded one, exactly as
/// `probe` puts it into a fresh capture (`front::snapshot_facts`).
pub(crate) fn load_snapshot(path: &Path, args: &RequestArgs) -> Result<HostFacts, Output> {
    crate::front::snapshot_facts(
        crate::front::Snapshot::Path(path),
        args.learner_uuid.as_deref(),
    )
    .map_err(Output::input)
}

/// `facts` with `--learner-uuid` (when given) replacing the recorded learner UUID.
pub(crate) fn with_learner_uuid(mut facts: HostFacts, args: &RequestArgs) -> HostFacts {
    if let Some(uuid) = &args.learner_uuid {
        facts.learner_uuid = Some(uuid.clone());
    }
    facts
}

/// Exit 0 with the evidence as one JSON object, or exit 1 with the rejection.
pub(crate) fn evidence_output(result: &Result<Evidence, Rejection>) -> Output {
    match result {
        Ok(evidence) => Output::data(json_text(&sharing_manifest::evidence_to_json(evidence))),
        Err(rejection) => Output::rejected(rejection.to_string()),
    }
}
