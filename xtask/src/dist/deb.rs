//! The CLI's two archives: a ripgrep-style tar.gz and a `.deb` built by `dpkg-deb` from a
//! hand-made control file (leaner than cargo-deb: no extra tool to compile or pin). Both are
//! laid out in a staging folder with explicit modes, and dated to the commit
//! (`SOURCE_DATE_EPOCH`), so a rebuild of one commit gives the same bytes.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use super::{Dist, Extras, capture, copy, exec, recipes};

/// `<stem>.tar.gz` holding `<stem>/`: the binary, `doc/mps-preflight.1`, `complete/`, the
/// READMEs, both licences and the fleet recipes (`contrib/slurm/`, `deploy/`, `doc/fleet.md`,
/// `doc/node-health.md`).
pub(crate) fn tarball(dist: &Dist, binary: &Path, extras: &Extras) -> Result<PathBuf, String> {
    let stem = dist.stem();
    let staging = dist.work.join("dist-staging");
    let top = staging.join(&stem);
    reset(&staging)?;
    install(binary, &top.join("mps-preflight"), 0o755)?;
    write(&top.join("doc/mps-preflight.1"), &extras.man)?;
    write(&top.join("complete/mps-preflight.bash"), &extras.bash)?;
    write(&top.join("complete/_mps-preflight"), &extras.zsh)?;
    write(&top.join("complete/mps-preflight.fish"), &extras.fish)?;
    for (from, to) in DOCS {
        install(&dist.root.join(from), &top.join(to), 0o644)?;
    }
    for file in recipes::files(&dist.root)? {
        install(&file.from, &top.join(&file.to), file.mode)?;
    }
    let archive = dist.out.join(format!("{stem}.tar.gz"));
    exec(
        dist.command("tar")
            .current_dir(&staging)
            .args(["--sort=name", "--owner=0", "--group=0", "--numeric-owner"])
            .arg(format!("--mtime=@{}", dist.epoch))
            .args(["--use-compress-program=gzip -9n", "-cf"])
            .arg(&archive)
            .arg(&stem),
    )?;
    Ok(archive)
}

/// The documents every archive carries: (in the repository, in the archive).
const DOCS: &[(&str, &str)] = &[
    ("README.md", "README.md"),
    ("docs/deploy.md", "doc/deploy.md"),
    ("crates/mps-preflight/README.md", "doc/README-cli.md"),
    ("LICENSE-MIT", "LICENSE-MIT"),
    ("LICENSE-APACHE", "LICENSE-APACHE"),
];

