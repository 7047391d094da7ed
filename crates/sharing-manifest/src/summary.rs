//! The merged run as `mps-preflight merge` prints it: a serialisable view of a [`MergeReport`],
//! so that its JSON and its JSON Schema (feature `schemars`) come from one type.

use serde::{Serialize, Serializer};
use sharing_policy::Evidence;

use crate::json::evidence_to_json;
use crate::merge::{MergeCode, MergeReport, RankRecord};

/// The merged run: whether the ranks agree, what they agree on, each rank's evidence and every
/// inconsistency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct MergeSummary {
    /// True when no inconsistency was found.
    pub consistent: bool,
    /// The `world_size` every rank recorded; null when they disagree or there is no rank.
    pub world_size: Option<i64>,
    /// The configured mode every rank recorded; null when they disagree, or all recorded null.
    pub configured: Option<String>,
    /// The effective mode every rank recorded; null when they disagree, or all recorded null.
    pub effective: Option<String>,
    /// Whether every rank validated (true) or none did (false); null when they disagree.
    pub validated: Option<bool>,
    /// The inputs that held evidence, sorted by rank.
    pub ranks: Vec<MergedRank>,
    /// Every inconsistency, in the order the checks run; empty when consistent.
    pub findings: Vec<MergedFinding>,
}

/// One rank's record in the merged run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct MergedRank {
    /// The rank its evidence names.
    pub rank: i64,
    /// The input it came from (a file name, for the CLI).
    pub source: String,
    /// Its evidence, exactly as recorded in a manifest.
    #[serde(serialize_with = "serialize_evidence")]
    pub evidence: Evidence,
    /// Its attestation (`attest`), when its manifest records one; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attestation: Option<crate::RankAttestation>,
}

/// One inconsistency between ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct MergedFinding {
    /// What kind of inconsistency.
    pub code: MergeCode,
    /// What was found, naming the inputs.
    pub message: String,
    /// The names of the inputs involved, in input order.
    pub sources: Vec<String>,
}

impl MergeReport {
    /// The merged run: `world_size` and the three modes where every rank agrees on them,
    /// the ranks sorted by rank, and the findings.
    pub fn summary(&self) -> MergeSummary {
        let mut sorted: Vec<&RankRecord> = self.ranks.iter().collect();
        sorted.sort_by_key(|record| record.evidence.rank);
        MergeSummary {
            consistent: self.is_consistent(),
            world_size: self.agreed(|evidence| Some(evidence.world_size)),
            configured: self.agreed(|evidence| evidence.configured.clone()),
            effective: self.agreed(|evidence| evidence.effective.clone()),
            validated: self.agreed(|evidence| Some(evidence.validated)),
            ranks: sorted
                .into_iter()
                .map(|record| MergedRank {
                    rank: record.evidence.rank,
                    source: record.source.clone(),
                    evidence: record.evidence.clone(),
                    attestation: record.attestation,
                })
                .collect(),
            findings: self
                .findings
                .iter()
                .map(|finding| MergedFinding {
                    code: finding.code,
                    message: finding.message.clone(),
                    sources: finding.sources.clone(),
                })
                .collect(),
        }
    }

    /// The value of `key` when every rank has the same one, else `None`.
    fn agreed<T: PartialEq>(&self, key: impl Fn(&Evidence) -> Option<T>) -> Option<T> {
        let mut values = self.ranks.iter().map(|record| key(&record.evidence));
        let first = values.next()??;
        values
            .all(|value| value.as_ref() == Some(&first))
            .then_some(first)
    }
}

/// The evidence as [`evidence_to_json`] writes it into manifests, so both agree by construction.
fn serialize_evidence<S: Serializer>(
    evidence: &Evidence,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    evidence_to_json(evidence).serialize(serializer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_codes_serialise_as_they_print() {
        for code in MergeCode::ALL {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::Value::from(code.as_str()))
            );
        }
    }
}
