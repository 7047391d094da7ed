//! Every answer about one request from one walk of the policy ("decide once"): what
//! [`crate::validate`], [`crate::explain`] and [`crate::warnings`] return, and the ambient
//! state, as one value that renderers (the JSON, the brief line, the Prometheus textfile,
//! doctor's report) only print. Renderers that each judged the facts again could disagree.

use crate::assess::{self, Unmet, Wanted};
use crate::{Evidence, Finding, HostFacts, Rejection, Request, ambient};

/// One request judged against one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verdict {
    /// What [`crate::validate`] returns.
    pub result: Result<Evidence, Rejection>,
    /// What [`crate::explain`] returns: every unmet prerequisite (empty when `result` is `Ok`).
    pub findings: Vec<Finding>,
    /// What [`crate::warnings`] returns: what could not be verified in an accepted request.
    pub warnings: Vec<Finding>,
    /// The request judged as a null one: what the host shows whatever was asked (its pipe
    /// directory, the learner's GPU, whether a daemon answered).
    pub ambient: Evidence,
}

impl Verdict {
    /// Whether the request was validated: the evidence's own `validated`, false for a
    /// rejection and for every null request (which claims nothing).
    pub fn validated(&self) -> bool {
        self.result
            .as_ref()
            .is_ok_and(|evidence| evidence.validated)
    }
}

/// Judges `request` against `facts` once. Equal to calling [`crate::validate`],
/// [`crate::explain`] and [`crate::warnings`] (a property test holds this), for one walk.
pub fn judge(request: &Request, facts: &HostFacts) -> Verdict {
    let null = Request {
        mode: None,
        ..request.clone()
    };
    let ambient = ambient::evidence(&null, facts);
    if request.mode.is_none() {
        return Verdict {
            result: Ok(ambient.clone()),
            findings: Vec::new(),
            warnings: Vec::new(),
            ambient,
        };
    }
    match assess::explicit(request, facts, Wanted::All) {
        Ok((evidence, warnings)) => Verdict {
            result: Ok(evidence),
            findings: Vec::new(),
            warnings,
            ambient,
        },
        Err(Unmet { first, rest }) => Verdict {
            result: Err(first.clone().into()),
            findings: std::iter::once(first).chain(rest).collect(),
            warnings: Vec::new(),
            ambient,
        },
    }
}
