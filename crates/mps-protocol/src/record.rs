//! The record of one bounded subprocess run: what was asked ([`QueryRecord`]) and how it ended
//! ([`QueryOutcome`], with its [`CapturedText`]). `mps-host` fills these in; the validator
//! reads them. A record is data only: it carries no interpretation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::OsText;

/// One bounded subprocess run, as data: what was asked and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct QueryRecord {
    /// The program name or path as spawned.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// What was written to its standard input (then closed).
    pub stdin: String,
    /// Environment variables set explicitly for the child (the rest is inherited).
    pub env: BTreeMap<String, OsText>,
    /// Environment variables removed from the child's environment (for the daemon query:
    /// `CUDA_MPS_PROTOCOL_VERSION`, so the front-end speaks the stdin protocol). Absent in JSON
    /// when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_removed: Vec<String>,
    /// The deadline, in milliseconds.
    pub timeout_ms: u64,
    /// How long the run took, in milliseconds.
    pub elapsed_ms: u64,
    /// How it ended.
    pub outcome: QueryOutcome,
    /// The attempts before this one, oldest first, when the query was retried (the
    /// daemon query is asked again after a transient outcome, `mps_protocol::retry`). The
    /// fields above describe the last attempt, except `elapsed_ms`, which then counts from the
    /// first attempt's start. Absent in JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_attempts: Vec<Attempt>,
}

/// One earlier attempt of a retried query: how it ended and how long the probe waited after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Attempt {
    /// How long the attempt ran, in milliseconds.
    pub elapsed_ms: u64,
    /// The pause before the next attempt, in milliseconds.
    pub backoff_ms: u64,
    /// How it ended.
    pub outcome: QueryOutcome,
}

/// How a subprocess run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueryOutcome {
    /// The process could not be started (not on PATH, not executable, …).
    SpawnFailed {
        /// The OS error text.
        error: String,
    },
    /// The deadline passed; the process (group) was killed.
    TimedOut {
        /// What it printed before it was killed.
        stdout: CapturedText,
        /// What it printed on stderr before it was killed.
        stderr: CapturedText,
    },
    /// The process ended by itself.
    Exited {
        /// The exit code, when it exited normally.
        code: Option<i32>,
        /// The signal that ended it, otherwise.
        signal: Option<i32>,
        /// Its standard output.
        stdout: CapturedText,
        /// Its standard error.
        stderr: CapturedText,
    },
}

impl QueryOutcome {
    /// A process that exited by itself with `code`, its output whole (not cut at a cap): the
    /// shape of an answer written by hand, for a test or an offline policy check.
    ///
    /// ```
    /// use mps_protocol::QueryOutcome;
    /// let outcome = QueryOutcome::exited(0, "100.0\n", "");
    /// assert!(matches!(outcome, QueryOutcome::Exited { code: Some(0), .. }));
    /// ```
    pub fn exited(code: i32, stdout: &str, stderr: &str) -> Self {
        Self::Exited {
            code: Some(code),
            signal: None,
            stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
            stderr: CapturedText::from_bytes(stderr.as_bytes(), false),
        }
    }
}

/// Captured output, read with a cap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CapturedText {
    /// The text (invalid UTF-8 replaced by U+FFFD; see `non_utf8`).
    pub text: String,
    /// True when the output was longer than the cap and the rest was discarded.
    pub truncated: bool,
    /// True when the raw bytes were not valid UTF-8.
    pub non_utf8: bool,
}

impl CapturedText {
    /// Captures `bytes`, recording whether they were valid UTF-8.
    pub fn from_bytes(bytes: &[u8], truncated: bool) -> Self {
        let text = String::from_utf8_lossy(bytes);
        let non_utf8 = matches!(text, std::borrow::Cow::Owned(_));
        Self {
            text: text.into_owned(),
            truncated,
            non_utf8,
        }
    }
}
