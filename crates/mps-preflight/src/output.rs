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
        for note in &self.notes {
            let _ = writeln!(err_stream, "note: {}", one_line(note));
        }
        for warning in &self.warnings {
            let _ = writeln!(err_stream, "warning: {}", one_line(warning));
        }
        for message in &errors {
            // Nothing sensible is left to do when stderr itself is closed.
            let _ = writeln!(err_stream, "error: {}", one_line(message));
        }
        status.code()
    }
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
