//! Loading a host-facts snapshot: capped, regular files only, this schema only.

use std::path::Path;

use serde_json::Value;
use sharing_policy::{HostFacts, SCHEMA};

/// Reads the snapshot at `path`. Every failure is an input error (exit 2), with a message that
/// names the file and says what to do.
pub(crate) fn load(path: &Path) -> Result<HostFacts, String> {
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    let shown = sharing_manifest::quote_path(path);
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
