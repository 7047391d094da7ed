//! The examples in docs/cli.md print what the binary prints.

use crate::support::FakeHost;

/// `(command line, expected output)` of each `console` code block whose output is not elided.
fn examples(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut current: Option<(String, String)> = None;
    let mut continued = false;
    for line in markdown.lines() {
        if line.starts_with("```console") {
            in_block = true;
            continue;
        }
        if !in_block {
            continue;
        }
        if line.starts_with("```") {
            in_block = false;
            out.extend(current.take());
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            out.extend(current.take());
            current = Some((command.trim_end_matches('\\').to_owned(), String::new()));
            continued = line.ends_with('\\');
        } else if continued {
            if let Some((command, _)) = &mut current {
                command.push_str(line.trim().trim_end_matches('\\'));
            }
            continued = line.ends_with('\\');
        } else if let Some((_, output)) = &mut current {
            output.push_str(line);
            output.push('\n');
        }
    }
    out.into_iter()
        .filter(|(command, output)| command.starts_with("mps-preflight ") && !output.contains('…'))
        .collect()
}

#[test]
fn console_examples_are_current() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let markdown = std::fs::read_to_string(root.join("docs/cli.md")).unwrap();
    let examples = examples(&markdown);
    assert!(examples.len() >= 2, "found {} examples", examples.len());
    let host = FakeHost::new();
    for (command, expected) in examples {
        let mut args: Vec<String> = command
            .split_whitespace()
            .skip(1)
            .map(str::to_owned)
            .collect();
        for arg in &mut args {
            if arg.starts_with("fixtures/") {
                *arg = root.join(arg.as_str()).display().to_string();
            }
        }
        let run = host.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let printed = format!("{}{}", run.stdout, run.stderr);
        assert_eq!(
            printed, expected,
            "docs/cli.md: `{command}` prints something else now"
        );
    }
}

/// A paragraph of the docs that names a snapshot schema version (1 or later)
/// also names the one `capture` writes: "snapshots are v1" after `capture` moved to v2 is the
/// drift this catches. (`v0` is the fixture of an unsupported version.)
#[test]
fn documented_snapshot_versions_name_what_capture_writes() {
    let host = FakeHost::new();
    let run = host.run(&["capture"]);
    assert_eq!(run.code, 0, "{}", run.render());
    let written: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let schema = written["schema"].as_str().unwrap().to_owned();
    let current = schema.rsplit('/').next().unwrap().to_owned(); // "v2"
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pages = vec![root.join("README.md"), root.join("fixtures/README.md")];
    for folder in [
        "docs",
        "crates/sharing-policy",
        "crates/mps-preflight",
        "crates/mps-preflight-py",
    ] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "md") {
                pages.push(path);
            }
        }
    }
    let named = |paragraph: &str| -> bool {
        paragraph
            .match_indices("host-facts/v")
            .filter_map(|(at, prefix)| paragraph.get(at + prefix.len()..))
            .any(|rest| !rest.starts_with('0'))
    };
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for paragraph in text.split("\n\n").filter(|paragraph| named(paragraph)) {
            assert!(
                paragraph.contains(&format!("host-facts/{current}"))
                    || paragraph.contains(&format!("`{current}`")),
                "{}: names a snapshot schema but not {schema}, which capture writes:\n{paragraph}",
                page.display()
            );
        }
    }
}

/// The README's quick start shows a clean validation, nothing unverified.
#[test]
fn the_readme_quick_start_validates_with_nothing_unverified() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let first = readme
        .lines()
        .find(|line| line.starts_with("cargo run -q -p mps-preflight -- check "))
        .expect("the quick start's first command");
    let args: Vec<&str> = first
        .trim_start_matches("cargo run -q -p mps-preflight -- ")
        .split_whitespace()
        .collect();
    let host = FakeHost::new();
    let args: Vec<String> = args
        .iter()
        .map(|arg| {
            if arg.starts_with("fixtures/") {
                root.join(arg).display().to_string()
            } else {
                (*arg).to_owned()
            }
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let evidence = host.run(&args).json("the README's quick start");
    assert_eq!(evidence["validated"], true);
    assert_eq!(evidence["unverified"], serde_json::json!([]));
}

/// The Kubernetes recipes give the probe's container what it needs: the `compute` driver
/// capability (libnvidia-container mounts `nvidia-cuda-mps-control` only with it) besides
/// `utility` (`nvidia-smi`), and, in a `hostPID` pod, `SYS_PTRACE` (to read the host daemon's
/// environment as root from a container's default capability set).
#[test]
fn the_kubernetes_recipes_give_the_probe_what_it_needs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let markdown = std::fs::read_to_string(root.join("docs/node-health.md")).unwrap();
    let blocks: Vec<&str> = markdown
        .split("```yaml\n")
        .skip(1)
        .filter_map(|rest| rest.split("\n```").next())
        .filter(|block| block.contains("mps-preflight"))
        .collect();
    assert!(blocks.len() >= 2, "found {} YAML recipes", blocks.len());
    for block in blocks {
        let capabilities: Vec<&str> = block
            .lines()
            .filter(|line| line.contains("NVIDIA_DRIVER_CAPABILITIES"))
            .collect();
        assert!(!capabilities.is_empty(), "{block}");
        for line in capabilities {
            let value = line.split("value:").nth(1).unwrap_or_default();
            let words: Vec<&str> = value
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|word| !word.is_empty())
                .collect();
            assert!(
                words.contains(&"compute") && words.contains(&"utility") || words == ["all"],
                "{line}"
            );
        }
        if block.contains("hostPID: true") {
            assert!(
                block.contains(r#"capabilities: { add: ["SYS_PTRACE"] }"#),
                "a hostPID recipe without SYS_PTRACE:\n{block}"
            );
        }
    }
}