/// `mps-preflight_<v>_amd64.deb`: the binary in /usr/bin, the man page and completions where
/// Debian's man-db, bash-completion, zsh and fish look, the licences in the copyright file, the
/// fleet recipes and their documents under /usr/share/mps-preflight/ (as in the tar.gz).
pub(crate) fn package(dist: &Dist, binary: &Path, extras: &Extras) -> Result<PathBuf, String> {
    let staging = dist.work.join("dist-deb");
    reset(&staging)?;
    install(binary, &staging.join("usr/bin/mps-preflight"), 0o755)?;
    let man = staging.join("usr/share/man/man1/mps-preflight.1.gz");
    write(&man, &gzip(dist, &extras.man)?)?;
    let share = staging.join("usr/share");
    write(
        &share.join("bash-completion/completions/mps-preflight"),
        &extras.bash,
    )?;
    write(
        &share.join("zsh/vendor-completions/_mps-preflight"),
        &extras.zsh,
    )?;
    write(
        &share.join("fish/vendor_completions.d/mps-preflight.fish"),
        &extras.fish,
    )?;
    let doc = share.join("doc/mps-preflight");
    write(&doc.join("copyright"), copyright(dist)?.as_bytes())?;
    for name in ["README.md", "docs/deploy.md"] {
        let text = read(&dist.root.join(name))?;
        write(
            &doc.join(format!("{}.gz", super::file_name(Path::new(name)))),
            &gzip(dist, &text)?,
        )?;
    }
    for file in recipes::files(&dist.root)? {
        install(
            &file.from,
            &share.join("mps-preflight").join(&file.to),
            file.mode,
        )?;
    }
    let control = control(&dist.version, installed_kib(&staging));
    write(&staging.join("DEBIAN/control"), control.as_bytes())?;
    let deb = dist
        .out
        .join(format!("mps-preflight_{}_amd64.deb", dist.version));
    exec(
        dist.command("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(&staging)
            .arg(&deb),
    )?;
    Ok(deb)
}

/// The binary needs glibc >= 2.17 and nothing else (no `libgcc_s`: zig links its own unwinder).
fn control(version: &str, installed_kib: u64) -> String {
    format!(
        "Package: mps-preflight
Version: {version}
Architecture: amd64
Maintainer: mps-preflight developers <mps-preflight@localhost>
Installed-Size: {installed_kib}
Depends: libc6 (>= 2.17)
Section: utils
Priority: optional
Description: fail-closed preflight for CUDA MPS process sharing
 Answers, fail-closed, whether a learner and a collector process will really
 share one physical GPU through a live CUDA MPS daemon, and records the
 evidence. It observes the host with nvidia-smi and read-only
 nvidia-cuda-mps-control queries; it never starts or reconfigures a daemon.
"
    )
}

/// A Debian copyright file (DEP-5) with both licence texts.
fn copyright(dist: &Dist) -> Result<String, String> {
    let mit = String::from_utf8_lossy(&read(&dist.root.join("LICENSE-MIT"))?).into_owned();
    let apache = String::from_utf8_lossy(&read(&dist.root.join("LICENSE-APACHE"))?).into_owned();
    let indent = |text: &str| {
        text.lines()
            .map(|line| {
                if line.trim().is_empty() {
                    " .".to_owned()
                } else {
                    format!(" {line}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(format!(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: mps-preflight

Files: *
Copyright: the mps-preflight developers
License: MIT or Apache-2.0

License: MIT
{}

License: Apache-2.0
{}
",
        indent(&mit),
        indent(&apache)
    ))
}

fn installed_kib(dir: &Path) -> u64 {
    let mut bytes = 0;
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => pending.push(entry.path()),
                Ok(meta) => bytes += meta.len(),
                Err(_) => {}
            }
        }
    }
    bytes.div_ceil(1024)
}

fn gzip(dist: &Dist, data: &[u8]) -> Result<Vec<u8>, String> {
    let scratch = dist.work.join("dist-staging.gz-input");
    std::fs::write(&scratch, data).map_err(|err| format!("{}: {err}", scratch.display()))?;
    let packed = capture(dist.command("gzip").args(["-9nc"]).arg(&scratch));
    let _ = std::fs::remove_file(&scratch);
    packed
}

fn reset(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    }
    mkdir(dir)
}

