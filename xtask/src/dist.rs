//! `cargo xtask dist`: the release artifacts in `target/dist/`, built the way
//! `shared/notes/dist.md` verified on this kind of machine (zig from `PyPI`, no Docker, no extra
//! Rust target, no system package):
//!
//! - `mps-preflight-<v>-x86_64-linux-gnu`: the CLI linked against glibc 2.17 (cargo-zigbuild);
//! - `mps-preflight-<v>-x86_64-linux-gnu.tar.gz`: it with the man page, completions, READMEs,
//!   both licences and the fleet recipes (contrib/slurm/, deploy/, their documents;
//!   dist/recipes.rs); `mps-preflight_<v>_amd64.deb`: the same in Debian's places, the recipes
//!   under /usr/share/mps-preflight/ (dist/deb.rs);
//! - the manylinux2014 abi3 wheel (`maturin --zig`) and the sdist;
//! - `SHA256SUMS` over all of them.
//!
//! The tools are pinned and installed into a venv under `target/dist-tools/`; the CLI and the
//! wheel build in target directories of their own (`target/dist-cli`, `target/dist-wheel`):
//! their zig linker wrappers differ, so sharing one would rebuild every crate each time.

mod deb;
mod recipes;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The verified tool set (dist.md §6). Changing a pin reinstalls on the next run.
const TOOLS: &[&str] = &[
    "maturin[zig]==1.16.0",
    "ziglang==0.17.1",
    "cargo-zigbuild==0.24.1",
    "auditwheel==6.8.2",
];

/// The glibc floor of the CLI and the wheel: manylinux2014 = `manylinux_2_17`.
const ZIG_TARGET: &str = "x86_64-unknown-linux-gnu.2.17";

/// Where a build runs and what it is called.
pub(crate) struct Dist {
    pub(crate) root: PathBuf,
    pub(crate) out: PathBuf,
    /// Where the archives are staged (`target/`).
    pub(crate) work: PathBuf,
    pub(crate) version: String,
    /// `target/dist-tools/bin` first, so maturin and cargo-zigbuild find zig as `python -m ziglang`.
    path: String,
    /// Commit time, for reproducible archive timestamps.
    pub(crate) epoch: String,
}

pub(crate) fn run() -> Result<(), String> {
    let dist = prepare()?;
    let binary = build_cli(&dist)?;
    let extras = extras(&dist, &binary)?;
    let mut artifacts = vec![binary.clone()];
    artifacts.push(deb::tarball(&dist, &binary, &extras)?);
    artifacts.push(deb::package(&dist, &binary, &extras)?);
    artifacts.extend(build_python(&dist)?);
    checksums(&dist, &artifacts)?;
    for artifact in &artifacts {
        let size = std::fs::metadata(artifact).map_or(0, |meta| meta.len());
        eprintln!("xtask: dist: {} ({size} bytes)", file_name(artifact));
    }
    eprintln!("xtask: dist: {} ok", dist.out.display());
    Ok(())
}

fn prepare() -> Result<Dist, String> {
    let metadata = super::layers::cargo_metadata()?;
    let root = PathBuf::from(
        metadata
            .get("workspace_root")
            .and_then(serde_json::Value::as_str)
            .ok_or("cargo metadata names no workspace_root")?,
    );
    let version = metadata
        .get("packages")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .find(|package| {
            package
                .get("name")
                .is_some_and(|name| name == "mps-preflight")
        })
        .and_then(|package| package.get("version")?.as_str())
        .ok_or("cargo metadata has no mps-preflight version")?
        .to_owned();
    let target = root.join("target");
    let out = target.join("dist");
    // Only this run's artifacts: an old version's wheel must not reach SHA256SUMS.
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(|err| format!("{}: {err}", out.display()))?;
    }
    std::fs::create_dir_all(&out).map_err(|err| format!("{}: {err}", out.display()))?;
    let tools = install_tools(&target.join("dist-tools"))?;
    let path = match std::env::var("PATH") {
        Ok(rest) if !rest.is_empty() => format!("{}:{rest}", tools.display()),
        _ => format!("{}:/usr/bin:/bin", tools.display()),
    };
    let epoch = commit_epoch(&root);
    Ok(Dist {
        root,
        out,
        work: target,
        version,
        path,
        epoch,
    })
}

/// The pinned tools in a venv (`python3 -m venv`, or `$PYTHON`); pip runs only when the pins
/// changed since the last install (a stamp file records them).
fn install_tools(venv: &Path) -> Result<PathBuf, String> {
    let bin = venv.join("bin");
    let stamp = venv.join("pinned-tools.txt");
    let wanted = TOOLS.join("\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|found| found == wanted) {
        return Ok(bin);
    }
    if !bin.join("python").exists() {
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        exec(Command::new(python).args(["-m", "venv"]).arg(venv))?;
    }
    exec(
        Command::new(bin.join("python"))
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(TOOLS),
    )?;
    std::fs::write(&stamp, wanted).map_err(|err| format!("{}: {err}", stamp.display()))?;
    Ok(bin)
}

