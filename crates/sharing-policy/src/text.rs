//! Rendering helpers for messages: Python-style quoting (the seed's `{value!r}`) and POSIX
//! shell quoting.

use std::fmt::Write as _;

/// Quotes `value` the way Python's `repr` quotes a string: single quotes unless the text holds
/// a single quote and no double quote, with backslash escapes for the quote, backslash and
/// control characters. Messages use it wherever the seed wrote `{value!r}`.
pub(crate) fn repr(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_repr(&mut out, value);
    out
}

/// Appends [`repr`]`(value)` to `out`.
pub(crate) fn push_repr(out: &mut String, value: &str) {
    // Most values (paths, device names) are printable ASCII with no `'` or `\`: copied whole.
    if value
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'\'' && b != b'\\')
    {
        out.push('\'');
        out.push_str(value);
        out.push('\'');
    } else {
        push_escaped_repr(out, value);
    }
}

/// [`push_repr`] for values that need a chosen quote or escapes.
fn push_escaped_repr(out: &mut String, value: &str) {
    let quote = if value.contains('\'') && !value.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    // Runs of characters that need no escape are copied whole.
    let needs_escape = |c: char| c == quote || c == '\\' || c.is_control();
    push_escaping(out, value, needs_escape);
    out.push(quote);
}

/// `items` as a message lists them: their text, joined by `, `.
pub(crate) fn listed<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let mut out = String::new();
    for (index, item) in items.into_iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = std::fmt::Write::write_fmt(&mut out, format_args!("{item}"));
    }
    out
}

/// `text` without a trailing period, so it can be followed by ". ".
pub(crate) fn clause(text: &str) -> &str {
    text.trim_end().trim_end_matches('.')
}

/// Appends `value` as it reads, unquoted, with only its control characters escaped as
/// [`repr`] escapes them (`\n`, `\t`, `\xNN`), so it cannot break the message's line.
pub(crate) fn push_plain(out: &mut String, value: &str) {
    push_escaping(out, value, char::is_control);
}

/// Appends `value`, each character `needs_escape` picks escaped as [`repr`] escapes it; runs
/// that need none are copied whole.
fn push_escaping(out: &mut String, value: &str, needs_escape: impl Fn(char) -> bool) {
    let mut rest = value;
    while let Some((plain, tail)) = rest
        .find(&needs_escape)
        .and_then(|at| rest.split_at_checked(at))
    {
        out.push_str(plain);
        let mut chars = tail.chars();
        if let Some(ch) = chars.next() {
            push_escape(out, ch);
        }
        rest = chars.as_str();
    }
    out.push_str(rest);
}

/// The escape of one character `repr` does not print as itself.
fn push_escape(out: &mut String, ch: char) {
    match ch {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() => {
            let code = u32::from(c);
            if code <= 0xff {
                let _ = write!(out, "\\x{code:02x}");
            } else {
                let _ = write!(out, "\\u{code:04x}");
            }
        }
        // The quote and the backslash itself.
        c => {
            out.push('\\');
            out.push(c);
        }
    }
}

/// Quotes a name that may not be UTF-8 (a file name, a pipe directory) for a one-line message:
/// Python's `repr` of its text when it is UTF-8; otherwise single-quoted with the same escapes and
/// each byte that is not UTF-8 written `\xNN`. Newlines, control characters and quotes are
/// escaped, so the name can neither break the line nor pass for another message; a backslash
/// is doubled, so a `\xNN` spelled in the name itself stays distinct.
///
/// ```
/// use sharing_policy::quote_name;
/// assert_eq!(quote_name(b"run.json"), "'run.json'");
/// assert_eq!(quote_name(b"a\nerror: forged"), r"'a\nerror: forged'");
/// assert_eq!(quote_name(b"caf\xc3\xa9 \xff.json"), r"'café \xff.json'");
/// assert_eq!(quote_name(br"a\xff"), r"'a\\xff'");
/// assert_eq!(quote_name(b"it's\xff"), r"'it\'s\xff'");
/// ```
pub fn quote_name(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return repr(text);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    out.push('\'');
    for chunk in bytes.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if ch == '\'' || ch == '\\' || ch.is_control() {
                push_escape(&mut out, ch);
            } else {
                out.push(ch);
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out.push('\'');
    out
}

/// Quotes `word` for a POSIX shell, the way Python's `shlex.quote` does: a word made only of
/// `A-Za-z0-9_@%+=:,./-` is left as it is; anything else (including the empty word) is wrapped
/// in single quotes, with each `'` written as `'"'"'`. The result always reads back as exactly
/// `word`, whatever it holds (spaces, quotes, `$(…)`, newlines).
///
/// ```
/// use sharing_policy::shell_quote;
/// assert_eq!(shell_quote("/tmp/nvidia-mps"), "/tmp/nvidia-mps");
/// assert_eq!(shell_quote("/tmp/my pipes"), "'/tmp/my pipes'");
/// assert_eq!(shell_quote("it's $(x)"), r#"'it'"'"'s $(x)'"#);
/// assert_eq!(shell_quote(""), "''");
/// ```
pub fn shell_quote(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 2);
    push_shell_quoted(&mut out, word);
    out
}

