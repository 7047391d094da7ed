//! `cargo xtask package`: `cargo package --workspace` for the publishable library crates,
//! then each `.crate` file's contents checked against what a consumer needs, so
//! that no fixture, test snapshot, bench or target file leaks into a package, and its size
//! reported.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Files every library package must carry.
const REQUIRED: &[&str] = &["Cargo.toml", "README.md", "LICENSE-MIT", "LICENSE-APACHE"];

/// Files cargo adds to every package (besides the sources).
const CARGO_FILES: &[&str] = &[
    "Cargo.toml",
    "Cargo.toml.orig",
    "Cargo.lock",
    ".cargo_vcs_info.json",
];

/// Cargo unpacks the local registry's packages into `$CARGO_HOME/registry/src/<hash>/` once and
/// reuses them by name and version, so a second `cargo package` of the same unpublished 0.1.0
/// from the same checkout path verifies against the first run's sources. Removing those copies
/// (never crates.io's) makes each run verify what it just packaged.
fn forget_unpacked_local_packages(publishable: &[(String, String)]) {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
    let Some(sources) = home.map(|home| home.join("registry").join("src")) else {
        return;
    };
    let Ok(registries) = std::fs::read_dir(&sources) else {
        return;
    };
    for registry in registries.flatten() {
        if registry
            .file_name()
            .to_string_lossy()
            .starts_with("index.crates.io")
        {
            continue;
        }
        for (name, version) in publishable {
            let unpacked = registry.path().join(format!("{name}-{version}"));
            if unpacked.is_dir() && std::fs::remove_dir_all(&unpacked).is_ok() {
                eprintln!("xtask: removed the stale unpacked {}", unpacked.display());
            }
        }
    }
}

pub(crate) fn run() -> Result<(), String> {
    let metadata = super::layers::cargo_metadata()?;
    let (publishable, unpublished) = split_by_publish(&metadata);
    if publishable.is_empty() {
        return Err("no publishable crate in the workspace".to_owned());
    }
    // Cargo packages the workspace's path dependencies together through a local registry;
    // the binary and xtask stay unpublished, so they are not packaged.
    let mut args = vec!["package", "--workspace", "--locked"];
    for name in &unpublished {
        args.extend(["--exclude", name.as_str()]);
    }
    if std::env::var_os("CI").is_none() {
        // A developer's uncommitted edits; CI runs on a clean clone.
        args.push("--allow-dirty");
    }
    forget_unpacked_local_packages(&publishable);
    // Cargo never rebuilds a registry package it built before under the same name and version,
    // so the verify builds in a target directory of its own, emptied first: an unpublished
    // 0.1.0 changes without a version bump.
    let target = target_directory(&metadata)?;
    let verify_target = target.join("xtask-package");
    let _ = std::fs::remove_dir_all(&verify_target);
    let verify_target_text = verify_target.to_string_lossy().into_owned();
    super::cargo(&args, &[("CARGO_TARGET_DIR", verify_target_text.as_str())])?;
    let package_dir = verify_target.join("package");
    let mut problems = Vec::new();
    for (name, version) in &publishable {
        let file = package_dir.join(format!("{name}-{version}.crate"));
        let entries = list_crate(&file)?;
        let size = std::fs::metadata(&file)
            .map_err(|err| format!("{}: {err}", file.display()))?
            .len();
        eprintln!(
            "xtask: {name}-{version}.crate: {} files, {size} bytes compressed",
            entries.len()
        );
        problems.extend(leaks(&format!("{name}-{version}"), &entries));
    }
    if problems.is_empty() {
        eprintln!("xtask: package ok ({} crates)", publishable.len());
        return Ok(());
    }
    for problem in &problems {
        eprintln!("package problem: {problem}");
    }
    Err(format!(
        "{} package problem(s); fix the crate's `include` in its Cargo.toml",
        problems.len()
    ))
}

/// `(name, version)` of the crates that may be published, and the names of those that may not
/// (`publish = false` shows as an empty list in `cargo metadata`).
fn split_by_publish(metadata: &Value) -> (Vec<(String, String)>, Vec<String>) {
    let mut publishable = Vec::new();
    let mut unpublished = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default().to_owned();
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            unpublished.push(name);
        } else {
            let version = package["version"].as_str().unwrap_or_default().to_owned();
            publishable.push((name, version));
        }
    }
    (publishable, unpublished)
}

