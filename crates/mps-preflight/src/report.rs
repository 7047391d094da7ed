//! The JSON reports this binary builds itself (`doctor --format json`), as types, so that the
//! JSON and its schema (`mps-preflight schema doctor`) come from one definition.

use serde::Serialize;
use serde_json::Value;
use sharing_policy::{Evidence, Finding};

/// `doctor --format json`: whether anything blocks the request, every unmet prerequisite, and
/// the evidence when the request validates.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct DoctorReport<'a> {
    /// True when nothing blocks the request (then `findings` is empty).
    pub(crate) ok: bool,
    /// Every unmet prerequisite, in the validator's order; the first is what `probe` rejects
    /// with.
    pub(crate) findings: &'a [Finding],
    /// Prerequisites that could not be verified on this host and do not block the request
    /// (unless `--require-verified`), each with how to verify it.
    pub(crate) warnings: &'a [Finding],
    /// The evidence `probe` would print (as `sharing_manifest::evidence_to_json` writes it), or
    /// null when the request is rejected.
    #[schemars(with = "Option<Evidence>")]
    pub(crate) evidence: Option<Value>,
    /// With `--learner-pid` and `--collector-pid`: the attestation of the two processes
    /// (`attest`'s), absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) attestation: Option<&'a sharing_policy::Attestation>,
}
