//! The results as `JUnit` XML, the format CI dashboards read: one `<testsuite>` per case file,
//! one `<testcase>` per case, a `<failure>` with the differences for each failed case.

use std::fmt::Write as _;

use super::FileResult;

/// The whole report as one XML document.
pub(crate) fn report(files: &[FileResult]) -> String {
    let tests: usize = files.iter().map(|file| file.cases.len()).sum();
    let failures: usize = files.iter().map(FileResult::failures).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"mps-preflight test\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">"
    );
    for file in files {
        let suite = escape(&file.path);
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{suite}\" tests=\"{}\" failures=\"{}\" errors=\"0\">",
            file.cases.len(),
            file.failures()
        );
        for (name, differences) in &file.cases {
            let name = escape(name);
            if differences.is_empty() {
                let _ = writeln!(xml, "    <testcase classname=\"{suite}\" name=\"{name}\"/>");
                continue;
            }
            let text = escape(&differences.join("\n"));
            let message = escape(&differences.join("; "));
            let _ = writeln!(
                xml,
                "    <testcase classname=\"{suite}\" name=\"{name}\">\n      <failure message=\"{message}\">{text}</failure>\n    </testcase>"
            );
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Text safe in XML content and attribute values: the five special characters escaped, and
/// characters XML 1.0 cannot hold at all (most control characters) replaced by U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Escaped so that attribute values keep them (a parser normalises raw ones to spaces).
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_and_forbidden_characters_are_escaped() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y\u{fffe}"), "x\u{fffd}y\u{fffd}");
        assert_eq!(escape("l1\nl2\tz"), "l1&#10;l2&#9;z");
        assert_eq!(escape("GPU-é"), "GPU-é");
    }
}
