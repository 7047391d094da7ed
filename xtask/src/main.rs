//! Project chores.
//!
//! - `cargo xtask ci` runs every check CI runs, in order, and stops at the first failure.
//! - `cargo xtask layers` checks the crate layering of ARCHITECTURE.md against `cargo metadata`,
//!   and the source rules: no Rust file over 600 lines, no `mps_host` in the render modules.
//! - `cargo xtask deny` runs cargo-deny's offline checks, installing it when missing.
//! - `cargo xtask bench` measures the release binary on a fake host (BENCHMARKS.md).
//! - `cargo xtask fuzz` runs the cargo-fuzz targets of `fuzz/` for a while each (README.md).
//! - `cargo xtask package` packages the library crates and checks what each package holds.
//! - `cargo xtask dist` builds the release artifacts into `target/dist/` (docs/deploy.md).

mod bench;
mod dist;
// Test-only: the dependency budget of ARCHITECTURE.md, checked with `cargo tree`.
#[cfg(test)]
mod budget;
mod circles;
mod fuzz;
mod layers;
mod package;
mod sources;

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("layers") => layers::check(),
        Some("deny") => deny(),
        Some("bench") => bench::run(args.get(1..).unwrap_or_default()),
        Some("fuzz") => fuzz::run(args.get(1..).unwrap_or_default()),
        Some("package") => package::run(),
        Some("dist") => dist::run(),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <ci|layers|deny|bench|fuzz|package|dist>
  ci      fmt --check, clippy -D warnings, tests, docs (warnings denied), layers, deny
  layers  check that every crate depends only on the layers below it (ARCHITECTURE.md), that
          no Rust file is over 600 lines and that the render modules never name mps_host
  deny    cargo deny check bans licenses sources (installs cargo-deny when missing)
  bench   whole-process timings, ratios to the floor and peak memory of the release binary
          on compiled fake hosts, merge at 1,024 and 10,000 ranks (`--runs N`, default 50;
          `--binary PATH` for another build; needs cc); not part of ci. See BENCHMARKS.md
  fuzz    run each cargo-fuzz target (`--seconds N` each, default 600; optionally TARGET...)
          on a scratch copy of fuzz/seeds; installs cargo-fuzz when missing; not part of ci
  package cargo package --workspace (the library crates), then each .crate file's contents
          checked (no fixtures, snapshots, benches or target files) and its size reported
  dist    the release artifacts in target/dist/: the glibc 2.17 CLI, its tar.gz and .deb, the
          manylinux2014 abi3 wheel, the sdist, SHA256SUMS (pinned tools in target/dist-tools);
          scripts/dist-check.sh checks them";

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(&["test", "--workspace", "--locked"], &[])?;
    cargo(
        &["doc", "--workspace", "--no-deps", "--locked"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    // The private items' docs too: a contributor's `--document-private-items`
    // build must not fail on an ambiguous link that the public build never sees.
    cargo(
        &[
            "doc",
            "--workspace",
            "--no-deps",
            "--locked",
            "--document-private-items",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    layers::check()?;
    deny()
}

/// Advisories are not checked: the advisory database cannot be fetched from this network
/// (see deny.toml). Bans (including the layering wrappers), licenses and sources are.
fn deny() -> Result<(), String> {
    if !cargo_has("deny") {
        cargo(&["install", "--locked", "cargo-deny"], &[])?;
    }
    cargo(&["deny", "check", "bans", "licenses", "sources"], &[])
}

fn cargo_has(subcommand: &str) -> bool {
    Command::new(cargo_program())
        .args([subcommand, "--version"])
        .output()
        .is_ok_and(|output| output.status.success())
}

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("xtask: cargo {}", args.join(" "));
    let status = Command::new(cargo_program())
        .args(args)
        .envs(env.iter().copied())
        .status()
        .map_err(|err| format!("cannot run cargo: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

fn cargo_program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}
