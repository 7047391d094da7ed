//! Loading a host-facts snapshot: capped, regular files only, this schema only.

use std::fmt::Display;
use std::path::Path;

use serde_json::Value;
use sharing_policy::{HostFacts, SCHEMA};

/// Reads the snapshot at `path`. Every failure is an input error (exit 2), with a message that
/// names the file and says what to do.
///
/// # Errors
/// An unreadable or oversized file, not JSON, another schema, or not this schema's shape.
pub fn load(path: &Path) -> Result<HostFacts, String> {
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    from_value(value, &sharing_manifest::quote_path(path))
}

/// A snapshot already read as JSON (an inline snapshot of a `test` case), `shown` as where it
/// came from in messages: the same checks as [`load`].
///
/// # Errors
/// Another schema, no schema, or not this schema's shape.
pub fn from_value(value: Value, shown: &dyn Display) -> Result<HostFacts, String> {
    match value.get("schema") {
        Some(Value::String(schema)) if schema == SCHEMA => {}
        Some(Value::String(schema)) => {
            return Err(format!(
                "{shown}: snapshot schema {schema:?} is not supported; this mps-preflight reads {SCHEMA:?}: capture the host again with this version"
            ));
        }
        _ => {
            return Err(format!(
                "{shown}: not a host-facts snapshot (expected a JSON object with \"schema\": {SCHEMA:?}, as `mps-preflight capture` writes)"
            ));
        }
    }
    serde_json::from_value(value)
        .map_err(|err| format!("{shown}: not a valid {SCHEMA} snapshot: {err}"))
}
