//! Small text helpers shared by the region writers and the edit engine.

use std::borrow::Cow;

/// The line break a document uses: CRLF when its first line ends with one,
/// else LF (also for a document without any line break).
pub(crate) fn newline_of(text: &str) -> &'static str {
    match memchr::memchr(b'\n', text.as_bytes()) {
        Some(pos) if pos > 0 && text.as_bytes().get(pos - 1) == Some(&b'\r') => "\r\n",
        _ => "\n",
    }
}

/// `text` with every lone LF turned into `newline` (a no-op for LF).
pub(crate) fn with_newline<'a>(text: &'a str, newline: &str) -> Cow<'a, str> {
    if newline == "\n" || !text.contains('\n') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 16 + 2);
    let mut previous = '\0';
    for ch in text.chars() {
        if ch == '\n' && previous != '\r' {
            out.push('\r');
        }
        out.push(ch);
        previous = ch;
    }
    Cow::Owned(out)
}

/// The first `max` characters of `text` (never splits a code point).
pub(crate) fn preview(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => text.get(..cut).unwrap_or(text).to_owned(),
        None => text.to_owned(),
    }
}

/// The 1-based line that holds byte offset `pos` of `text`.
pub(crate) fn line_of(text: &str, pos: usize) -> usize {
    let head = text.as_bytes().get(..pos).unwrap_or(text.as_bytes());
    memchr::memchr_iter(b'\n', head).count().saturating_add(1)
}

/// The line breaks to put after `before` so that what follows starts after
/// a blank line: nothing for an empty text or one that already ends with a
/// blank line, one break after a complete line, two otherwise.
pub(crate) fn blank_line_separator(before: &str, newline: &str) -> &'static str {
    let crlf = newline == "\r\n";
    if before.is_empty() || before.ends_with("\n\n") || before.ends_with("\n\r\n") {
        ""
    } else if before.ends_with('\n') {
        if crlf { "\r\n" } else { "\n" }
    } else if crlf {
        "\r\n\r\n"
    } else {
        "\n\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_detection() {
        assert_eq!(newline_of("a\r\nb\n"), "\r\n");
        assert_eq!(newline_of("a\nb\r\n"), "\n");
        assert_eq!(newline_of("no break"), "\n");
        assert_eq!(newline_of("\n"), "\n");
    }

    #[test]
    fn crlf_conversion_keeps_existing_crlf() {
        assert_eq!(with_newline("a\nb\r\nc", "\r\n"), "a\r\nb\r\nc");
        assert_eq!(with_newline("a\nb", "\n"), "a\nb");
    }

    #[test]
    fn preview_counts_characters() {
        assert_eq!(preview("日本語テキスト", 3), "日本語");
        assert_eq!(preview("abc", 200), "abc");
        assert_eq!(preview("", 0), "");
    }

    #[test]
    fn lines_are_one_based() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }

    #[test]
    fn separator_reaches_a_blank_line() {
        assert_eq!(blank_line_separator("", "\n"), "");
        assert_eq!(blank_line_separator("a\n\n", "\n"), "");
        assert_eq!(blank_line_separator("a\n", "\n"), "\n");
        assert_eq!(blank_line_separator("a", "\n"), "\n\n");
        assert_eq!(blank_line_separator("a\r\n", "\r\n"), "\r\n");
        assert_eq!(blank_line_separator("a\r\n\r\n", "\r\n"), "");
    }
}
