//! Helpers shared by the tests.

use serde_json::{Value, json};
use sharing_policy::{Code, HostFacts, Request, explain, validate};

/// An explicit request for `learner`/`collector` with the default backend, rank 0 of 1.
pub(crate) fn mps(learner: &str, collector: Option<&str>) -> Request {
    Request::new(Some("mps"), learner, collector, "mjwarp")
}

/// A null (ambient) request.
pub(crate) fn ambient(learner: &str, collector: Option<&str>) -> Request {
    Request::new(None, learner, collector, "mjwarp")
}

/// The rejection code, or `None` when validated.
pub(crate) fn code(request: &Request, facts: &HostFacts) -> Option<Code> {
    validate(request, facts).err().map(|r| r.code())
}

/// The rejection message; panics when the request validates.
pub(crate) fn message(request: &Request, facts: &HostFacts) -> String {
    match validate(request, facts) {
        Ok(evidence) => panic!("expected a rejection, got {evidence:?}"),
        Err(rejection) => rejection.to_string(),
    }
}

/// The outcome as JSON: `{"validated": evidence}` or `{"rejected": {code, message}}`.
pub(crate) fn outcome(request: &Request, facts: &HostFacts) -> Value {
    match validate(request, facts) {
        Ok(evidence) => json!({ "evidence": evidence }),
        Err(rejection) => {
            json!({ "rejected": { "code": rejection.code(), "message": rejection.message() } })
        }
    }
}

/// `explain` as JSON: code, found and fix of each finding.
pub(crate) fn findings(request: &Request, facts: &HostFacts) -> Value {
    explain(request, facts)
        .into_iter()
        .map(|f| json!({ "code": f.code, "found": f.found, "fix": f.fix }))
        .collect()
}