/// Appends [`shell_quote`]`(word)` to `out`.
pub(crate) fn push_shell_quoted(out: &mut String, word: &str) {
    let safe = |b: u8| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'_' | b'@' | b'%' | b'+' | b'=' | b':' | b',' | b'.' | b'/' | b'-'
            )
    };
    if !word.is_empty() && word.bytes().all(safe) {
        out.push_str(word);
        return;
    }
    out.push('\'');
    for (at, piece) in word.split('\'').enumerate() {
        if at > 0 {
            out.push_str("'\"'\"'");
        }
        out.push_str(piece);
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_joined_by_commas_and_an_empty_one_is_empty() {
        assert_eq!(listed([4428, 4429, 7]), "4428, 4429, 7");
        assert_eq!(listed(["a"]), "a");
        assert_eq!(listed(Vec::<i64>::new()), "");
    }

    /// `repr` as first written, one character at a time: the reference for its fast paths.
    fn reference_repr(value: &str) -> String {
        let quote = if value.contains('\'') && !value.contains('"') {
            '"'
        } else {
            '\''
        };
        let mut out = String::from(quote);
        for ch in value.chars() {
            match ch {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c == quote => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => {
                    let code = u32::from(c);
                    if code <= 0xff {
                        let _ = write!(out, "\\x{code:02x}");
                    } else {
                        let _ = write!(out, "\\u{code:04x}");
                    }
                }
                c => out.push(c),
            }
        }
        out.push(quote);
        out
    }

    #[test]
    fn plain_text_escapes_only_control_characters() {
        let plain = |value: &str| {
            let mut out = String::new();
            push_plain(&mut out, value);
            out
        };
        assert_eq!(
            plain("Cannot find MPS control daemon process"),
            "Cannot find MPS control daemon process"
        );
        assert_eq!(plain("it's a\\b"), "it's a\\b");
        assert_eq!(plain("one\ntwo\x1b"), "one\\ntwo\\x1b");
    }

    #[test]
    fn repr_matches_python() {
        assert_eq!(repr("cpu"), "'cpu'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(repr("a\\b\n"), "'a\\\\b\\n'");
        assert_eq!(repr("\u{1}"), "'\\x01'");
        assert_eq!(repr(""), "''");
    }

    proptest::proptest! {
        #[test]
        fn repr_matches_the_char_by_char_escape(value in "[ -~]{0,12}|\\PC{0,6}|[\\x00-\\x7f]{0,8}|[\\x00-\\u{a0}\\u{2028}'\"\\\\]{0,8}") {
            proptest::prop_assert_eq!(repr(&value), reference_repr(&value));
        }

        #[test]
        fn shell_quote_matches_shlex(word in "[ -~]{0,12}|\\PC{0,6}") {
            let safe = |b: u8| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b);
            let shlex = if !word.is_empty() && word.bytes().all(safe) {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\"'\"'"))
            };
            proptest::prop_assert_eq!(shell_quote(&word), shlex);
        }
    }

    #[test]
    fn shell_quote_leaves_plain_words_alone() {
        assert_eq!(
            shell_quote("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"),
            "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
        );
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("~/x"), "'~/x'");
        assert_eq!(shell_quote("é"), "'é'");
    }

    /// A value made only of single quotes or only of backslashes (printable ASCII, but not for
    /// the fast path) is quoted and escaped as Python does.
    #[test]
    fn repr_of_only_quotes_or_only_backslashes() {
        assert_eq!(repr("'"), r#""'""#);
        assert_eq!(repr("''"), r#""''""#);
        assert_eq!(repr("\\"), r"'\\'");
        assert_eq!(repr("\\\\"), r"'\\\\'");
    }
}
