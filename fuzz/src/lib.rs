//! What every validator fuzz target checks, in one place.
#![forbid(unsafe_code)]

use sharing_policy::{Evidence, HostFacts, Request, explain, validate};

/// Runs `validate` and `explain` on `facts` and asserts they agree: `explain` is empty exactly
/// when `validate` is `Ok`, its first finding is the rejection, and a passing explicit request
/// is marked validated. Returns the evidence of a pass, for target-specific checks.
pub fn validate_and_explain_agree(request: &Request, facts: &HostFacts) -> Option<Evidence> {
    let verdict = validate(request, facts);
    let findings = explain(request, facts);
    assert_eq!(
        verdict.is_ok(),
        findings.is_empty(),
        "validate and explain disagree: {verdict:?} vs {findings:?}"
    );
    match (verdict, findings.first()) {
        (Err(rejection), Some(first)) => {
            assert_eq!(rejection.code(), first.code);
            None
        }
        (Ok(evidence), _) => {
            if request.mode.is_some() {
                assert!(evidence.validated, "explicit request passed unvalidated");
            }
            Some(evidence)
        }
        (Err(_), None) => None,
    }
}
