//! Names the build in `mps-preflight --version`: the commit and the target, so a fleet
//! can tell which build wrote a record.
//!
//! - commit: `MPS_PREFLIGHT_COMMIT` if set (a packager's override); else the `.cargo_vcs_info.json`
//!   cargo writes into a crate tarball; else `git rev-parse` when this crate sits in its own
//!   workspace checkout; else "unknown commit" (an sdist or a tarball built without git).
//! - target: `MPS_PREFLIGHT_TARGET` if set (`cargo xtask dist` sets `x86_64-unknown-linux-gnu.2.17`,
//!   a glibc version cargo's TARGET does not carry); else cargo's TARGET.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A hung git (a network filesystem, a lock) must not hang the build.
const GIT_DEADLINE: Duration = Duration::from_secs(10);

fn main() {
    println!("cargo:rerun-if-env-changed=MPS_PREFLIGHT_COMMIT");
    println!("cargo:rerun-if-env-changed=MPS_PREFLIGHT_TARGET");
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let commit = env_value("MPS_PREFLIGHT_COMMIT")
        .or_else(|| vcs_info_commit(Path::new(&manifest_dir)))
        .or_else(|| git_commit(Path::new(&manifest_dir)))
        .unwrap_or_else(|| "unknown commit".to_owned());
    let target = env_value("MPS_PREFLIGHT_TARGET")
        .or_else(|| env_value("TARGET"))
        .unwrap_or_else(|| "unknown target".to_owned());
    println!("cargo:rustc-env=MPS_PREFLIGHT_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=MPS_PREFLIGHT_BUILD_TARGET={target}");
}

fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty() && value.chars().all(|c| c.is_ascii_graphic()))
}

/// `"sha1": "<40 hex>"` of the `.cargo_vcs_info.json` in a packaged crate.
fn vcs_info_commit(manifest_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest_dir.join(".cargo_vcs_info.json")).ok()?;
    let rest = text.split_once("\"sha1\"")?.1;
    let value = rest.split('"').nth(1)?;
    short_hash(value)
}

/// The checkout's HEAD, only when this crate is `crates/mps-preflight` of a git checkout (so an
/// unpacked tarball inside some other repository never borrows that repository's commit).
fn git_commit(manifest_dir: &Path) -> Option<String> {
    let root = manifest_dir.parent()?.parent()?;
    let dot_git = root.join(".git");
    if !dot_git.exists() {
        return None;
    }
    // A new commit changes the version string. In a worktree `.git` is a file and HEAD lives
    // elsewhere; the logs/HEAD of the main one moves on every commit of any worktree, which is
    // enough to rerun (a spare rerun costs one compile of this crate).
    for watched in git_paths(root) {
        println!("cargo:rerun-if-changed={watched}");
    }
    let out = git_output(root, &["rev-parse", "--short=7", "HEAD"])?;
    short_hash(out.trim())
}

fn git_paths(root: &Path) -> Vec<String> {
    ["HEAD", "logs/HEAD"]
        .iter()
        .filter_map(|name| {
            git_output(
                root,
                &["rev-parse", "--path-format=absolute", "--git-path", name],
            )
        })
        .map(|path| path.trim().to_owned())
        .filter(|path| Path::new(path).exists())
        .collect()
}

#[allow(
    clippy::disallowed_methods,
    reason = "a build script has no mps-host runner; it bounds the one git call itself"
)]
fn git_output(root: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(None) if started.elapsed() < GIT_DEADLINE => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let output = child.wait_with_output().ok()?;
    String::from_utf8(output.stdout).ok()
}

fn short_hash(value: &str) -> Option<String> {
    let hex = value.get(..7)?;
    hex.chars()
        .all(|c| c.is_ascii_hexdigit())
        .then(|| hex.to_owned())
}
