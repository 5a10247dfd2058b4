//! Text a user is shown: unified diffs, and text from untrusted sources made safe for a
//! terminal.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use similar::TextDiff;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The unified diff of `old` → `new`, empty when they are equal.
pub fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(old_name, new_name)
        .missing_newline_hint(true)
        .to_string()
}

/// The unified diffs of every document that differs between two versions
/// (name → text; a missing document is empty), headed `a/<name>` and `b/<name>`.
pub fn documents_diff(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> String {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut out = String::new();
    for name in names {
        let a = before.get(name).map_or("", String::as_str);
        let b = after.get(name).map_or("", String::as_str);
        out.push_str(&unified_diff(
            a,
            b,
            &format!("a/{name}"),
            &format!("b/{name}"),
        ));
    }
    out
}

/// `text` with every character that could steer a terminal shown as an
/// escape instead: control characters (ESC, BEL, backspace, a carriage return
/// not ending a line, ...) as `\x1b`, C1 controls and the bidirectional
/// overrides as `\u{202e}`. Newlines and tabs stay. Everything this program
/// prints that an LLM, an agent, a store or a file wrote goes through here,
/// so a reply cannot erase or rewrite the lines a user is asked to approve.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.contains(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut chars = text.chars().peekable();
    let mut out = String::with_capacity(text.len().saturating_add(16));
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            out.push(c);
        } else if needs_escape(c) {
            let code = u32::from(c);
            if code < 0x80 {
                let _ = write!(out, "\\x{code:02x}");
            } else {
                let _ = write!(out, "\\u{{{code:x}}}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// True for the characters [`terminal_safe`] escapes.
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_of_equal_texts_is_empty_and_plain_without_terminal() {
        assert_eq!(unified_diff("a\n", "a\n", "x", "y"), "");
        let d = unified_diff("a\nb\n", "a\nc\n", "old", "new");
        assert!(d.contains("-b\n") && d.contains("+c\n"), "{d}");
    }

    #[test]
    fn documents_diff_heads_each_changed_document() {
        let before = BTreeMap::from([("a.md".to_owned(), "x\n".to_owned())]);
        let after = BTreeMap::from([
            ("a.md".to_owned(), "x\n".to_owned()),
            ("b.md".to_owned(), "y\n".to_owned()),
        ]);
        let d = documents_diff(&before, &after);
        assert!(d.starts_with("--- a/b.md\n+++ b/b.md\n"), "{d}");
        assert!(d.contains("+y\n") && !d.contains("a.md"), "{d}");
        assert_eq!(documents_diff(&before, &before), "");
    }

    #[test]
    fn terminal_safe_escapes_what_could_steer_a_terminal() {
        let check = |input: &str, expected: &str| assert_eq!(terminal_safe(input), expected);
        check("plain\ttext\nnext line\r\n", "plain\ttext\nnext line\r\n");
        check("\x1b[2K\x1b[1Agone", "\\x1b[2K\\x1b[1Agone");
        check(
            "bell\x07 back\x08 nul\0 del\x7f",
            "bell\\x07 back\\x08 nul\\x00 del\\x7f",
        );
        check("over\rwrite", "over\\x0dwrite");
        check("csi \u{9b}2J", "csi \\u{9b}2J");
        check("abc\u{202e}fed", "abc\\u{202e}fed");
        check("确认改 — fine", "确认改 — fine");
        assert!(matches!(terminal_safe("nothing to do"), Cow::Borrowed(_)));
    }
}
