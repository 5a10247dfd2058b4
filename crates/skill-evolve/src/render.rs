//! What the user sees: unified diffs (coloured on a terminal), the table of
//! edits, and text from untrusted sources made safe for a terminal.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use console::{Style, measure_text_width};
use similar::TextDiff;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The unified diff of `old` → `new`, empty when they are equal.
pub(crate) fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
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
pub(crate) fn documents_diff(
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
pub(crate) fn terminal_safe(text: &str) -> Cow<'_, str> {
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

/// Colours a unified diff line by line (removals red, additions green, hunk
/// headers cyan); plain when stdout is not a terminal or `NO_COLOR` is set.
pub(crate) fn colour_diff(unified: &str) -> String {
    let red = Style::new().red().for_stdout();
    let green = Style::new().green().for_stdout();
    let cyan = Style::new().cyan().for_stdout();
    let bold = Style::new().bold().for_stdout();
    let mut out = String::with_capacity(unified.len());
    for line in unified.split_inclusive('\n') {
        // A CRLF line keeps its carriage return: before the newline it moves nothing.
        let ending = if line.ends_with("\r\n") {
            "\r\n"
        } else if line.ends_with('\n') {
            "\n"
        } else {
            ""
        };
        let body = terminal_safe(line.strip_suffix(ending).unwrap_or(line));
        let body = body.as_ref();
        let styled = if body.starts_with("+++") || body.starts_with("---") {
            bold.apply_to(body).to_string()
        } else if body.starts_with('+') {
            green.apply_to(body).to_string()
        } else if body.starts_with('-') {
            red.apply_to(body).to_string()
        } else if body.starts_with("@@") {
            cyan.apply_to(body).to_string()
        } else {
            body.to_owned()
        };
        out.push_str(&styled);
        out.push_str(ending);
    }
    out
}

/// A plain-text table with a header row; cells are cut to `max_width`
/// characters (with `…`) and newlines shown as `⏎`.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>], max_width: usize) -> String {
    let clean = |cell: &str| -> String {
        let flat: String = cell
            .trim()
            .chars()
            .map(|c| if c == '\n' { '⏎' } else { c })
            .filter(|c| *c != '\r')
            .collect();
        let flat = terminal_safe(&flat).into_owned();
        if flat.chars().count() > max_width {
            let mut cut: String = flat.chars().take(max_width.saturating_sub(1)).collect();
            cut.push('…');
            cut
        } else {
            flat
        }
    };
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| measure_text_width(h)).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(measure_text_width(cell));
            }
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let width = widths.get(i).copied().unwrap_or(0);
            let pad = width.saturating_sub(measure_text_width(cell));
            if i > 0 {
                s.push_str(" │ ");
            }
            s.push_str(cell);
            if i + 1 < cells.len() {
                s.push_str(&" ".repeat(pad));
            }
        }
        s.push('\n');
        s
    };
    let mut out = line(&header);
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    out.push_str(&line(&rule).replace(" │ ", "─┼─"));
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_of_equal_texts_is_empty_and_plain_without_terminal() {
        assert_eq!(unified_diff("a\n", "a\n", "x", "y"), "");
        let d = unified_diff("a\nb\n", "a\nc\n", "old", "new");
        assert!(d.contains("-b\n") && d.contains("+c\n"), "{d}");
        // Tests run without a terminal on stdout: no escape codes.
        assert_eq!(colour_diff(&d), d);
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

    #[test]
    fn diffs_and_tables_show_control_characters_escaped() {
        let d = unified_diff("a\n", "a\x1b[2K\n", "old", "new");
        assert!(colour_diff(&d).contains("+a\\x1b[2K\n"), "{d}");
        let t = table(&["why"], &[vec!["x\x1b[1Ay".into()]], 40);
        assert!(t.contains("x\\x1b[1Ay") && !t.contains('\x1b'), "{t}");
    }

    #[test]
    fn table_cuts_long_cells_on_characters() {
        let t = table(
            &["op", "why"],
            &[vec!["append".into(), "确认改确认改确认改".into()]],
            4,
        );
        assert!(t.contains("确认改…"), "{t}");
        assert_eq!(t.lines().count(), 3);
    }
}
