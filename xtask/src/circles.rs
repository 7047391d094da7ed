//! No import circle between the top-level modules of a crate: when two modules
//! import each other, neither can be read, tested or moved alone, and the fix is to split by
//! responsibility (the shared piece goes to a lower module that imports neither).
//!
//! A module is a file or folder directly under a crate's `src/` (`cli.rs` and `cli/*.rs` are
//! `cli`); an edge is a `crate::name` or `crate::{name, …}` path in its text, where `name` is
//! a module or an item the crate root re-exports (`pub use facts::{HostFacts, …}` in `lib.rs`
//! makes `crate::HostFacts` an edge to `facts`: a circle through a re-export is a circle). The
//! check reads the text, as the render-module rule does; `lib.rs` and `main.rs` are the root,
//! not modules.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The crates whose modules must not import each other in a circle.
const CRATES: &[&str] = &[
    "crates/gpu-uuid",
    "crates/sharing-policy",
    "crates/mps-host",
    "crates/sharing-manifest",
    "crates/mps-preflight",
    "crates/mps-preflight-py",
];

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every import circle in the crates of [`CRATES`] under the workspace `root`.
pub(crate) fn violations(root: &Path) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = graph(&root.join(krate).join("src"))?;
        found.extend(circles(&graph).into_iter().map(|circle| {
            format!(
                "{krate}: modules import each other: {}",
                circle.join(" -> ")
            )
        }));
    }
    Ok(found)
}

/// The module graph of one `src/` folder: each module and the modules it names.
fn graph(src: &Path) -> Result<Graph, String> {
    let mut graph = Graph::new();
    let entries =
        fs::read_dir(src).map_err(|err| format!("cannot list {}: {err}", src.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|err| format!("cannot list {}: {err}", src.display()))?
            .path();
        let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
            continue;
        };
        if stem == "lib" || stem == "main" {
            continue;
        }
        let mut text = String::new();
        collect_text(&path, 0, &mut text)?;
        graph.entry(stem).or_default().extend(named_modules(&text));
    }
    let reexports = root_reexports(src)?;
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (module, edges) in &mut graph {
        let named = std::mem::take(edges);
        *edges = named
            .into_iter()
            .filter_map(|name| {
                if modules.contains(&name) {
                    Some(name)
                } else {
                    reexports.get(&name).cloned()
                }
            })
            .filter(|to| to != module && modules.contains(to))
            .collect();
    }
    Ok(graph)
}

/// The items the crate root (`lib.rs`, else `main.rs`) re-exports, each with the module it
/// comes from: `pub use facts::{HostFacts, OsText as Text};` maps `HostFacts` and `Text` to
/// `facts`.
fn root_reexports(src: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut map = BTreeMap::new();
    for root in ["lib.rs", "main.rs"] {
        let path = src.join(root);
        if !path.exists() {
            continue;
        }
        let body = fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        reexports_in(&code_of(&body), &mut map);
    }
    Ok(map)
}

/// The `use` declarations of a root's text (any visibility), read into `map`.
fn reexports_in(text: &str, map: &mut BTreeMap<String, String>) {
    for statement in text.split(';') {
        let statement = statement.trim();
        let Some(at) = statement.find("use ") else {
            continue;
        };
        let visibility = &statement[..at];
        if !visibility.trim().starts_with("pub") {
            continue;
        }
        let path = statement[at + "use ".len()..].trim();
        let path = path.strip_prefix("crate::").unwrap_or(path);
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        let items = rest.trim();
        let items = items
            .strip_prefix('{')
            .and_then(|inner| inner.strip_suffix('}'))
            .unwrap_or(items);
        for item in items.split(',') {
            let name = item.rsplit(" as ").next().unwrap_or(item);
            let name = name.rsplit("::").next().unwrap_or(name);
            if let Some(name) = first_segment(name) {
                map.insert(name, module.trim().to_owned());
            }
        }
    }
}

