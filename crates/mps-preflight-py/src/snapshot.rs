//! A host-facts snapshot from what a Python caller passes: a path, or JSON text (a `dict` is
//! passed as its JSON text). The checks and messages are the CLI's `--snapshot` own: capped,
//! regular files only, this schema only.

use std::path::Path;

use serde_json::Value;
use sharing_policy::HostFacts;

/// Where a snapshot comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// A file, read as the CLI reads `--snapshot FILE`.
    Path(&'a Path),
    /// JSON text.
    Text(&'a str),
}

/// Reads the snapshot. Every failure is a message that names the input and says what to do.
///
/// # Errors
/// An unreadable file, text that is not JSON, a snapshot of another schema, or one whose
/// records do not have this schema's shape.
pub fn load(source: Source<'_>) -> Result<HostFacts, String> {
    match source {
        Source::Path(path) => mps_preflight::load_snapshot(path),
        Source::Text(text) => {
            let value: Value = serde_json::from_str(text)
                .map_err(|err| format!("snapshot: not valid JSON: {err}"))?;
            mps_preflight::snapshot_from_value(value, &"snapshot")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sharing_policy::SCHEMA;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/hosts")
            .join(name)
    }

    #[test]
    fn a_file_and_its_text_give_the_same_facts() {
        let path = fixture("healthy-socket-with-server.json");
        let from_file = load(Source::Path(&path)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(load(Source::Text(&text)).unwrap(), from_file);
    }

    #[test]
    fn another_schema_or_no_schema_or_not_json_is_refused_with_what_to_do() {
        let other = load(Source::Text(r#"{"schema": "mps-preflight/host-facts/v0"}"#));
        assert!(other.unwrap_err().contains("capture the host again"));
        let none = load(Source::Text("[]")).unwrap_err();
        assert!(
            none.starts_with("snapshot: not a host-facts snapshot"),
            "{none}"
        );
        let broken = load(Source::Text("{")).unwrap_err();
        assert!(broken.starts_with("snapshot: not valid JSON"), "{broken}");
        let missing = load(Source::Path(Path::new("/nonexistent/host.json"))).unwrap_err();
        assert!(
            missing.starts_with("'/nonexistent/host.json': "),
            "{missing}"
        );
        let shape = load(Source::Text(&format!(r#"{{"schema": "{SCHEMA}"}}"#))).unwrap_err();
        assert!(shape.contains("not a valid"), "{shape}");
    }
}
