//! `mps-preflight schema`: the JSON Schemas (draft 2020-12) of what this tool reads and writes,
//! generated from the Rust types; their `description`s are the types' doc comments.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};
use sharing_manifest::{EVIDENCE_SCHEMA, MergeSummary};
use sharing_policy::{Evidence, HostFacts, SCHEMA, SCHEMAS_READ};

use clap::{Args, ValueEnum};

use crate::args::paragraphs;
use crate::output::{Output, json_text};
use crate::report::DoctorReport;

/// The version of `doctor --format json`'s shape.
pub(crate) const DOCTOR_SCHEMA: &str = "mps-preflight/doctor/v1";
/// The version of `merge`'s output shape.
pub(crate) const MERGE_SCHEMA: &str = "mps-preflight/merge/v1";

/// `schema KIND`: the schema, pretty JSON.
pub(crate) fn print(args: &SchemaArgs) -> Output {
    Output::data(json_text(&schema(args.kind)))
}

/// The schema of `kind`, with an `$id` carrying its version and a `title`.
pub(crate) fn schema(kind: SchemaKind) -> Value {
    let (version, title, generated) = match kind {
        // The snapshot is an input: what `check` accepts (missing optional facts read as null).
        SchemaKind::Snapshot => (
            SCHEMA,
            "mps-preflight host-facts snapshot",
            generate::<HostFacts>(false),
        ),
        // The rest are outputs: what this tool writes (every key present).
        SchemaKind::Evidence => (
            EVIDENCE_SCHEMA,
            "mps-preflight evidence",
            generate::<Evidence>(true),
        ),
        SchemaKind::Doctor => (
            DOCTOR_SCHEMA,
            "mps-preflight doctor --format json",
            generate::<DoctorReport<'_>>(true),
        ),
        SchemaKind::Merge => (
            MERGE_SCHEMA,
            "mps-preflight merge",
            generate::<MergeSummary>(true),
        ),
        SchemaKind::Attestation => (
            sharing_manifest::ATTESTATION_SCHEMA,
            "mps-preflight attestation",
            generate::<sharing_policy::Attestation>(true),
        ),
        // Inputs: what `test` and `attest --snapshot` accept.
        SchemaKind::Cases => (
            crate::suite::CASES_SCHEMA,
            "mps-preflight test case file",
            crate::suite::cases_schema(),
        ),
        SchemaKind::AttestSnapshot => (
            sharing_policy::ATTEST_SCHEMA,
            "mps-preflight attest snapshot",
            generate::<sharing_policy::AttestFacts>(false),
        ),
    };
    let mut out = Map::new();
    let mut generated = match generated {
        Value::Object(map) => map,
        other => return other,
    };
    if let Some(meta) = generated.shift_remove("$schema") {
        out.insert("$schema".to_owned(), meta);
    }
    out.insert("$id".to_owned(), Value::from(schema_id(version)));
    out.insert("title".to_owned(), Value::from(title));
    generated.shift_remove("title");
    out.extend(generated);
    if kind == SchemaKind::Snapshot
        && let Some(Value::Object(field)) =
            out.get_mut("properties").and_then(|p| p.get_mut("schema"))
    {
        // A snapshot of another version is refused (exit 2), so the schema says which ones are
        // read: this one, v2 (without the settings session) and v1 (without the v2 fields).
        field.insert("enum".to_owned(), Value::from(SCHEMAS_READ.to_vec()));
    }
    if kind == SchemaKind::AttestSnapshot
        && let Some(Value::Object(field)) =
            out.get_mut("properties").and_then(|p| p.get_mut("schema"))
    {
        // An attest snapshot of another version is refused.
        field.insert(
            "enum".to_owned(),
            Value::from(vec![sharing_policy::ATTEST_SCHEMA]),
        );
    }
    Value::Object(out)
}

/// `mps-preflight/host-facts/v1` → `urn:mps-preflight:host-facts:v1`.
pub(crate) fn schema_id(version: &str) -> String {
    format!("urn:{}", version.replace('/', ":"))
}

fn generate<T: JsonSchema>(output: bool) -> Value {
    let settings = SchemaSettings::draft2020_12();
    let settings = if output {
        settings.for_serialize()
    } else {
        settings.for_deserialize()
    };
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Print the JSON Schema (draft 2020-12) of what this tool reads or writes, generated from its
types: `snapshot` (what `capture` writes and `check` reads), `evidence` (what `probe` and `check`
print and manifests record under `cuda_process_sharing`), `doctor` (`doctor --format json`) or
`merge`. Each schema's `$id` carries its version (`urn:mps-preflight:host-facts:v1`). Copies
are committed in docs/schemas/.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    "Examples:
  mps-preflight schema snapshot > host-facts.schema.json
  mps-preflight schema evidence

Exit status:
  0  the schema is on stdout
  2  usage error (an unknown kind)"
        .to_owned()
}

#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// Which schema
    #[arg(value_enum, value_name = "KIND")]
    pub(crate) kind: SchemaKind,
}

/// The documents `schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaKind {
    /// A host-facts snapshot (`capture`, `check --snapshot`).
    Snapshot,
    /// The evidence (`probe`, `check`, a manifest's `cuda_process_sharing`).
    Evidence,
    /// `doctor --format json`.
    Doctor,
    /// `merge`'s output.
    Merge,
    /// `attest`'s attestation (a manifest's `cuda_process_sharing.attestation`).
    Attestation,
    /// A `*.cases.json` policy suite (`test`).
    Cases,
    /// An attest snapshot (`attest --save-snapshot`, `attest --snapshot`).
    AttestSnapshot,
}
