//! The one place the binding asks `sharing-policy` for a verdict, and so for its messages.
//!
//! Every native function that validates goes through [`judge`] and [`findings`], in the
//! words the request was built with (`mps_preflight::front::Wording`, chosen by
//! `Spec::wording`): the compat layer (the reference module's drop-in) keeps the reference's
//! wording exactly, without a message copied into Python; the native API says what the CLI
//! says, word for word (its keywords are the CLI's flags: `request`, `learner_device`,
//! `backend`, ...), as does the console command.

use sharing_policy::{Evidence, Finding, HostFacts, Request};

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

/// Validates `request` against `facts` in one walk ([`sharing_policy::judge`], the CLI's one
/// decision too); a rejection comes with every finding, in the request's vocabulary
/// (set by `Spec::low`).
pub fn judge(request: &Request, facts: &HostFacts) -> Verdict {
    let verdict = sharing_policy::judge(request, facts);
    match verdict.result {
        Ok(evidence) => Verdict::Valid(evidence),
        Err(rejection) => Verdict::Rejected {
            code: rejection.code().as_str(),
            message: rejection.to_string(),
            findings: verdict.findings,
        },
    }
}

/// Every unmet prerequisite of `request` on `facts` (empty when it validates).
pub fn findings(request: &Request, facts: &HostFacts) -> Vec<Finding> {
    sharing_policy::explain(request, facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;
    use mps_preflight::front::{Snapshot, snapshot_facts};

    /// The drop-in names only its own parameters. On every recorded host, no
    /// message or fix of a compat request names a command-line flag (`--learner-uuid`,
    /// `--devices`, …) or a keyword compat does not have (`learner_uuid=`); `nvidia-smi`'s own
    /// arguments and the daemon's `-d` are commands to run, not parameters.
    #[test]
    fn compat_messages_name_compat_s_parameters_only() {
        let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts");
        let allowed = ["--query-gpu", "--format", "--ipc=host"];
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let Ok(facts) = snapshot_facts(Snapshot::Path(&path), None) else {
                continue;
            };
            for (learner, collector) in [
                ("cuda:0", Some("cuda:0")),
                ("gpu0", Some("cuda:1")),
                ("cuda:0", None),
            ] {
                let mut spec = Spec::new(Some("mps"), learner, collector, "mjwarp");
                spec.compat = true;
                let request = spec.low().unwrap().to_high().request;
                for finding in findings(&request, &facts) {
                    for text in [&finding.message, &finding.fix] {
                        let flags = text
                            .split(|c: char| c.is_whitespace() || c == '(' || c == '`')
                            .filter(|word| word.starts_with("--"))
                            .filter(|word| !allowed.iter().any(|ok| word.starts_with(ok)));
                        assert_eq!(flags.count(), 0, "{}: {text}", path.display());
                        assert!(
                            !text.contains("learner_uuid="),
                            "{}: {text}",
                            path.display()
                        );
                    }
                }
            }
        }
    }
}
