//! `cargo xtask layers`: the Architecture Invariants of ARCHITECTURE.md, checked against
//! `cargo metadata`. Each workspace crate may name only the internal crates below it, in
//! any dependency kind (a dev-dependency on a higher layer is still a cycle in the design),
//! and the pure crates may use only the external crates listed here. The source rules (no file
//! over 600 lines; render modules never name `mps_host`) are in `sources.rs`.

use std::process::Command;

use serde_json::Value;

/// Internal crates each crate may depend on. A crate not listed here may not exist.
const ALLOWED_INTERNAL: &[(&str, &[&str])] = &[
    ("gpu-uuid", &[]),
    ("mps-protocol", &[]),
    ("sharing-policy", &["gpu-uuid", "mps-protocol"]),
    ("mps-host", &["sharing-policy", "mps-protocol", "gpu-uuid"]),
    (
        "sharing-manifest",
        &["sharing-policy", "mps-protocol", "gpu-uuid"],
    ),
    (
        "mps-preflight",
        &[
            "gpu-uuid",
            "mps-protocol",
            "sharing-policy",
            "mps-host",
            "sharing-manifest",
        ],
    ),
    // The Python package sits beside the CLI, on the library crates and the CLI's `run`.
    (
        "mps-preflight-py",
        &[
            "gpu-uuid",
            "mps-protocol",
            "sharing-policy",
            "mps-host",
            "sharing-manifest",
            "mps-preflight",
        ],
    ),
    ("xtask", &[]),
];

/// External crates the pure crates may use at run time (dev-dependencies are not limited):
/// nothing that reads the environment, files, processes or the clock.
const PURE_EXTERNAL: &[(&str, &[&str])] = &[
    ("gpu-uuid", &["thiserror", "serde"]),
    ("mps-protocol", &["serde"]),
    ("sharing-policy", &["thiserror", "serde"]),
];

/// Optional run-time dependencies the pure crates may have, behind a feature that is off by
/// default (`schemars` derives the JSON Schemas; it reads nothing from the host).
const PURE_OPTIONAL: &[(&str, &[&str])] = &[
    ("mps-protocol", &["schemars"]),
    ("sharing-policy", &["schemars"]),
];

pub(crate) fn check() -> Result<(), String> {
    let metadata = cargo_metadata()?;
    let mut violations = violations(&metadata);
    // The source rules: file sizes, what the render modules may name, and no import
    // circle between a crate's modules.
    let root = metadata
        .get("workspace_root")
        .and_then(Value::as_str)
        .ok_or("cargo metadata has no workspace_root")?;
    violations.extend(super::sources::violations(std::path::Path::new(root))?);
    violations.extend(super::circles::violations(std::path::Path::new(root))?);
    if violations.is_empty() {
        eprintln!("xtask: layers ok");
        return Ok(());
    }
    for violation in &violations {
        eprintln!("layer violation: {violation}");
    }
    Err(format!(
        "{} layer violation(s); see ARCHITECTURE.md for the allowed edges",
        violations.len()
    ))
}

