//! The results as `JUnit` XML, the format CI dashboards read: one `<testsuite>` per case file,
//! one `<testcase>` per case, a `<failure>` with the differences for each failed case, and one
//! `<testcase>` with an `<error>` for each case file that could not be read. Each `<testcase>`
//! has its `time` in seconds, and a `classname` without dots (the file's path less
//! `.cases.json`, `/` kept), since Jenkins reads dots as package separators.

use std::fmt::Write as _;
use std::time::Duration;

use super::cases::SUFFIX;
use super::{FileResult, Unreadable};

/// The whole report as one XML document.
pub(crate) fn report(files: &[FileResult], unreadable: &[Unreadable]) -> String {
    let tests: usize = files.iter().map(|file| file.cases.len()).sum::<usize>() + unreadable.len();
    let failures: usize = files.iter().map(FileResult::failures).sum();
    let errors = unreadable.len();
    let time: Duration = files
        .iter()
        .flat_map(|file| file.cases.iter().map(|(_, _, time)| *time))
        .sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"mps-preflight test\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">",
        seconds(time)
    );
    for file in unreadable {
        let (suite, class) = (escape(&file.path), escape(&classname(&file.path)));
        let message = escape(&file.message);
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{suite}\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"0.000\">\n    <testcase classname=\"{class}\" name=\"(the case file)\" time=\"0.000\">\n      <error message=\"{message}\">{message}</error>\n    </testcase>\n  </testsuite>"
        );
    }
    for file in files {
        let (suite, class) = (escape(&file.path), escape(&classname(&file.path)));
        let time: Duration = file.cases.iter().map(|(_, _, time)| *time).sum();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{suite}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{}\">",
            file.cases.len(),
            file.failures(),
            seconds(time)
        );
        for (name, differences, time) in &file.cases {
            let (name, time) = (escape(name), seconds(*time));
            if differences.is_empty() {
                let _ = writeln!(
                    xml,
                    "    <testcase classname=\"{class}\" name=\"{name}\" time=\"{time}\"/>"
                );
                continue;
            }
            let text = escape(&differences.join("\n"));
            let message = escape(&differences.join("; "));
            let _ = writeln!(
                xml,
                "    <testcase classname=\"{class}\" name=\"{name}\" time=\"{time}\">\n      <failure message=\"{message}\">{text}</failure>\n    </testcase>"
            );
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Seconds with millisecond precision, as `JUnit` writers print them.
fn seconds(time: Duration) -> String {
    format!("{:.3}", time.as_secs_f64())
}

/// The case file's path without `.cases.json` (or `.json`), every other `.` made `_`: `/`
/// stays, so a dashboard still groups by folder, and no dot splits the name into packages.
fn classname(path: &str) -> String {
    let stem = path
        .strip_suffix(SUFFIX)
        .or_else(|| path.strip_suffix(".json"))
        .unwrap_or(path);
    stem.replace('.', "_")
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

    #[test]
    fn a_classname_has_no_dots_and_keeps_folders() {
        assert_eq!(classname("fleet/gpu-hosts.cases.json"), "fleet/gpu-hosts");
        assert_eq!(classname("./a.b/x.v2.cases.json"), "_/a_b/x_v2");
        assert_eq!(classname("plain.json"), "plain");
        assert_eq!(seconds(Duration::from_micros(1600)), "0.002");
    }
}
