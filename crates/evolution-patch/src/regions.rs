//! Reading and writing the two protected regions: the execution-notes
//! appendix and the slow-update (long-term guidance) region.

use std::collections::HashSet;
use std::ops::Range;

use crate::markers::{
    APPENDIX_END, APPENDIX_HEADING, APPENDIX_MAX_CHARS, APPENDIX_START, RegionError,
    SLOW_UPDATE_END, SLOW_UPDATE_HEADING, SLOW_UPDATE_MAX_CHARS, SLOW_UPDATE_START,
    appendix_region_bounds, both_regions, first_marker_in, slow_update_region_bounds,
};
use crate::text::{blank_line_separator, newline_of};

/// Why a region could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The document's markers are malformed.
    #[error(transparent)]
    Region(#[from] RegionError),
    /// The text to write contains a marker literal (injection guard).
    #[error("{what} contains the marker `{marker}` on its line {line}")]
    MarkerInText {
        /// What was being written (`"guidance"` or `"appendix note"`).
        what: &'static str,
        /// The marker found.
        marker: &'static str,
        /// 1-based line of the marker inside that text.
        line: usize,
    },
    /// The text to write is over its character limit.
    #[error("{what} has {chars} characters, over the limit of {max}")]
    TooLong {
        /// What was being written.
        what: &'static str,
        /// Its length in characters.
        chars: usize,
        /// The limit.
        max: usize,
    },
}

/// The guidance inside the slow-update region, trimmed, without the
/// [`SLOW_UPDATE_HEADING`] line; `Ok(None)` when the document has no region.
pub fn slow_update_inner(text: &str) -> Result<Option<&str>, RegionError> {
    let Some(range) = slow_update_region_bounds(text)? else {
        return Ok(None);
    };
    let inner = inner_of(text, range, SLOW_UPDATE_START, SLOW_UPDATE_END).trim();
    let body = match inner.split_once('\n') {
        Some((first, rest)) if first.trim() == SLOW_UPDATE_HEADING => rest.trim(),
        None if inner == SLOW_UPDATE_HEADING => "",
        _ => inner,
    };
    Ok(Some(body))
}

/// Writes `guidance` (trimmed) into the slow-update region, creating the region
/// at the end of the document when it is absent.
///
/// Empty guidance clears the old guidance and keeps the heading line. A
/// marker literal inside the guidance, guidance over [`SLOW_UPDATE_MAX_CHARS`]
/// characters and malformed markers in `content` are errors.
pub fn replace_slow_update(content: &str, guidance: &str) -> Result<String, PatchError> {
    let guidance = guidance.trim();
    reject_markers("guidance", guidance)?;
    let chars = guidance.chars().count();
    if chars > SLOW_UPDATE_MAX_CHARS {
        return Err(PatchError::TooLong {
            what: "guidance",
            chars,
            max: SLOW_UPDATE_MAX_CHARS,
        });
    }
    let (_, slow_update) = both_regions(content)?;
    let newline = newline_of(content);
    let mut lines = vec![SLOW_UPDATE_START, SLOW_UPDATE_HEADING];
    let converted = crate::text::with_newline(guidance, newline);
    if !guidance.is_empty() {
        lines.push(&converted);
    }
    lines.push(SLOW_UPDATE_END);
    Ok(put_block(
        content,
        slow_update,
        &lines.join(newline),
        newline,
    ))
}

/// The notes of the appendix region, in order; empty when there is none.
///
/// Reads SkillOpt's layout: blank lines and the [`APPENDIX_HEADING`] line are
/// skipped, a leading `- ` (or `-`, `*`) bullet is removed, any other
/// non-blank line is a note as it stands.
pub fn extract_appendix_notes(text: &str) -> Result<Vec<String>, RegionError> {
    let appendix = appendix_region_bounds(text)?;
    Ok(appendix.map_or_else(Vec::new, |range| notes_in(text, range)))
}

/// Merges `notes` into the appendix region, creating it at the end of the
/// document when it is absent.
///
/// Notes are written one `- ` bullet per note; whitespace runs inside a note
/// become single spaces, blank notes are dropped and near-duplicates (same
/// text up to case, spacing and trailing punctuation) are kept once, first
/// seen first, as SkillOpt does. With nothing new to add the document is
/// returned unchanged. A marker literal inside a note, rendered notes over
/// [`APPENDIX_MAX_CHARS`] characters and malformed markers are errors.
pub fn append_to_appendix<S: AsRef<str>>(content: &str, notes: &[S]) -> Result<String, PatchError> {
    for note in notes {
        reject_markers("appendix note", note.as_ref())?;
    }
    let (appendix, _) = both_regions(content)?;
    let existing = appendix
        .clone()
        .map_or_else(Vec::new, |range| notes_in(content, range));
    let existing_count = dedupe(existing.iter().map(String::as_str)).len();
    let merged = dedupe(
        existing
            .iter()
            .map(String::as_str)
            .chain(notes.iter().map(AsRef::as_ref)),
    );
    if merged.len() == existing_count {
        return Ok(content.to_owned());
    }
    write_appendix(content, appendix, &merged)
}

