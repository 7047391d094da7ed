//! The fleet recipes and their documents, shipped in both archives (the tar.gz under its top
//! folder, the `.deb` under `/usr/share/mps-preflight/`) in one layout: `contrib/slurm/` (the
//! Slurm scripts, executable), `deploy/` (node-problem-detector, Prometheus) and
//! `doc/fleet.md`, `doc/node-health.md`. The documents link to the recipes as `../contrib/…`
//! and `../deploy/…`, so the links work in the installed tree as in the repository.

use std::path::{Path, PathBuf};

/// The folders shipped whole, as in the repository.
const FOLDERS: &[&str] = &["contrib/slurm", "deploy"];

/// The fleet documents: (in the repository, in the shipped tree).
const DOCS: &[(&str, &str)] = &[
    ("docs/fleet.md", "doc/fleet.md"),
    ("docs/node-health.md", "doc/node-health.md"),
];

/// One shipped file: where it is in the repository, where it goes in the tree, its mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shipped {
    pub(crate) from: PathBuf,
    pub(crate) to: String,
    pub(crate) mode: u32,
}

/// Every recipe and fleet document under `root`, sorted by where it goes. A shell script is
/// 0755 (slurm.conf's `Prolog=` runs it as it is), everything else 0644.
pub(crate) fn files(root: &Path) -> Result<Vec<Shipped>, String> {
    let mut shipped = Vec::new();
    for folder in FOLDERS {
        let mut pending = vec![PathBuf::from(folder)];
        while let Some(relative) = pending.pop() {
            let dir = root.join(&relative);
            let entries =
                std::fs::read_dir(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
            for entry in entries {
                let entry = entry.map_err(|err| format!("{}: {err}", dir.display()))?;
                let path = relative.join(entry.file_name());
                let kind = entry
                    .file_type()
                    .map_err(|err| format!("{}: {err}", path.display()))?;
                if kind.is_dir() {
                    pending.push(path);
                } else if kind.is_file() {
                    let script = path.extension().is_some_and(|ext| ext == "sh");
                    let mode = if script { 0o755 } else { 0o644 };
                    let to = path.to_string_lossy().into_owned();
                    shipped.push(Shipped {
                        from: root.join(&path),
                        to,
                        mode,
                    });
                }
            }
        }
    }
    for (from, to) in DOCS {
        shipped.push(Shipped {
            from: root.join(from),
            to: (*to).to_owned(),
            mode: 0o644,
        });
    }
    shipped.sort_by(|a, b| a.to.cmp(&b.to));
    Ok(shipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The relative links of a shipped document into the recipes (`](../contrib/…)`,
    /// `](../deploy/…)`), as paths from the shipped tree's top, without any `#anchor`.
    fn recipe_links(markdown: &str) -> Vec<String> {
        markdown
            .split("](../")
            .skip(1)
            .filter_map(|rest| rest.split([')', '#']).next())
            .filter(|target| target.starts_with("contrib/") || target.starts_with("deploy/"))
            .map(str::to_owned)
            .collect()
    }

    fn repository() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn every_slurm_recipe_and_fleet_document_is_shipped_with_its_mode() {
        let shipped = files(&repository()).unwrap();
        let find = |to: &str| shipped.iter().find(|file| file.to == to);
        for script in ["prolog.sh", "task-prolog.sh", "srun-probe.sh"] {
            let file = find(&format!("contrib/slurm/{script}")).expect(script);
            assert_eq!(file.mode, 0o755, "{script}");
        }
        for to in [
            "deploy/node-problem-detector/mps-preflight-monitor.json",
            "deploy/prometheus/mps-preflight-rules.yml",
            "doc/fleet.md",
            "doc/node-health.md",
        ] {
            assert_eq!(find(to).expect(to).mode, 0o644, "{to}");
        }
        // Every file of contrib/slurm/ is shipped, a new recipe too.
        let in_repository = std::fs::read_dir(repository().join("contrib/slurm"))
            .unwrap()
            .count();
        let in_tree = shipped
            .iter()
            .filter(|file| file.to.starts_with("contrib/slurm/"))
            .count();
        assert_eq!(in_tree, in_repository);
        assert!(shipped.iter().all(|file| file.from.is_file()));
    }

    /// The shipped documents' links into the recipes resolve inside the shipped tree.
    #[test]
    fn the_documents_links_to_the_recipes_resolve_in_the_shipped_tree() {
        let shipped = files(&repository()).unwrap();
        let mut links = 0;
        for doc in shipped.iter().filter(|file| file.to.starts_with("doc/")) {
            let text = std::fs::read_to_string(&doc.from).unwrap();
            for target in recipe_links(&text) {
                assert!(
                    shipped.iter().any(|file| file.to == target),
                    "{} links to {target}, which is not shipped",
                    doc.to
                );
                links += 1;
            }
        }
        assert!(links >= 4, "only {links} links to recipes");
        assert_eq!(
            recipe_links(
                "see [a](../contrib/slurm/a.sh) and [b](../deploy/x.json#top), [c](cli.md)"
            ),
            ["contrib/slurm/a.sh", "deploy/x.json"]
        );
    }
}