fn target_directory(metadata: &Value) -> Result<PathBuf, String> {
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| "cargo metadata names no target_directory".to_owned())
}

/// The paths inside a `.crate` file (a gzipped tar), as `tar` lists them.
fn list_crate(file: &Path) -> Result<Vec<String>, String> {
    let output = Command::new("tar")
        .arg("-tzf")
        .arg(file)
        .output()
        .map_err(|err| format!("cannot run tar: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "tar -tzf {}: {}",
            file.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// Every entry of the package `root` (its top folder, `name-version`) that a consumer does not
/// need, and every required file that is missing. Allowed: cargo's own files, the README, the
/// licence files, a build script and Rust sources under `src/`.
fn leaks(root: &str, entries: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut files = Vec::new();
    for entry in entries {
        let Some(path) = entry
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('/'))
        else {
            problems.push(format!("{root}: `{entry}` is outside the package folder"));
            continue;
        };
        if path.is_empty() || path.ends_with('/') {
            continue; // a directory entry
        }
        let allowed = CARGO_FILES.contains(&path)
            || REQUIRED.contains(&path)
            || path == "build.rs" // the binary's version string
            || (path.starts_with("src/") && Path::new(path).extension() == Some("rs".as_ref()));
        if !allowed {
            problems.push(format!(
                "{root}: `{path}` should not be packaged (only src/**/*.rs, README and licences)"
            ));
        }
        files.push(path);
    }
    for required in REQUIRED {
        if !files.contains(required) {
            problems.push(format!("{root}: `{required}` is missing from the package"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(paths: &[&str]) -> Vec<String> {
        paths
            .iter()
            .map(|path| format!("gpu-uuid-0.1.0/{path}"))
            .collect()
    }

    const CLEAN: &[&str] = &[
        ".cargo_vcs_info.json",
        "Cargo.lock",
        "Cargo.toml",
        "Cargo.toml.orig",
        "LICENSE-APACHE",
        "LICENSE-MIT",
        "README.md",
        "src/lib.rs",
        "src/merge/tests.rs",
    ];

    #[test]
    fn a_clean_package_passes() {
        assert_eq!(
            leaks("gpu-uuid-0.1.0", &entries(CLEAN)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn fixtures_snapshots_benches_and_target_files_leak() {
        for leak in [
            "tests/it/snapshots/it__fixtures__check.snap",
            "src/snapshots/x.snap",
            "fixtures/hosts/healthy-idle-daemon.json",
            "benches/parsers.rs",
            "target/debug/libgpu_uuid.rlib",
            "tests/it/main.rs",
            "clippy.toml",
        ] {
            let mut paths = CLEAN.to_vec();
            paths.push(leak);
            let problems = leaks("gpu-uuid-0.1.0", &entries(&paths));
            assert_eq!(problems.len(), 1, "{leak}: {problems:?}");
            assert!(problems[0].contains(leak), "{problems:?}");
        }
    }

    #[test]
    fn a_missing_licence_or_readme_is_a_problem() {
        for missing in ["LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
            let paths: Vec<&str> = CLEAN.iter().copied().filter(|p| *p != missing).collect();
            let problems = leaks("gpu-uuid-0.1.0", &entries(&paths));
            assert_eq!(
                problems,
                [format!(
                    "gpu-uuid-0.1.0: `{missing}` is missing from the package"
                )]
            );
        }
    }

    #[test]
    fn publish_false_crates_are_not_packaged() {
        let metadata = json!({"packages": [
            {"name": "gpu-uuid", "version": "0.1.0", "publish": null},
            {"name": "mps-preflight", "version": "0.1.0", "publish": []},
            {"name": "inner", "version": "0.2.0", "publish": ["internal"]},
        ]});
        let (publishable, unpublished) = split_by_publish(&metadata);
        assert_eq!(
            publishable,
            [
                ("gpu-uuid".to_owned(), "0.1.0".to_owned()),
                ("inner".to_owned(), "0.2.0".to_owned())
            ]
        );
        assert_eq!(unpublished, ["mps-preflight"]);
    }
}
