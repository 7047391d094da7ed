//! Merging the per-rank evidence of one run, and reporting every inconsistency.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::hash::Hash;

use serde_json::Value;
use sharing_policy::Evidence;

use crate::json::evidence_from_json;

mod contradiction;
mod hosts;
mod pipe;

/// A stable, kebab-case code for one kind of inconsistency. Scripts may match on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum MergeCode {
    /// Nothing was given to merge.
    NoEvidence,
    /// An input is neither an evidence object nor a manifest holding one.
    NotEvidence,
    /// An input's evidence contradicts itself (`validated` with another mode or two GPUs).
    ContradictoryEvidence,
    /// A `world_size` below 1.
    InvalidWorldSize,
    /// Ranks disagree on `world_size`.
    WorldSizeMismatch,
    /// A rank outside `0..world_size`.
    RankOutOfRange,
    /// One rank recorded more than once.
    DuplicateRank,
    /// Ranks of `0..world_size` with no evidence.
    MissingRank,
    /// Ranks disagree on the configured mode.
    ConfiguredMismatch,
    /// Ranks disagree on the effective mode.
    EffectiveMismatch,
    /// Some ranks validated, others did not.
    ValidatedMismatch,
    /// Ranks with one pipe directory name different control pipes (path or kind).
    ControlPipeMismatch,
    /// Ranks with one pipe directory saw different control daemons (`daemon_pid`).
    DaemonMismatch,
    /// Ranks with one pipe directory saw different MPS servers (`server_pid`).
    ServerMismatch,
    /// Ranks with one pipe directory claim one daemon but disagree on its identity: its GPU
    /// scope (`daemon_visible_devices`) or its mode (`daemon_multiuser`), where known.
    DaemonIdentityMismatch,
}

impl MergeCode {
    /// Every code, in the order the checks run.
    pub const ALL: [Self; 15] = [
        Self::NoEvidence,
        Self::NotEvidence,
        Self::ContradictoryEvidence,
        Self::InvalidWorldSize,
        Self::WorldSizeMismatch,
        Self::RankOutOfRange,
        Self::DuplicateRank,
        Self::MissingRank,
        Self::ConfiguredMismatch,
        Self::EffectiveMismatch,
        Self::ValidatedMismatch,
        Self::ControlPipeMismatch,
        Self::DaemonMismatch,
        Self::ServerMismatch,
        Self::DaemonIdentityMismatch,
    ];

    /// The code as printed: `duplicate-rank`, `world-size-mismatch`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoEvidence => "no-evidence",
            Self::NotEvidence => "not-evidence",
            Self::ContradictoryEvidence => "contradictory-evidence",
            Self::InvalidWorldSize => "invalid-world-size",
            Self::WorldSizeMismatch => "world-size-mismatch",
            Self::RankOutOfRange => "rank-out-of-range",
            Self::DuplicateRank => "duplicate-rank",
            Self::MissingRank => "missing-rank",
            Self::ConfiguredMismatch => "configured-mismatch",
            Self::EffectiveMismatch => "effective-mismatch",
            Self::ValidatedMismatch => "validated-mismatch",
            Self::ControlPipeMismatch => "control-pipe-mismatch",
            Self::DaemonMismatch => "daemon-mismatch",
            Self::ServerMismatch => "server-mismatch",
            Self::DaemonIdentityMismatch => "daemon-identity-mismatch",
        }
    }
}

impl fmt::Display for MergeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One inconsistency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeFinding {
    /// What kind of inconsistency.
    pub code: MergeCode,
    /// What was found, naming the inputs.
    pub message: String,
    /// The names of the inputs involved, in input order.
    pub sources: Vec<String>,
}

impl fmt::Display for MergeFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// One input that held evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankRecord {
    /// The input's name (a file name, for the CLI).
    pub source: String,
    /// Its evidence.
    pub evidence: Evidence,
    /// Its attestation (`attest`), when its manifest records one.
    pub attestation: Option<crate::RankAttestation>,
}

/// The outcome of [`merge`]: the evidence found and every inconsistency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeReport {
    /// The inputs that held evidence, in input order.
    pub ranks: Vec<RankRecord>,
    /// Every inconsistency, in the order of [`MergeCode::ALL`]; empty when consistent.
    pub findings: Vec<MergeFinding>,
}

impl MergeReport {
    /// True when there is no finding.
    pub fn is_consistent(&self) -> bool {
        self.findings.is_empty()
    }

    /// The run as JSON: `consistent`, then `world_size` and the three modes when every rank
    /// agrees on them (else `null`), the ranks sorted by rank (`rank`, `source`, `evidence`),
    /// and the findings (`code`, `message`, `sources`).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.summary()).unwrap_or(Value::Null)
    }
}

