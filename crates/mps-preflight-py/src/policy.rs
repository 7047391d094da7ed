//! The one place the binding asks `sharing-policy` for a verdict, and so for its messages.
//!
//! Every native function that validates goes through [`judge`] and [`findings`], in the
//! words [`vocabulary`] chooses for the API that asked: the compat layer (the reference
//! module's drop-in) keeps the reference's wording exactly, without a message copied into
//! Python; the native API says what the CLI says, word for word (its keywords are the CLI's
//! flags: `request`, `learner_device`, `backend`, ...), as does the console command.

use sharing_policy::{Evidence, Finding, HostFacts, Request, Vocabulary};

/// The words of the messages for the API that asked: the reference's for `compat`, the
/// CLI's for the native API.
pub fn vocabulary(compat: bool) -> Vocabulary {
    if compat {
        Vocabulary::Reference
    } else {
        Vocabulary::Cli
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

/// Validates `request` against `facts`; a rejection comes with every finding, in the
/// request's vocabulary ([`vocabulary`], set by `Spec::request`).
pub fn judge(request: &Request, facts: &HostFacts) -> Verdict {
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
    sharing_policy::explain(request, facts)
}
