//! What the user sees: unified diffs (coloured on a terminal), the table of
//! edits, and the one way this program replaces a file (atomically).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;

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

/// Colours a unified diff line by line (removals red, additions green, hunk
/// headers cyan); plain when stdout is not a terminal or `NO_COLOR` is set.
pub(crate) fn colour_diff(unified: &str) -> String {
    let red = Style::new().red().for_stdout();
    let green = Style::new().green().for_stdout();
    let cyan = Style::new().cyan().for_stdout();
    let bold = Style::new().bold().for_stdout();
    let mut out = String::with_capacity(unified.len());
    for line in unified.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
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
        if line.ends_with('\n') {
            out.push('\n');
        }
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

/// Replaces `path` with `text` through a temporary file in the same
/// directory, synced and renamed: a crash leaves the old file or the new one.
pub(crate) fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot replace {}: {}", path.display(), e.error))?;
    Ok(())
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
