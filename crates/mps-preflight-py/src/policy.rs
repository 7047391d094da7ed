//! The one place the binding asks `sharing-policy` for a verdict, and so for its messages.
//!
//! Every native function that validates goes through [`judge`] and [`findings`], which ask in
//! [`VOCABULARY`], the reference module's wording: the compat layer keeps the reference's
//! messages exactly without one copied into Python, and the native API (whose keywords are the
//! reference's: `learner_device`, `rank`, `world_size`) says the same. The console command
//! (`mps-preflight`) is the CLI's own `run`, in the CLI's words.

use sharing_policy::{Evidence, Finding, HostFacts, Request, Vocabulary};

/// The words of every message the Python API raises or returns.
pub const VOCABULARY: Vocabulary = Vocabulary::Reference;

/// `request` in [`VOCABULARY`].
fn worded(request: &Request) -> Request {
    Request {
        vocabulary: VOCABULARY,
        ..request.clone()
    }
}

/// The policy's answer to one request on one host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one per call, and the evidence is the common answer"
)]
pub enum Verdict {
    /// Every prerequisite is proven (or the request is null): the evidence.
    Valid(Evidence),
    /// The first unmet prerequisite, and every unmet one (the first of which is it).
    Rejected {
        /// The first finding's stable code (`daemon-unreachable`, …).
        code: &'static str,
        /// The rejection's message, as the CLI prints it after `error: `.
        message: String,
        /// Every unmet prerequisite, as `doctor` lists them.
        findings: Vec<Finding>,
    },
}

/// Validates `request` against `facts`; a rejection comes with every finding.
pub fn judge(request: &Request, facts: &HostFacts) -> Verdict {
    let request = &worded(request);
    match sharing_policy::validate(request, facts) {
        Ok(evidence) => Verdict::Valid(evidence),
        Err(rejection) => Verdict::Rejected {
            code: rejection.code().as_str(),
            message: rejection.to_string(),
            findings: findings(request, facts),
        },
    }
}

/// Every unmet prerequisite of `request` on `facts` (empty when it validates).
pub fn findings(request: &Request, facts: &HostFacts) -> Vec<Finding> {
    sharing_policy::explain(&worded(request), facts)
}