/// Replaces the appendix notes with `notes` (normalised as in
/// [`append_to_appendix`]); an empty list removes the appendix region.
pub fn replace_appendix_notes<S: AsRef<str>>(
    content: &str,
    notes: &[S],
) -> Result<String, PatchError> {
    for note in notes {
        reject_markers("appendix note", note.as_ref())?;
    }
    let (appendix, _) = both_regions(content)?;
    let notes = dedupe(notes.iter().map(AsRef::as_ref));
    if !notes.is_empty() {
        return write_appendix(content, appendix, &notes);
    }
    let Some(range) = appendix else {
        return Ok(content.to_owned());
    };
    // Remove the region together with the line break that ends its line.
    let rest = content.get(range.end..).unwrap_or("");
    let skip = if rest.starts_with("\r\n") {
        2
    } else {
        usize::from(rest.starts_with('\n'))
    };
    let mut out = String::with_capacity(content.len());
    out.push_str(content.get(..range.start).unwrap_or(""));
    out.push_str(rest.get(skip..).unwrap_or(""));
    Ok(out)
}

fn write_appendix(
    content: &str,
    appendix: Option<Range<usize>>,
    notes: &[String],
) -> Result<String, PatchError> {
    let newline = newline_of(content);
    let bullets: Vec<String> = notes.iter().map(|note| format!("- {note}")).collect();
    let chars = bullets
        .iter()
        .map(|b| b.chars().count())
        .sum::<usize>()
        .saturating_add(bullets.len().saturating_sub(1));
    if chars > APPENDIX_MAX_CHARS {
        return Err(PatchError::TooLong {
            what: "appendix notes",
            chars,
            max: APPENDIX_MAX_CHARS,
        });
    }
    let mut lines = vec![APPENDIX_START, APPENDIX_HEADING];
    lines.extend(bullets.iter().map(String::as_str));
    lines.push(APPENDIX_END);
    Ok(put_block(content, appendix, &lines.join(newline), newline))
}

/// Puts `block` in place of `existing`, or at the end of the document after
/// a blank line when there is no region yet.
fn put_block(content: &str, existing: Option<Range<usize>>, block: &str, newline: &str) -> String {
    let mut out =
        String::with_capacity(content.len().saturating_add(block.len()).saturating_add(4));
    match existing {
        Some(range) => {
            out.push_str(content.get(..range.start).unwrap_or(""));
            out.push_str(block);
            out.push_str(content.get(range.end..).unwrap_or(""));
        }
        None => {
            out.push_str(content);
            out.push_str(blank_line_separator(content, newline));
            out.push_str(block);
            out.push_str(newline);
        }
    }
    out
}

fn inner_of<'a>(text: &'a str, range: Range<usize>, start: &str, end: &str) -> &'a str {
    let from = range.start.saturating_add(start.len());
    let to = range.end.saturating_sub(end.len());
    text.get(from..to).unwrap_or("")
}

fn notes_in(text: &str, range: Range<usize>) -> Vec<String> {
    let heading = APPENDIX_HEADING.trim_start_matches('#').trim();
    inner_of(text, range, APPENDIX_START, APPENDIX_END)
        .lines()
        .filter_map(|raw| {
            let line = raw.trim();
            if line.is_empty() || line.trim_start_matches('#').trim() == heading {
                return None;
            }
            let note = if let Some(rest) = line.strip_prefix("- ") {
                rest.trim()
            } else if let Some(rest) = line.strip_prefix(['-', '*']) {
                rest.trim()
            } else {
                line
            };
            (!note.is_empty()).then(|| note.to_owned())
        })
        .collect()
}

/// Collapses whitespace, drops blanks and near-duplicates, first seen first.
fn dedupe<'a>(notes: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for note in notes {
        let text = note.split_whitespace().collect::<Vec<_>>().join(" ");
        let key = text
            .trim_end_matches([' ', '.', ';', ':', ',', '_', '-'])
            .to_lowercase();
        if key.is_empty() || !seen.insert(key) {
            continue;
        }
        out.push(text);
    }
    out
}

fn reject_markers(what: &'static str, text: &str) -> Result<(), PatchError> {
    match first_marker_in(text) {
        Some((marker, line)) => Err(PatchError::MarkerInText { what, marker, line }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedupe_ignores_case_spacing_and_trailing_punctuation() {
        let notes = dedupe(["Check  the\nunits.", "check the units", "", "  ", "Other;"]);
        assert_eq!(notes, vec!["Check the units.", "Other;"]);
    }

    #[test]
    fn notes_skip_heading_and_strip_bullets() {
        let text = format!(
            "{APPENDIX_START}\n{APPENDIX_HEADING}\n- a\n-b\n* c\nplain\n\n# Execution Notes Appendix\n{APPENDIX_END}"
        );
        let range = 0..text.len();
        assert_eq!(notes_in(&text, range), vec!["a", "b", "c", "plain"]);
    }
}