/// Creates `dir` and its missing parents as 0755: a umask of 077 must not make the packaged
/// folders private (folders that already exist are left alone).
fn mkdir(dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(up) = dir.parent() {
        mkdir(up)?;
    }
    std::fs::create_dir(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    chmod(dir, 0o755)
}

fn parent(path: &Path) -> Result<(), String> {
    match path.parent() {
        Some(dir) => mkdir(dir),
        None => Ok(()),
    }
}

fn write(path: &Path, data: &[u8]) -> Result<(), String> {
    parent(path)?;
    std::fs::write(path, data).map_err(|err| format!("{}: {err}", path.display()))?;
    chmod(path, 0o644)
}

fn install(from: &Path, to: &Path, mode: u32) -> Result<(), String> {
    parent(to)?;
    copy(from, to)?;
    chmod(to, mode)
}

fn chmod(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|err| format!("{}: {err}", path.display()))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|err| format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// dpkg reads a control file as RFC 822-style fields: a blank line would end the paragraph,
    /// and a description's continuation lines must start with a space.
    fn assert_one_paragraph(text: &str) {
        for line in text.trim_end_matches('\n').lines() {
            assert!(!line.trim().is_empty(), "a blank line in {text:?}");
            let continuation = line.starts_with(' ');
            let field = line.split_once(": ").is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
            assert!(continuation || field, "{line:?}");
        }
    }

    #[test]
    fn the_control_file_is_one_paragraph_that_needs_only_glibc_2_17() {
        let control = control("0.2.0", 3451);
        assert_one_paragraph(&control);
        assert!(control.contains("\nVersion: 0.2.0\n"), "{control}");
        assert!(control.contains("\nInstalled-Size: 3451\n"), "{control}");
        assert!(
            control.contains("\nDepends: libc6 (>= 2.17)\n"),
            "{control}"
        );
        assert!(control.ends_with('\n'));
    }

    /// Both archives, built from this repository with a stand-in binary into a scratch folder,
    /// carry the fleet recipes with their modes: the tar.gz under its top folder, the `.deb`
    /// under /usr/share/mps-preflight/. Needs tar, gzip and dpkg-deb (as `cargo xtask dist`).
    #[test]
    fn both_archives_ship_the_fleet_recipes() {
        if ["tar", "gzip", "dpkg-deb"].iter().any(|tool| {
            std::process::Command::new(tool)
                .arg("--version")
                .output()
                .is_err()
        }) {
            eprintln!("SKIPPED both_archives_ship_the_fleet_recipes: needs tar, gzip and dpkg-deb");
            return;
        }
        let scratch = std::env::temp_dir().join(format!("xtask-archives-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let dist = Dist {
            root: Path::new(env!("CARGO_MANIFEST_DIR")).join(".."),
            out: scratch.join("out"),
            work: scratch.join("work"),
            version: "0.0.0".to_owned(),
            path: std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
            epoch: "0".to_owned(),
        };
        mkdir(&dist.out).unwrap();
        let binary = scratch.join("mps-preflight");
        write(&binary, b"#!/bin/sh\n").unwrap();
        let extras = Extras {
            man: b".TH MPS-PREFLIGHT 1\n".to_vec(),
            bash: b"# bash\n".to_vec(),
            zsh: b"# zsh\n".to_vec(),
            fish: b"# fish\n".to_vec(),
        };
        let listing = |command: &mut std::process::Command| -> Vec<(String, String)> {
            // `-rwxr-xr-x root/root 123 1970-01-01 00:00 ./usr/bin/mps-preflight`
            String::from_utf8(capture(command).unwrap())
                .unwrap()
                .lines()
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    Some((fields.first()?.to_string(), fields.last()?.to_string()))
                })
                .collect()
        };
        let tar = tarball(&dist, &binary, &extras).unwrap();
        let tar_entries = listing(std::process::Command::new("tar").arg("-tvzf").arg(&tar));
        let deb = package(&dist, &binary, &extras).unwrap();
        let deb_entries = listing(std::process::Command::new("dpkg-deb").arg("-c").arg(&deb));
        let shipped = recipes::files(&dist.root).unwrap();
        assert!(shipped.len() >= 6, "{shipped:?}");
        for (entries, prefix) in [
            (&tar_entries, format!("{}/", dist.stem())),
            (&deb_entries, "./usr/share/mps-preflight/".to_owned()),
        ] {
            for file in &shipped {
                let path = format!("{prefix}{}", file.to);
                let want = if file.mode == 0o755 {
                    "-rwxr-xr-x"
                } else {
                    "-rw-r--r--"
                };
                assert!(
                    entries
                        .iter()
                        .any(|(mode, name)| *name == path && mode == want),
                    "{path} ({want}) is not in the archive: {entries:?}"
                );
            }
        }
        std::fs::remove_dir_all(&scratch).unwrap();
    }

    #[test]
    fn installed_size_rounds_up_to_kib() {
        let dir = std::env::temp_dir().join(format!("xtask-deb-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write(&dir.join("usr/bin/a"), &[0; 1025]).unwrap();
        write(&dir.join("usr/share/b"), &[0; 10]).unwrap();
        assert_eq!(installed_kib(&dir), 2);
        let mode = std::fs::metadata(dir.join("usr/share"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
