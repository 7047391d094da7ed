//! The committed fixtures (`fixtures/hosts/*.json`) against their builders in [`crate::hosts`]:
//! equal, round-tripping through JSON, and each described in fixtures/README.md.

use std::path::PathBuf;

use sharing_policy::HostFacts;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts")
}

/// The JSON of a fixture, as committed.
pub(crate) fn to_json(facts: &HostFacts) -> String {
    let mut json = serde_json::to_string_pretty(facts).unwrap();
    json.push('\n');
    json
}

#[test]
fn committed_fixtures_match_their_builders() {
    let update = std::env::var_os("UPDATE_FIXTURES").is_some();
    let mut stale = Vec::new();
    for (name, facts) in crate::hosts::all() {
        let path = fixture_dir().join(format!("{name}.json"));
        let json = to_json(&facts);
        if update {
            std::fs::write(&path, &json).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(json.as_str()) {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "fixtures differ from their builders (run with UPDATE_FIXTURES=1): {stale:?}"
    );
}

#[test]
fn every_fixture_round_trips_through_json() {
    for (name, facts) in crate::hosts::all() {
        let back: HostFacts = serde_json::from_str(&to_json(&facts)).unwrap();
        assert_eq!(back, facts, "{name}");
    }
}

#[test]
fn every_fixture_is_described_in_the_readme() {
    let readme = std::fs::read_to_string(fixture_dir().join("../README.md")).unwrap();
    for entry in std::fs::read_dir(fixture_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if std::path::Path::new(&name)
            .extension()
            .is_some_and(|e| e == "json")
        {
            assert!(
                readme.contains(&format!("`{name}`")),
                "fixtures/README.md does not describe {name}"
            );
        }
    }
}