/// The text of a module file, or of every `.rs` file of a module folder.
fn collect_text(path: &Path, depth: usize, text: &mut String) -> Result<(), String> {
    if depth > 8 {
        return Err(format!("{} is nested too deep", path.display()));
    }
    if path.is_dir() {
        let entries =
            fs::read_dir(path).map_err(|err| format!("cannot list {}: {err}", path.display()))?;
        for entry in entries {
            let entry = entry.map_err(|err| format!("cannot list {}: {err}", path.display()))?;
            collect_text(&entry.path(), depth + 1, text)?;
        }
    } else if path.extension().is_some_and(|ext| ext == "rs") {
        let body = fs::read_to_string(path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        text.push_str(&code_of(&body));
    }
    Ok(())
}

/// What a file imports for its own use: its lines up to its tests (`#[cfg(test)]`; a test may
/// use any module), comments dropped (a doc link such as `[crate::resolve()]` names an item,
/// not an import).
fn code_of(body: &str) -> String {
    let mut code = String::new();
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
}

/// The first path segment after each `crate::` in `text`, braces expanded one level.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '$')) {
            continue; // `$crate::`, `my_crate::`, `super::crate::`
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            names.extend(inner.split(',').filter_map(first_segment));
        } else if let Some(name) = first_segment(rest) {
            names.insert(name);
        }
    }
    names
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Each circle once, as its modules in order with the first repeated at the end.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for start in graph.keys() {
        let mut path = vec![start.clone()];
        search(graph, start, &mut path, &mut found, &mut seen);
    }
    found
}

/// Depth-first from the last module of `path`, recording each path that returns to its start
/// (bounded: a path never revisits a module).
fn search(
    graph: &Graph,
    start: &str,
    path: &mut Vec<String>,
    found: &mut Vec<Vec<String>>,
    seen: &mut BTreeSet<BTreeSet<String>>,
) {
    let Some(last) = path.last().cloned() else {
        return;
    };
    for next in graph.get(&last).into_iter().flatten() {
        if next == start {
            let members: BTreeSet<String> = path.iter().cloned().collect();
            if seen.insert(members) {
                let mut circle = path.clone();
                circle.push(start.to_owned());
                found.push(circle);
            }
        } else if !path.contains(next) && next.as_str() > start {
            path.push(next.clone());
            search(graph, start, path, found, seen);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph_of(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(from, to)| {
                (
                    (*from).to_owned(),
                    to.iter().map(|t| (*t).to_owned()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn two_modules_importing_each_other_are_a_circle() {
        let graph = graph_of(&[
            ("cli", &["attest"]),
            ("attest", &["cli", "output"]),
            ("output", &[]),
        ]);
        assert_eq!(circles(&graph), [["attest", "cli", "attest"]]);
    }

    #[test]
    fn a_longer_circle_is_found_once() {
        let graph = graph_of(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
        assert_eq!(circles(&graph), [["a", "b", "c", "a"]]);
    }

    #[test]
    fn layers_are_no_circle() {
        let graph = graph_of(&[
            ("cli", &["args", "attest"]),
            ("attest", &["args"]),
            ("args", &[]),
        ]);
        assert!(circles(&graph).is_empty());
    }

    #[test]
    fn paths_are_read_with_braces_and_without_other_crates() {
        let text = "use crate::{brief, prom::write};\nlet x = crate::output::Output;\n\
                    $crate::ignored; other_crate::no; use crate :: spaced;";
        let names: Vec<String> = named_modules(text).into_iter().collect();
        assert_eq!(names, ["brief", "output", "prom"]);
    }

    #[test]
    fn comments_and_tests_are_not_imports() {
        let body = "use crate::a;\n/// see [`crate::b()`]\n// crate::c\n#[cfg(test)]\nmod tests { use crate::d; }\n";
        let names: Vec<String> = named_modules(&code_of(body)).into_iter().collect();
        assert_eq!(names, ["a"]);
    }

    #[test]
    fn root_reexports_are_read_with_braces_and_renames() {
        let mut map = BTreeMap::new();
        reexports_in(
            "mod facts;\npub use facts::{HostFacts, OsText as Text};\npub use code::Code;\n\
             use private::Hidden;\npub(crate) use served::nested::Deep;\n",
            &mut map,
        );
        let read: Vec<(&str, &str)> = map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            read,
            [
                ("Code", "code"),
                ("Deep", "served"),
                ("HostFacts", "facts"),
                ("Text", "facts")
            ]
        );
    }

    /// A circle through items the crate root re-exports: `a` names `crate::Thing` (from `b`),
    /// `b` names `crate::a`.
    #[test]
    fn a_circle_through_a_root_reexport_is_found() {
        let dir = std::env::temp_dir().join(format!("xtask-circles-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("lib.rs"), "mod a;\nmod b;\npub use b::Thing;\n").unwrap();
        fs::write(dir.join("a.rs"), "use crate::Thing;\n").unwrap();
        fs::write(
            dir.join("b.rs"),
            "pub struct Thing;\nfn f() { crate::a::g(); }\n",
        )
        .unwrap();
        let found = circles(&graph(&dir).unwrap());
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [["a", "b", "a"]]);
    }

    #[test]
    fn the_repository_has_no_import_circle() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(violations(&root), Ok(Vec::new()));
    }
}
