//! `attest`'s record in a manifest: the attestation under
//! `cuda_process_sharing.attestation`, its version beside it, every other key kept; and how
//! `merge` reads it back.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};
use sharing_policy::Attestation;

use crate::ManifestError;
use crate::file::update_manifest;
use crate::json::{MANIFEST_KEY, kind_of};
use crate::lock::LOCK_WAIT;

/// The key inside [`MANIFEST_KEY`] the attestation is recorded under.
pub const ATTESTATION_KEY: &str = "attestation";

/// The key inside [`MANIFEST_KEY`] that records [`ATTESTATION_SCHEMA`], right after it.
pub const ATTESTATION_SCHEMA_KEY: &str = "attestation_schema";

/// The version of the attestation's shape.
pub const ATTESTATION_SCHEMA: &str = "mps-preflight/attestation/v1";

/// Records `attestation` in the manifest at `path` under `cuda_process_sharing.attestation`,
/// with its version under `cuda_process_sharing.attestation_schema`: the probe's evidence and
/// every other key keep their values and positions. A manifest without `cuda_process_sharing`
/// gets one holding only the attestation; a missing manifest is created. The write is
/// [`crate::record_in_manifest`]'s: locked, atomic, the file untouched on any error.
///
/// # Errors
/// Any [`ManifestError`], or [`ManifestError::NotAnObject`] when `cuda_process_sharing` is
/// there but is not an object.
pub fn record_attestation(path: &Path, attestation: &Attestation) -> Result<(), ManifestError> {
    let value = serde_json::to_value(attestation).map_err(|error| ManifestError::Io {
        path: path.to_owned(),
        action: "serialise the attestation for",
        error: std::io::Error::other(error),
    })?;
    update_manifest(path, LOCK_WAIT, &|document| insert(path, document, &value))
}

fn insert(
    path: &Path,
    document: &mut Map<String, Value>,
    value: &Value,
) -> Result<(), ManifestError> {
    let section = document
        .entry(MANIFEST_KEY.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(section) = section else {
        return Err(ManifestError::NotAnObject {
            path: path.to_owned(),
            found: kind_of(section),
        });
    };
    section.insert(ATTESTATION_KEY.to_owned(), value.clone());
    section.shift_remove(ATTESTATION_SCHEMA_KEY);
    let beside = section
        .keys()
        .position(|key| key == ATTESTATION_KEY)
        .map_or(section.len(), |index| index + 1);
    section.shift_insert(
        beside,
        ATTESTATION_SCHEMA_KEY.to_owned(),
        Value::from(ATTESTATION_SCHEMA),
    );
    Ok(())
}

/// What a rank's manifest says about its attestation, for `merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AttestationState {
    /// Both processes were proven clients of one server.
    Attested,
    /// An attestation that says they were not.
    NotAttested,
    /// The key holds no attestation this version reads (another version, or not an object
    /// with a boolean `attested`).
    Unreadable,
}

/// One rank's attestation as `merge` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct RankAttestation {
    /// Attested, not attested, or unreadable.
    pub state: AttestationState,
    /// The server both processes are clients of, when attested.
    pub server_pid: Option<i64>,
}

/// The attestation a manifest records, when it records one (its absence is not an error).
pub fn attestation_of(manifest: &Value) -> Option<RankAttestation> {
    let section = manifest.get(MANIFEST_KEY)?;
    let recorded = section.get(ATTESTATION_KEY)?;
    let version_ok = section
        .get(ATTESTATION_SCHEMA_KEY)
        .is_none_or(|schema| schema == ATTESTATION_SCHEMA);
    let state = match recorded.get("attested") {
        Some(Value::Bool(true)) if version_ok => AttestationState::Attested,
        Some(Value::Bool(false)) if version_ok => AttestationState::NotAttested,
        _ => AttestationState::Unreadable,
    };
    let server_pid = (state == AttestationState::Attested)
        .then(|| recorded.get("server_pid").and_then(Value::as_i64))
        .flatten();
    Some(RankAttestation { state, server_pid })
}