/// The workspace's own packages, from `cargo metadata --no-deps`.
pub(crate) fn cargo_metadata() -> Result<Value, String> {
    let output = Command::new(super::cargo_program())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .map_err(|err| format!("cannot run cargo metadata: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|err| format!("cargo metadata: {err}"))
}

/// Every forbidden edge in `metadata` (the JSON of `cargo metadata --no-deps`).
fn violations(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let internal: Vec<&str> = ALLOWED_INTERNAL.iter().map(|(name, _)| *name).collect();
    let mut found = Vec::new();
    for package in &packages {
        let name = package["name"].as_str().unwrap_or_default();
        let Some(allowed) = lookup(ALLOWED_INTERNAL, name) else {
            found.push(format!(
                "`{name}` is not a known layer; add it to ARCHITECTURE.md and xtask/src/layers.rs"
            ));
            continue;
        };
        let pure = lookup(PURE_EXTERNAL, name);
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let dep = dependency["name"].as_str().unwrap_or_default();
            let kind = dependency["kind"].as_str().unwrap_or("normal");
            if internal.contains(&dep) && !allowed.contains(&dep) {
                found.push(format!(
                    "`{name}` depends on `{dep}` ({kind}), which is not below it"
                ));
            }
            let optional_allowed = dependency["optional"] == Value::Bool(true)
                && lookup(PURE_OPTIONAL, name).is_some_and(|optional| optional.contains(&dep));
            if let Some(pure) = pure
                && kind != "dev"
                && !internal.contains(&dep)
                && !pure.contains(&dep)
                && !optional_allowed
            {
                found.push(format!(
                    "pure crate `{name}` depends on `{dep}`; only {pure:?} are allowed"
                ));
            }
        }
    }
    found
}

fn lookup<'a>(table: &'a [(&str, &'a [&'a str])], name: &str) -> Option<&'a [&'a str]> {
    table
        .iter()
        .find(|(crate_name, _)| *crate_name == name)
        .map(|(_, deps)| *deps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn package(name: &str, deps: &[(&str, &str)]) -> Value {
        let deps: Vec<Value> = deps
            .iter()
            .map(|(dep, kind)| json!({"name": dep, "kind": kind}))
            .collect();
        json!({"name": name, "dependencies": deps})
    }

    #[test]
    fn the_designed_graph_passes() {
        let metadata = json!({"packages": [
            package("gpu-uuid", &[("thiserror", "normal"), ("proptest", "dev")]),
            package("sharing-policy", &[("gpu-uuid", "normal"), ("serde", "normal")]),
            package("mps-host", &[("sharing-policy", "normal"), ("rustix", "normal")]),
            package("mps-preflight", &[("mps-host", "normal"), ("sharing-manifest", "normal")]),
            package("mps-preflight-py", &[("mps-preflight", "normal"), ("mps-host", "normal")]),
        ]});
        assert_eq!(violations(&metadata), Vec::<String>::new());
    }

    #[test]
    fn nothing_depends_on_the_python_package() {
        for name in ["mps-preflight", "mps-host", "sharing-policy"] {
            let metadata = json!({"packages": [package(name, &[("mps-preflight-py", "normal")])]});
            assert_eq!(violations(&metadata).len(), 1, "{name}");
        }
    }

    #[test]
    fn an_upward_edge_fails_in_any_dependency_kind() {
        for kind in ["normal", "dev", "build"] {
            let metadata = json!({"packages": [package("sharing-policy", &[("mps-host", kind)])]});
            assert_eq!(
                violations(&metadata),
                vec![format!(
                    "`sharing-policy` depends on `mps-host` ({kind}), which is not below it"
                )]
            );
        }
    }

    #[test]
    fn a_pure_crate_cannot_take_an_io_dependency() {
        let metadata = json!({"packages": [package("gpu-uuid", &[("rustix", "normal")])]});
        assert_eq!(violations(&metadata).len(), 1);
    }

    #[test]
    fn a_pure_crate_may_take_schemars_only_as_an_optional_dependency() {
        let with = |optional: bool| {
            json!({"packages": [{"name": "sharing-policy", "dependencies": [
                {"name": "schemars", "kind": null, "optional": optional}
            ]}]})
        };
        assert_eq!(violations(&with(true)), Vec::<String>::new());
        assert_eq!(violations(&with(false)).len(), 1);
        let gpu_uuid = json!({"packages": [{"name": "gpu-uuid", "dependencies": [
            {"name": "schemars", "kind": null, "optional": true}
        ]}]});
        assert_eq!(violations(&gpu_uuid).len(), 1);
    }

    #[test]
    fn an_unknown_crate_is_reported() {
        let metadata = json!({"packages": [package("mystery", &[])]});
        assert_eq!(violations(&metadata).len(), 1);
    }
}
