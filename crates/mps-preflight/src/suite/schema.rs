//! The JSON Schema of a `*.cases.json` file (`mps-preflight schema cases`). The request's keys
//! come from the same clap definitions [`super::request`] reads them with, and the codes and
//! evidence keys from the policy, so the schema cannot drift from what `test` accepts.

use clap::{ArgAction, CommandFactory as _};
use serde_json::{Value, json};
use sharing_policy::Code;

/// The version of the case file's shape.
pub(crate) const CASES_SCHEMA: &str = "mps-preflight/cases/v1";

/// The schema, draft 2020-12 (`$id` and `title` are added by `schemas::schema`).
pub(crate) fn cases_schema() -> Value {
    let codes: Vec<&str> = Code::ALL.iter().map(|code| code.as_str()).collect();
    let evidence_keys = super::cases::evidence_keys();
    let evidence: serde_json::Map<String, Value> = evidence_keys
        .iter()
        .map(|key| (key.clone(), json!({"description": format!("The evidence's `{key}` must be exactly this value.")})))
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": "A policy suite for `mps-preflight test`: snapshots, requests and the outcomes the policy must give (docs/offline-testing.md).",
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "Free text."},
            "request": {
                "$ref": "#/$defs/Request",
                "description": "Defaults merged into every case's request; a key a case sets replaces the default's."
            },
            "cases": {
                "type": "array",
                "minItems": 1,
                "items": {"$ref": "#/$defs/Case"},
                "description": "The cases, run in order; names are unique."
            }
        },
        "required": ["cases"],
        "additionalProperties": false,
        "$defs": {
            "Case": {
                "type": "object",
                "description": "One case: a snapshot, a request, and the expected outcome.",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "description": "Unique in its file; names the case in the output and the JUnit report."},
                    "description": {"type": "string", "description": "Free text."},
                    "snapshot": {
                        "type": ["string", "object"],
                        "description": "A path relative to the case file (or absolute), or an inline host-facts snapshot (`mps-preflight schema snapshot`)."
                    },
                    "request": {"$ref": "#/$defs/Request", "description": "The request, over the file's defaults."},
                    "expect": {"$ref": "#/$defs/Expect", "description": "The outcome the policy must give."}
                },
                "required": ["name", "snapshot", "expect"],
                "additionalProperties": false
            },
            "Request": request_schema(),
            "Expect": {
                "description": "`{\"validated\": bool, \"evidence\": {...}}` or `{\"rejected\": \"<code>\"}`.",
                "oneOf": [
                    {
                        "type": "object",
                        "description": "The policy returns evidence.",
                        "properties": {
                            "validated": {"type": "boolean", "description": "The evidence's `validated` (false for a null request)."},
                            "evidence": {
                                "type": "object",
                                "description": "Evidence keys that must have exactly these values.",
                                "properties": evidence,
                                "additionalProperties": false
                            }
                        },
                        "required": ["validated"],
                        "additionalProperties": false
                    },
                    {
                        "type": "object",
                        "description": "The policy rejects with this code.",
                        "properties": {
                            "rejected": {"enum": codes, "description": "A rejection code of sharing-policy."}
                        },
                        "required": ["rejected"],
                        "additionalProperties": false
                    }
                ]
            }
        }
    })
}

/// The request object: one key per request flag of the command line, `_` for `-`.
fn request_schema() -> Value {
    let command = super::request::CaseRequest::command();
    let mut properties = serde_json::Map::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else {
            continue;
        };
        let help = arg.get_help().map_or_else(
            || format!("`--{long}`."),
            |help| format!("`--{long}`: {help}"),
        );
        let kind = match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => json!({"type": ["boolean", "null"]}),
            ArgAction::Append => {
                json!({"type": ["string", "number", "array", "null"], "items": {"type": ["string", "number"]}})
            }
            _ => json!({"type": ["string", "number", "boolean", "null"]}),
        };
        let mut kind = kind;
        if let Value::Object(map) = &mut kind {
            map.insert("description".to_owned(), Value::from(help));
        }
        properties.insert(long.replace('-', "_"), kind);
    }
    json!({
        "type": "object",
        "description": "The request flags of `check` by their long names with `_` for `-`; defaults and value checks are the command line's.",
        "properties": properties,
        "additionalProperties": false
    })
}
