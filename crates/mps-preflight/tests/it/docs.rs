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
