//! Loading a host-facts snapshot: capped, regular files only, a schema this version reads, and
//! only the fields that schema defines.

use std::path::Path;

use serde_json::Value;
use sharing_policy::{HostFacts, SCHEMA, SCHEMA_V1};

/// Reads the snapshot at `path`. Every failure is an input error (exit 2), with a message that
/// names the file and says what to do. A field that the snapshot's schema does not define is
/// refused, naming the field and the schema: a fact this reader would ignore may be one its
/// writer meant to fail the check.
pub(crate) fn load(path: &Path) -> Result<HostFacts, String> {
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    let shown = path.display();
    let schema = match value.get("schema") {
        Some(Value::String(schema)) if schema == SCHEMA || schema == SCHEMA_V1 => schema.clone(),
        Some(Value::String(schema)) => {
            return Err(format!(
                "{shown}: snapshot schema {schema:?} is not supported; this mps-preflight reads {SCHEMA:?} and {SCHEMA_V1:?}: capture the host again with this version"
            ));
        }
        _ => {
            return Err(format!(
                "{shown}: not a host-facts snapshot (expected a JSON object with \"schema\": {SCHEMA:?}, as `mps-preflight capture` writes)"
            ));
        }
    };
    let fields = value
        .as_object()
        .map(|map| map.keys().map(String::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(why) = sharing_policy::schema_field_error(&schema, fields) {
        return Err(format!(
            "{shown}: not a valid {schema} snapshot: {why}; remove it, or capture the host again with this version"
        ));
    }
    serde_json::from_value(value)
        .map_err(|err| format!("{shown}: not a valid {schema} snapshot: {err}"))
}