/// The most ranks or inputs a message lists before it says "and N more".
const LIST_LIMIT: usize = 8;

/// Checks the per-rank evidence of one run.
///
/// Each input is `(name, value)`, where `value` is an evidence object or a manifest holding
/// one under `cuda_process_sharing` (see [`evidence_from_json`]). The checks, each reported
/// with its [`MergeCode`]:
///
/// - every input holds evidence;
/// - every `world_size` is at least 1, and all agree;
/// - every rank is in `0..world_size`, appears once, and (when the world sizes agree) every
///   rank of `0..world_size` appears;
/// - all ranks agree on `configured`, `effective` and `validated`;
/// - no evidence contradicts itself (`validated: true` with a mode other than `mps`, or with
///   two different or missing GPU UUIDs);
/// - ranks on one host (`host_name`) whose `pipe_directory` names one control pipe (compared lexically: `/p`, `/p/`,
///   `/p/./` and `//p` are one; symbolic links are not resolved) name the same control pipe
///   and kind, and agree on the control daemon (`daemon_pid`) and the MPS server
///   (`server_pid`), where those were seen (`null` is not a disagreement: an idle daemon
///   has no server yet).
///
/// Ranks on different hosts legitimately see different daemons, so these checks run per host.
/// Evidence recorded before `host_name` existed (`null`) is one host of its own: such ranks on
/// different nodes that use the same path (the default `/tmp/nvidia-mps`) look like one host.
pub fn merge(inputs: &[(String, Value)]) -> MergeReport {
    let mut findings = Vec::new();
    let mut ranks = Vec::new();
    for (source, value) in inputs {
        match evidence_from_json(value) {
            Ok(evidence) => ranks.push(RankRecord {
                source: source.clone(),
                evidence,
                attestation: crate::attestation_of(value),
            }),
            Err(why) => findings.push(MergeFinding {
                code: MergeCode::NotEvidence,
                message: format!(
                    "{} holds no CUDA process-sharing evidence (an evidence object, or a manifest with one under `cuda_process_sharing`): {why}",
                    quote_source(source)
                ),
                sources: vec![source.clone()],
            }),
        }
    }
    if inputs.is_empty() {
        findings.push(MergeFinding {
            code: MergeCode::NoEvidence,
            message: "no evidence to merge: give one evidence or manifest file per rank".to_owned(),
            sources: Vec::new(),
        });
    }
    contradiction::check_contradictions(&ranks, &mut findings);
    check_ranks(&ranks, &mut findings);
    check_modes(&ranks, &mut findings);
    hosts::check_hosts(&ranks, &mut findings);
    findings.sort_by_key(|finding| finding.code);
    MergeReport { ranks, findings }
}

fn check_ranks(ranks: &[RankRecord], findings: &mut Vec<MergeFinding>) {
    for record in ranks {
        let Evidence {
            rank, world_size, ..
        } = record.evidence;
        let source = quote_source(&record.source);
        if world_size < 1 {
            findings.push(MergeFinding {
                code: MergeCode::InvalidWorldSize,
                message: format!(
                    "{source} records world_size {world_size}; a run has at least one rank"
                ),
                sources: vec![record.source.clone()],
            });
        } else if rank < 0 || rank >= world_size {
            findings.push(MergeFinding {
                code: MergeCode::RankOutOfRange,
                message: format!(
                    "{source} records rank {rank}, outside 0..{world_size} (its world_size is {world_size})"
                ),
                sources: vec![record.source.clone()],
            });
        }
    }

    let world_sizes = group(ranks, |evidence| evidence.world_size);
    if world_sizes.len() > 1 {
        findings.push(mismatch(
            MergeCode::WorldSizeMismatch,
            "ranks disagree on world_size",
            &world_sizes,
            ToString::to_string,
        ));
    }

    for (rank, sources) in group(ranks, |evidence| evidence.rank) {
        if sources.len() > 1 {
            findings.push(MergeFinding {
                code: MergeCode::DuplicateRank,
                message: format!(
                    "rank {rank} appears {} times, in {}; each rank records its evidence exactly once",
                    sources.len(),
                    quoted_list(&sources)
                ),
                sources,
            });
        }
    }

    if let [(world_size, _)] = world_sizes.as_slice()
        && *world_size >= 1
    {
        let present: BTreeSet<i64> = ranks
            .iter()
            .map(|record| record.evidence.rank)
            .filter(|rank| (0..*world_size).contains(rank))
            .collect();
        let missing = gaps(&present, *world_size);
        if !missing.is_empty() {
            let count: i128 = missing
                .iter()
                .map(|(low, high)| i128::from(*high) - i128::from(*low) + 1)
                .sum();
            let shown: Vec<String> = missing
                .iter()
                .map(|(low, high)| {
                    if low == high {
                        low.to_string()
                    } else {
                        format!("{low}-{high}")
                    }
                })
                .collect();
            let noun = if count == 1 { "rank" } else { "ranks" };
            findings.push(MergeFinding {
                code: MergeCode::MissingRank,
                message: format!(
                    "world_size is {world_size} but no evidence was given for {noun} {} ({} of {world_size} missing; {} given)",
                    limited(&shown),
                    count,
                    ranks.len()
                ),
                sources: Vec::new(),
            });
        }
    }
}

