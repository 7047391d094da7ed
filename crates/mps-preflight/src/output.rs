//! What a command produces, before it is written: stdout text, note, warning and error lines,
//! and the exit status.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

/// The documented exit statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Status {
    /// 0: success.
    #[default]
    Ok,
    /// 1: rejected (an unmet prerequisite or an inconsistency).
    Rejected,
    /// 2: a usage error or an input that cannot be read or written.
    Input,
}

impl Status {
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Rejected => 1,
            Self::Input => 2,
        }
    }
}

/// A command's result: data for stdout, messages for stderr (each printed as `error: …`, after
/// the notes, each printed as `note: …`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Output {
    pub(crate) status: Status,
    pub(crate) stdout: String,
    pub(crate) errors: Vec<String>,
    /// What a successful command wants a reader to know without failing: what could not be
    /// observed, for example. Never changes stdout or the status.
    pub(crate) notes: Vec<String>,
    /// What a successful command did that was probably not meant (an entry CUDA would ignore),
    /// printed as `warning: …`. Never changes stdout or the status.
    pub(crate) warnings: Vec<String>,
}

impl Output {
    /// Exit 0 with `stdout`.
    pub(crate) fn data(stdout: String) -> Self {
        Self {
            stdout,
            ..Self::default()
        }
    }

    /// Exit 1, stdout empty, one error.
    pub(crate) fn rejected(message: impl Into<String>) -> Self {
        Self {
            status: Status::Rejected,
            errors: vec![message.into()],
            ..Self::default()
        }
    }

    /// Exit 2, stdout empty, one error.
    pub(crate) fn input(message: impl Into<String>) -> Self {
        Self {
            status: Status::Input,
            errors: vec![message.into()],
            ..Self::default()
        }
    }

    /// This output with `note` added (printed as `note: …` on stderr).
    pub(crate) fn with_note(mut self, note: Option<String>) -> Self {
        self.notes.extend(note);
        self
    }

    /// Writes stdout then stderr and returns the exit status; a failed write to stdout (a
    /// closed pipe) becomes exit 2.
    pub(crate) fn emit(self) -> u8 {
        let mut status = self.status;
        let mut errors = self.errors;
        if !self.stdout.is_empty() {
            let mut out = std::io::stdout().lock();
            if let Err(err) = out
                .write_all(self.stdout.as_bytes())
                .and_then(|()| out.flush())
            {
                errors.push(format!("cannot write to standard output: {err}"));
                status = Status::Input;
            }
        }
        let mut err_stream = std::io::stderr().lock();
        let lines = (self.notes.iter().map(|line| ("note", line)))
            .chain(self.warnings.iter().map(|line| ("warning", line)))
            .chain(errors.iter().map(|line| ("error", line)));
        for (kind, line) in lines {
            // Nothing sensible is left to do when stderr itself is closed.
            let _ = writeln!(err_stream, "{kind}: {}", one_line(&capped(line)));
        }
        status.code()
    }
}

/// The most characters of one quoted value a message shows (a 13 MB string
/// in a snapshot made a 13 MB error line).
pub(crate) const QUOTED_CAP: usize = 200;

/// The most characters of one message, whatever it quotes.
const MESSAGE_CAP: usize = 8 * 1024;

/// `message` with each `"…"`-quoted value (Rust's and serde's quoting, `\"` escapes kept)
/// longer than [`QUOTED_CAP`] characters cut there, saying how many characters were cut, and
/// the whole message cut at [`MESSAGE_CAP`] characters the same way.
pub(crate) fn capped(message: &str) -> Cow<'_, str> {
    if message.len() <= QUOTED_CAP {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len().min(MESSAGE_CAP + 64));
    // The quote that opened the current value, if inside one.
    let mut quote: Option<char> = None;
    let (mut escaped, mut run, mut cut, mut previous) = (false, 0_usize, 0_usize, ' ');
    for ch in message.chars() {
        match quote {
            Some(open) if escaped || ch != open => {
                escaped = !escaped && ch == '\\';
                run += 1;
                if run > QUOTED_CAP {
                    cut += 1;
                    continue;
                }
            }
            Some(_) => {
                if cut > 0 {
                    let _ = write!(out, "… ({cut} more characters cut)");
                }
                (quote, run, cut) = (None, 0, 0);
            }
            // `'` opens a value only after a non-alphanumeric (`os='x'`, not `process's`).
            None if ch == '"' || (ch == '\'' && !previous.is_alphanumeric()) => {
                (quote, escaped) = (Some(ch), false);
            }
            None => {}
        }
        previous = ch;
        out.push(ch);
    }
    if cut > 0 {
        let _ = write!(out, "… ({cut} more characters cut)");
    }
    let total = out.chars().count();
    if total > MESSAGE_CAP {
        let mut short: String = out.chars().take(MESSAGE_CAP).collect();
        let _ = write!(short, "… ({} more characters cut)", total - MESSAGE_CAP);
        return Cow::Owned(short);
    }
    Cow::Owned(out)
}

/// `text` with every control character escaped (`\n`, `\r`, `\t`, `\xNN`), so a
/// name interpolated into a message (a pipe directory, a file name) cannot end its line early or
/// start a forged `error:` line. Names are quoted where they are interpolated; this is the last
/// guard for every message of every command.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        match ch {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Every control character is at most U+009F.
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Pretty JSON with a trailing newline (`serde_json`'s `{:#}` cannot fail).
pub(crate) fn json_text(value: &serde_json::Value) -> String {
    format!("{value:#}\n")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn long_quoted_values_are_cut_and_say_how_much() {
        let value = "x".repeat(13_000);
        let message = format!("field `os`: invalid type: string \"{value}\", expected a map");
        let shown = capped(&message);
        let expected = format!(
            "field `os`: invalid type: string \"{}… (12800 more characters cut)\", expected a map",
            "x".repeat(QUOTED_CAP)
        );
        assert_eq!(shown, expected);
        let short = "a \"short\" value";
        assert!(matches!(capped(short), Cow::Borrowed(_)));
        let repr = format!(
            "the process's host: got os='{}'; use Linux",
            "w".repeat(500)
        );
        assert!(
            capped(&repr).ends_with("(300 more characters cut)'; use Linux"),
            "{}",
            capped(&repr)
        );
        // An escaped quote does not end the value.
        let escaped = format!("\"{}\\\"{}\" and \"b\"", "y".repeat(150), "z".repeat(150));
        assert!(
            capped(&escaped).ends_with("(102 more characters cut)\" and \"b\""),
            "{}",
            capped(&escaped)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Whatever a message quotes, it ends up bounded, and one without long values is kept.
        #[test]
        fn every_message_is_bounded(parts in proptest::collection::vec((".{0,40}", 0_usize..3000), 0..12)) {
            let mut message = String::new();
            for (text, long) in &parts {
                let _ = write!(message, "{text} \"{}\"", "v".repeat(*long));
            }
            let shown = capped(&message);
            prop_assert!(shown.chars().count() <= MESSAGE_CAP + 40);
            let plain = |text: &String| !text.contains(['"', '\'']);
            let short = parts.iter().all(|(text, long)| *long <= QUOTED_CAP && plain(text));
            if short && message.chars().count() <= MESSAGE_CAP {
                prop_assert_eq!(shown.as_ref(), message.as_str());
            }
        }
    }
}
