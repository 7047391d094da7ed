//! The per-crate dependency budget of ARCHITECTURE.md ("Dependency budget"), checked against
//! `cargo tree -e normal`: what a consumer of each library crate compiles and links, with
//! dev-dependencies and the workspace's other crates out of the picture.

use std::process::Command;

/// Each library crate's direct run-time dependencies, exactly.
const DIRECT: &[(&str, &[&str])] = &[
    ("gpu-uuid", &["serde", "thiserror"]),
    ("mps-protocol", &["serde"]),
    (
        "sharing-policy",
        &["gpu-uuid", "mps-protocol", "serde", "thiserror"],
    ),
    (
        "mps-host",
        &["gpu-uuid", "mps-protocol", "rustix", "sharing-policy"],
    ),
    (
        "sharing-manifest",
        &[
            "rustix",
            "serde",
            "serde_json",
            "sharing-policy",
            "tempfile",
            "thiserror",
        ],
    ),
];

/// Optional features of the library crates, off by default, and the direct dependencies each
/// adds (`schemars` derives the JSON Schemas that `mps-preflight schema` prints).
const OPTIONAL: &[(&str, &str, &[&str])] = &[
    ("mps-protocol", "schemars", &["schemars"]),
    ("sharing-policy", "schemars", &["schemars"]),
    ("sharing-manifest", "schemars", &["schemars"]),
];

/// Everything a pure crate may pull in, transitively: serde and thiserror with their derive
/// macros' compile-time dependencies, and nothing that runs a process, parses argv or does I/O.
const PURE_TREE: &[&str] = &[
    "gpu-uuid",
    "mps-protocol",
    "sharing-policy",
    "serde",
    "serde_core",
    "serde_derive",
    "thiserror",
    "thiserror-impl",
    "proc-macro2",
    "quote",
    "syn",
    "unicode-ident",
];

/// Never in any library crate's tree: the command line, test and bench tools.
const NEVER: &[&str] = &[
    "clap",
    "clap_builder",
    "mockall",
    "insta",
    "proptest",
    "divan",
    "jsonschema",
];

/// The crate names `cargo tree -p <package> -e normal` prints (sorted, deduplicated), or only
/// the direct dependencies with `depth = Some(1)` (the package itself excluded).
fn tree(package: &str, depth: Option<u32>) -> Result<Vec<String>, String> {
    tree_with(package, depth, None)
}

/// [`tree`], with the package's `feature` turned on when one is given.
fn tree_with(
    package: &str,
    depth: Option<u32>,
    feature: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut command = Command::new(super::cargo_program());
    command.args([
        "tree",
        "-p",
        package,
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
        "--offline",
        "--locked",
    ]);
    if let Some(depth) = depth {
        command.args(["--depth", &depth.to_string()]);
    }
    if let Some(feature) = feature {
        command.args(["--features", &format!("{package}/{feature}")]);
    }
    let output = command
        .output()
        .map_err(|err| format!("cannot run cargo tree: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree -p {package}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != package)
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

mod tests {
    use super::*;

    #[test]
    fn each_library_crate_has_exactly_its_budgeted_direct_dependencies() {
        for (package, budget) in DIRECT {
            let direct = tree(package, Some(1)).unwrap();
            assert_eq!(
                direct, *budget,
                "{package}: update ARCHITECTURE.md's budget with it"
            );
        }
    }

    #[test]
    fn an_optional_feature_adds_exactly_its_budgeted_direct_dependencies() {
        for (package, feature, added) in OPTIONAL {
            let (_, budget) = DIRECT.iter().find(|(name, _)| name == package).unwrap();
            let mut expected: Vec<&str> = budget.iter().chain(added.iter()).copied().collect();
            expected.sort_unstable();
            let direct = tree_with(package, Some(1), Some(feature)).unwrap();
            assert_eq!(
                direct, expected,
                "{package} --features {feature}: update ARCHITECTURE.md's budget with it"
            );
        }
    }

    #[test]
    fn a_consumer_of_the_pure_crates_compiles_only_serde_and_thiserror() {
        for package in ["gpu-uuid", "mps-protocol", "sharing-policy"] {
            let all = tree(package, None).unwrap();
            let over: Vec<&String> = all
                .iter()
                .filter(|name| !PURE_TREE.contains(&name.as_str()))
                .collect();
            assert!(over.is_empty(), "{package} pulls in {over:?}: {all:?}");
            assert!(all.iter().any(|name| name == "serde"), "{all:?}");
        }
    }

    #[test]
    fn no_library_crate_pulls_in_the_command_line_or_test_tools() {
        for (package, _) in DIRECT {
            let all = tree(package, None).unwrap();
            let banned: Vec<&String> = all
                .iter()
                .filter(|name| NEVER.contains(&name.as_str()))
                .collect();
            assert!(banned.is_empty(), "{package} pulls in {banned:?}");
        }
    }
}