fn check_modes(ranks: &[RankRecord], findings: &mut Vec<MergeFinding>) {
    let configured = group(ranks, |evidence| evidence.configured.clone());
    if configured.len() > 1 {
        findings.push(mismatch(
            MergeCode::ConfiguredMismatch,
            "ranks disagree on the configured mode",
            &configured,
            |mode| json_text(mode.as_deref()),
        ));
    }
    let effective = group(ranks, |evidence| evidence.effective.clone());
    if effective.len() > 1 {
        findings.push(mismatch(
            MergeCode::EffectiveMismatch,
            "ranks disagree on the effective mode",
            &effective,
            |mode| json_text(mode.as_deref()),
        ));
    }
    let validated = group(ranks, |evidence| evidence.validated);
    if validated.len() > 1 {
        findings.push(mismatch(
            MergeCode::ValidatedMismatch,
            "ranks disagree on validated (a run shares the GPU on every rank or on none)",
            &validated,
            bool::to_string,
        ));
    }
}

/// Distinct values of `key` in first-seen order, each with the sources holding it. A hash index
/// finds a value's group, so grouping 10,000 ranks by rank is linear, not quadratic.
fn group<K: Eq + Hash + Clone>(
    ranks: &[RankRecord],
    key: impl Fn(&Evidence) -> K,
) -> Vec<(K, Vec<String>)> {
    let mut groups: Vec<(K, Vec<String>)> = Vec::new();
    let mut index: HashMap<K, usize> = HashMap::new();
    for record in ranks {
        let value = key(&record.evidence);
        if let Some((_, sources)) = index.get(&value).and_then(|at| groups.get_mut(*at)) {
            sources.push(record.source.clone());
        } else {
            index.insert(value.clone(), groups.len());
            groups.push((value, vec![record.source.clone()]));
        }
    }
    groups
}

/// "`what`: 2 in 'a.json', 'b.json'; 3 in 'c.json'"
fn mismatch<K>(
    code: MergeCode,
    what: &str,
    groups: &[(K, Vec<String>)],
    show: impl Fn(&K) -> String,
) -> MergeFinding {
    let parts: Vec<String> = groups
        .iter()
        .map(|(value, sources)| format!("{} in {}", show(value), quoted_list(sources)))
        .collect();
    MergeFinding {
        code,
        message: format!("{what}: {}", parts.join("; ")),
        sources: groups
            .iter()
            .flat_map(|(_, sources)| sources.iter().cloned())
            .collect(),
    }
}

fn quoted_list(sources: &[String]) -> String {
    let quoted: Vec<String> = sources.iter().map(|source| quote_source(source)).collect();
    limited(&quoted)
}

/// An input's name or a pipe directory as messages show it: quoted, with newlines and control
/// characters escaped, so it cannot break the one-line-per-finding output or forge a line.
fn quote_source(source: &str) -> String {
    sharing_policy::quote_name(source.as_bytes())
}

fn limited(items: &[String]) -> String {
    if items.len() <= LIST_LIMIT {
        return items.join(", ");
    }
    let shown: Vec<&str> = items.iter().take(LIST_LIMIT).map(String::as_str).collect();
    format!("{} and {} more", shown.join(", "), items.len() - LIST_LIMIT)
}

fn json_text(value: Option<&str>) -> String {
    Value::from(value).to_string()
}

/// The ranges of `0..world_size` not in `present`, as inclusive `(low, high)` pairs,
/// without enumerating the (possibly huge) range.
fn gaps(present: &BTreeSet<i64>, world_size: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut next: i64 = 0;
    for &rank in present {
        if rank > next {
            out.push((next, rank - 1));
        }
        next = rank.saturating_add(1);
    }
    if next < world_size {
        out.push((next, world_size - 1));
    }
    out
}

#[cfg(test)]
mod tests;