/// `git log -1 --format=%ct`, or 0 outside git (an unpacked tarball).
fn commit_epoch(root: &Path) -> String {
    Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["log", "-1", "--format=%ct"])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|epoch| !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| "0".to_owned())
}

impl Dist {
    /// A command with the tools first on PATH and the build's target name for `--version`.
    pub(crate) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.root)
            .env("PATH", &self.path)
            .env("MPS_PREFLIGHT_TARGET", ZIG_TARGET)
            .env("SOURCE_DATE_EPOCH", &self.epoch);
        command
    }

    pub(crate) fn stem(&self) -> String {
        format!("mps-preflight-{}-x86_64-linux-gnu", self.version)
    }
}

fn build_cli(dist: &Dist) -> Result<PathBuf, String> {
    exec(
        dist.command(super::cargo_program())
            .env("CARGO_TARGET_DIR", dist.root.join("target/dist-cli"))
            .args(["zigbuild", "--release", "--locked", "-p", "mps-preflight"])
            .args(["--target", ZIG_TARGET]),
    )?;
    // The `.2.17` suffix is not part of the output directory.
    let built = dist
        .root
        .join("target/dist-cli/x86_64-unknown-linux-gnu/release/mps-preflight");
    let binary = dist.out.join(dist.stem());
    copy(&built, &binary)?;
    Ok(binary)
}

/// The man page and the completions, generated by the binary just built.
pub(crate) struct Extras {
    pub(crate) man: Vec<u8>,
    pub(crate) bash: Vec<u8>,
    pub(crate) zsh: Vec<u8>,
    pub(crate) fish: Vec<u8>,
}

fn extras(dist: &Dist, binary: &Path) -> Result<Extras, String> {
    let generate = |args: &[&str]| capture(dist.command(binary).args(args));
    Ok(Extras {
        man: generate(&["man"])?,
        bash: generate(&["completions", "bash"])?,
        zsh: generate(&["completions", "zsh"])?,
        fish: generate(&["completions", "fish"])?,
    })
}

/// The wheel (manylinux2014, abi3) and the sdist; maturin refuses a link that is not
/// `manylinux_2_17` compliant, and scripts/dist-check.sh asks auditwheel too.
fn build_python(dist: &Dist) -> Result<Vec<PathBuf>, String> {
    let manifest = "crates/mps-preflight-py/Cargo.toml";
    exec(
        dist.command("maturin")
            .env("CARGO_TARGET_DIR", dist.root.join("target/dist-wheel"))
            .args(["build", "--release", "--locked", "--zig"])
            .args(["--compatibility", "manylinux2014", "-m", manifest, "-o"])
            .arg(&dist.out),
    )?;
    exec(
        dist.command("maturin")
            .args(["sdist", "-m", manifest, "-o"])
            .arg(&dist.out),
    )?;
    let v = &dist.version;
    let wheel = dist.out.join(format!(
        "mps_preflight-{v}-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"
    ));
    let sdist = dist.out.join(format!("mps_preflight-{v}.tar.gz"));
    for artifact in [&wheel, &sdist] {
        if !artifact.is_file() {
            return Err(format!("maturin wrote no {}", artifact.display()));
        }
    }
    Ok(vec![wheel, sdist])
}

fn checksums(dist: &Dist, artifacts: &[PathBuf]) -> Result<(), String> {
    let sums = capture(
        dist.command("sha256sum")
            .current_dir(&dist.out)
            .args(artifacts.iter().map(|artifact| file_name(artifact))),
    )?;
    let file = dist.out.join("SHA256SUMS");
    std::fs::write(&file, sums).map_err(|err| format!("{}: {err}", file.display()))
}

pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(crate) fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|err| format!("copy {} to {}: {err}", from.display(), to.display()))
}

pub(crate) fn exec(command: &mut Command) -> Result<(), String> {
    eprintln!("xtask: dist: {}", shown(command));
    let status = command
        .status()
        .map_err(|err| format!("cannot run {}: {err}", shown(command)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", shown(command)))
    }
}

pub(crate) fn capture(command: &mut Command) -> Result<Vec<u8>, String> {
    let output = command
        .output()
        .map_err(|err| format!("cannot run {}: {err}", shown(command)))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            shown(command),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn shown(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(
        command
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned()),
    );
    words.join(" ")
}
