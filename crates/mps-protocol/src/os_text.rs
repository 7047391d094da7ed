//! [`OsText`]: an OS string (a path, an environment value, a process's argument) recorded
//! losslessly in a snapshot. A module of its own so that every record type can use it without
//! importing the others.

use serde::{Deserialize, Serialize};

/// A raw OS string kept losslessly: JSON text when it is UTF-8, else its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(untagged, deny_unknown_fields)]
pub enum OsText {
    /// Valid UTF-8.
    Text(String),
    /// Anything else, byte for byte.
    Bytes {
        /// The raw bytes.
        non_utf8_bytes: Vec<u8>,
    },
}

impl OsText {
    /// Keeps `bytes` as text when they are UTF-8, as bytes otherwise.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(text) => Self::Text(text),
            Err(err) => Self::Bytes {
                non_utf8_bytes: err.into_bytes(),
            },
        }
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Text(text) => text.as_bytes(),
            Self::Bytes { non_utf8_bytes } => non_utf8_bytes,
        }
    }

    /// The text, when it is UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Bytes { .. } => None,
        }
    }

    /// A readable rendering for messages (invalid bytes become U+FFFD).
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }
}

impl From<&str> for OsText {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}
