//! The outcome types of a failed check: [`Finding`] (for `explain`) and [`Rejection`] (for
//! `validate`).

use serde::{Deserialize, Serialize};

use crate::{Code, Vocabulary};

/// One unmet prerequisite, as `explain` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Finding {
    /// The stable code.
    pub code: Code,
    /// The full message: the seed's key phrase, what was found, and what to do.
    pub message: String,
    /// What the snapshot or the request showed.
    pub found: String,
    /// Why the prerequisite matters ([`Code::why_in`] the request's vocabulary).
    pub why: String,
    /// What to do about it: a command or a setting.
    pub fix: String,
}

impl Finding {
    /// A finding in `vocabulary`'s words: its `why` is [`Code::why_in`] of that vocabulary, so
    /// no finding can be built without saying whose words it speaks.
    pub(crate) fn new(
        code: Code,
        vocabulary: Vocabulary,
        message: String,
        found: String,
        fix: String,
    ) -> Self {
        Self {
            code,
            message,
            found,
            why: code.why_in(vocabulary).to_owned(),
            fix,
        }
    }
}

/// Why an explicit request was refused: the first unmet prerequisite, in the seed's order.
///
/// `Display` prints the message, which contains the seed's key phrase (users grep for it) and
/// what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct Rejection {
    code: Code,
    message: String,
}

impl Rejection {
    /// The stable code of the unmet prerequisite.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The full message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Finding> for Rejection {
    fn from(finding: Finding) -> Self {
        Self {
            code: finding.code,
            message: finding.message,
        }
    }
}
