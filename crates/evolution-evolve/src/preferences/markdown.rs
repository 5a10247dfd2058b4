//! The little markdown the checks need: fenced code blocks, ATX headings and example
//! lines, found line by line (no full parser: the checks count, they do not render).

/// An open code fence: its character and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fence {
    ch: char,
    len: usize,
}

/// `line` without up to three leading spaces, `None` when it is indented further (an
/// indented line opens no fence and holds no heading).
fn unindented(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    (line.len() - rest.len() <= 3).then_some(rest)
}

/// The fence `line` opens, with its info string (trimmed), if it opens one: three or more
/// backticks or tildes (a backtick fence's info string holds no backtick).
pub(super) fn fence_open(line: &str) -> Option<(Fence, &str)> {
    let rest = unindented(line.trim_end_matches(['\r', '\n']))?;
    let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.len() - rest.trim_start_matches(ch).len();
    if len < 3 {
        return None;
    }
    let info = rest.get(len..).unwrap_or_default().trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((Fence { ch, len }, info))
}

/// Whether `line` closes `fence`: the same character, at least as many, nothing after.
pub(super) fn fence_close(line: &str, fence: Fence) -> bool {
    let Some(rest) = unindented(line.trim_end_matches(['\r', '\n'])) else {
        return false;
    };
    let len = rest.len() - rest.trim_start_matches(fence.ch).len();
    len >= fence.len && rest.get(len..).unwrap_or_default().trim().is_empty()
}

/// What the checks count in a document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// Fenced code blocks (an unclosed one counts).
    pub(super) code_blocks: usize,
    /// Lines outside code blocks that start with the word "Example".
    pub(super) examples: usize,
    /// ATX headings outside code blocks, normalized ([`normalize_heading`]).
    pub(super) headings: Vec<String>,
}

/// Counts the code blocks, example lines and headings of `text`.
pub(super) fn counts(text: &str) -> Counts {
    let mut counts = Counts::default();
    let mut open: Option<Fence> = None;
    for line in text.lines() {
        match open {
            Some(fence) => {
                if fence_close(line, fence) {
                    open = None;
                }
            }
            None => {
                if let Some((fence, _)) = fence_open(line) {
                    counts.code_blocks = counts.code_blocks.saturating_add(1);
                    open = Some(fence);
                } else if let Some(heading) = atx_heading(line) {
                    if is_example(heading) {
                        counts.examples = counts.examples.saturating_add(1);
                    }
                    counts.headings.push(normalize_heading(heading));
                } else if is_example(line) {
                    counts.examples = counts.examples.saturating_add(1);
                }
            }
        }
    }
    counts
}

/// The text of an ATX heading (`## Steps ##` → `Steps`), if `line` is one.
fn atx_heading(line: &str) -> Option<&str> {
    let rest = unindented(line)?;
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let after = rest.get(hashes..).unwrap_or_default();
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    Some(after.trim().trim_end_matches('#').trim_end())
}

/// A heading as the checks compare it: without its `#` marks, trimmed, lowercase, inner
/// whitespace collapsed to one space.
pub(super) fn normalize_heading(text: &str) -> String {
    let text = text.trim();
    let bare = atx_heading(text).unwrap_or(text);
    bare.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether `line` starts with the word "Example" or "Examples" (any case), after list,
/// quote, heading and emphasis marks: `Example:`, `- **Example 2**`, `> Examples`.
fn is_example(line: &str) -> bool {
    let mut rest = line.trim_start();
    loop {
        let before = rest.len();
        rest = rest
            .trim_start_matches(['#', '>', '-', '+', '*', '_'])
            .trim_start();
        // An ordered list marker: digits, then `.` or `)`.
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0
            && let Some(after) = rest.get(digits..).and_then(|r| r.strip_prefix(['.', ')']))
        {
            rest = after.trim_start();
        }
        if rest.len() == before {
            break;
        }
    }
    let Some(head) = rest.get(..7) else {
        return false;
    };
    if !head.eq_ignore_ascii_case("example") {
        return false;
    }
    let mut tail = rest.get(7..).unwrap_or_default().chars();
    match tail.next() {
        None => true,
        Some('s' | 'S') => !tail.next().is_some_and(char::is_alphanumeric),
        Some(c) => !c.is_alphanumeric(),
    }
}

/// How often `phrase` (lowercase, non-empty) occurs in `text`, in any case, as a whole word
/// or phrase: where the phrase starts (ends) with a letter or digit, the text's character
/// before (after) it must not be one.
pub(super) fn occurrences(text: &str, phrase: &str) -> usize {
    let hay = text.to_lowercase();
    let starts_word = phrase.chars().next().is_some_and(char::is_alphanumeric);
    let ends_word = phrase
        .chars()
        .next_back()
        .is_some_and(char::is_alphanumeric);
    hay.match_indices(phrase)
        .filter(|(at, found)| {
            let before = hay.get(..*at).and_then(|h| h.chars().next_back());
            let after = hay
                .get(at.saturating_add(found.len())..)
                .and_then(|h| h.chars().next());
            let glued_before = starts_word && before.is_some_and(char::is_alphanumeric);
            let glued_after = ends_word && after.is_some_and(char::is_alphanumeric);
            !glued_before && !glued_after
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_open_and_close_like_commonmark() {
        assert!(fence_open("```checks").is_some_and(|(_, info)| info == "checks"));
        assert!(fence_open("   ~~~~ toml ").is_some_and(|(_, info)| info == "toml"));
        assert!(
            fence_open("    ```").is_none(),
            "indented four: code, not a fence"
        );
        assert!(fence_open("``").is_none());
        assert!(fence_open("``` a`b").is_none());
        let (fence, _) = fence_open("````").unwrap();
        assert!(!fence_close("```", fence), "shorter than the opening");
        assert!(fence_close("`````  ", fence));
        assert!(!fence_close("```` x", fence));
    }

    #[test]
    fn counts_skip_code_blocks() {
        let doc = "# Title\n\nExample: one\n```text\n# not a heading\nExample: not counted\n```\n\
                   - **Example 2**\n## Steps ##\nExamples follow\nExemplary work\nexample\n~~~\nopen";
        let c = counts(doc);
        assert_eq!(c.code_blocks, 2);
        assert_eq!(c.examples, 4);
        assert_eq!(c.headings, ["title", "steps"]);
    }

    #[test]
    fn example_lines_are_told_apart() {
        for yes in [
            "Example:",
            "1. Example",
            "> Examples",
            "### Example 3",
            "_Example_",
        ] {
            assert!(is_example(yes), "{yes}");
        }
        for no in ["Examplesque", "An example", "Exampled", "Ex"] {
            assert!(!is_example(no), "{no}");
        }
    }

    #[test]
    fn headings_normalize() {
        assert_eq!(normalize_heading("##  Output   Format "), "output format");
        assert_eq!(normalize_heading("Steps"), "steps");
        assert_eq!(atx_heading("#hashtag"), None);
        assert_eq!(atx_heading("####### seven"), None);
    }

    #[test]
    fn phrases_match_whole_words_in_any_case() {
        assert_eq!(occurrences("Always do it. ALWAYS. always-on", "always"), 3);
        assert_eq!(occurrences("alwaysx and xalways", "always"), 0);
        assert_eq!(occurrences("You MUST NEVER do that", "must never"), 1);
        assert_eq!(occurrences("a -> b->c", "->"), 2);
    }
}
