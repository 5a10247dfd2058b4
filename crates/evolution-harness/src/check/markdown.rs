//! The Markdown sections of an answer, as the `section_present` and `section_contains` checks
//! read them: ATX headings (`#` to `######` then a space) outside fenced code blocks, each
//! section running to the next heading of the same or a higher level.

/// A heading title as checks compare it: trimmed, without surrounding emphasis marks (`*`,
/// `_`) or a trailing colon, its runs of whitespace made one space, in lower case.
pub(super) fn normalize_title(title: &str) -> String {
    let title = title.trim().trim_matches(['*', '_']).trim();
    let title = title.strip_suffix(':').unwrap_or(title).trim_end();
    let title = title.trim_matches(['*', '_']).trim();
    title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The level (1 to 6) and title of an ATX heading line, `None` for any other line.
fn heading(line: &str) -> Option<(usize, &str)> {
    let rest = line.trim_start_matches(' ');
    // Four spaces of indentation make a code block, not a heading.
    if line.len().saturating_sub(rest.len()) > 3 {
        return None;
    }
    let after = rest.trim_start_matches('#');
    let level = rest.len().saturating_sub(after.len());
    if !(1..=6).contains(&level) || !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let title = after.trim();
    // An optional closing sequence of `#`s, after a space.
    let unclosed = title.trim_end_matches('#');
    let title = if unclosed.is_empty() {
        ""
    } else if unclosed.ends_with([' ', '\t']) {
        unclosed.trim_end()
    } else {
        title
    };
    Some((level, title))
}

/// The fence a line opens or closes (three or more backticks or tildes), if any.
fn fence(line: &str) -> Option<char> {
    let rest = line.trim_start();
    ['`', '~']
        .into_iter()
        .find(|&mark| rest.chars().take_while(|&c| c == mark).count() >= 3)
}

/// The headings of `text` outside fenced code: the line index, level and title of each.
fn headings(lines: &[&str]) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut open: Option<char> = None;
    for (index, line) in lines.iter().enumerate() {
        if let Some(mark) = fence(line) {
            open = match open {
                None => Some(mark),
                Some(current) if current == mark => None,
                other => other,
            };
            continue;
        }
        if open.is_none()
            && let Some((level, title)) = heading(line)
        {
            found.push((index, level, normalize_title(title)));
        }
    }
    found
}

/// The text of every section of `text` whose heading is `title` (already normalized): the
/// lines under the heading, up to the next heading of the same or a higher level.
pub(super) fn sections(text: &str, title: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let headings = headings(&lines);
    let mut bodies = Vec::new();
    for (position, (index, level, found)) in headings.iter().enumerate() {
        if found != title {
            continue;
        }
        let end = headings
            .iter()
            .skip(position.saturating_add(1))
            .find(|(_, next_level, _)| next_level <= level)
            .map_or(lines.len(), |(next, _, _)| *next);
        let body = lines
            .get(index.saturating_add(1)..end)
            .unwrap_or_default()
            .join("\n");
        bodies.push(body);
    }
    bodies
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_are_atx_lines_outside_code() {
        assert_eq!(heading("## Summary"), Some((2, "Summary")));
        assert_eq!(heading("   # Title #"), Some((1, "Title")));
        assert_eq!(heading("# C#"), Some((1, "C#")));
        assert_eq!(heading("#"), Some((1, "")));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("    # indented code"), None);
        assert_eq!(heading("####### seven"), None);
        assert_eq!(heading("Summary"), None);
    }

    #[test]
    fn titles_ignore_case_emphasis_and_a_colon() {
        assert_eq!(normalize_title("  **Next   Steps:** "), "next steps");
        assert_eq!(normalize_title("Summary:"), "summary");
        assert_eq!(normalize_title("_Risks_"), "risks");
    }

    #[test]
    fn a_section_runs_to_the_next_heading_of_its_level() {
        let text = "# Report\nintro\n## Summary\nshort\n### Detail\ndeep\n## Risks\nnone\n\
                    ```\n## Summary\nin code\n```\n";
        assert_eq!(
            sections(text, "summary"),
            ["short\n### Detail\ndeep".to_owned()]
        );
        assert_eq!(
            sections(text, "risks"),
            ["none\n```\n## Summary\nin code\n```"]
        );
        assert_eq!(sections(text, "report").len(), 1);
        assert!(sections(text, "detail")[0].contains("deep"));
        assert!(sections(text, "missing").is_empty());
        assert!(sections("", "summary").is_empty());
    }
}
