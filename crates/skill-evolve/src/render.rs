//! What the terminal shows: unified diffs coloured on a terminal and tables of edits; the
//! diffs themselves and the escaping of untrusted text are the library's.

use console::{Style, measure_text_width};
pub(crate) use evolution_project::render::{terminal_safe, unified_diff};

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
    fn diff_is_plain_without_terminal() {
        let d = unified_diff("a\nb\n", "a\nc\n", "old", "new");
        // Tests run without a terminal on stdout: no escape codes.
        assert_eq!(colour_diff(&d), d);
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
