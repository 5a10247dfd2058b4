//! `apply_patch_with_report`: the four edit operations over a document with
//! protected ranges.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, MatchKind};
use evolution_types::{Edit, EditOp, EditReport, EditStatus};
use memchr::memmem;

use crate::markers::{MARKERS, MAX_MARKER_LEN, first_marker_in};
use crate::text::{blank_line_separator, newline_of, preview, with_newline};

/// Most characters kept in a report's `target` and `content_preview`.
const PREVIEW_CHARS: usize = 200;

/// Applies `edits` in order and reports what happened to each, one entry per
/// edit.
///
/// Before every edit the protected ranges are recomputed in one pass over
/// the current document: every occurrence of every non-empty
/// `protected_spans` entry, every marker literal, and for each marker pair
/// the stretch from its first to its last marker (a well-formed appendix or
/// momentum region is therefore protected even when the caller does not
/// list it). Ranges are half-open.
///
/// - `append` puts the trimmed payload, after a blank line, just before the
///   earliest protected range that does not start at offset 0 (a
///   frontmatter span stays first), or at the end of the document.
/// - `insert_after` puts the payload on its own line after the line holding
///   the end of the first occurrence of the target; an absent target falls
///   back to `append`, a target or insertion point inside a protected range
///   is skipped.
/// - `replace` and `delete` act on the first occurrence of the target only.
///
/// Targets are matched verbatim (in a CRLF document a target's lone line
/// feeds also match as CRLF); payloads are trimmed and take the document's
/// line breaks. An edit whose first target occurrence touches a protected
/// range, whose payload holds a marker literal, or whose result would create
/// or destroy a marker leaves the document unchanged with a `skipped_*`
/// status. This function never fails: bad edits are reported, not raised.
pub fn apply_patch_with_report(
    content: &str,
    edits: &[Edit],
    protected_spans: &[&str],
) -> (String, Vec<EditReport>) {
    let scanner = Scanner::new(protected_spans);
    let mut doc = content.to_owned();
    let mut ranges = Vec::new();
    let reports = edits
        .iter()
        .enumerate()
        .map(|(i, edit)| {
            // The line-break style is read before every edit, like the
            // protected ranges, so a patch equals its edits applied one by one.
            let newline = newline_of(&doc);
            let status = apply_one(&mut doc, edit, &scanner, &mut ranges, newline);
            EditReport {
                index: i.saturating_add(1),
                op: edit.op.clone(),
                status,
                target: preview(&edit.target, PREVIEW_CHARS),
                content_preview: preview(edit.content.trim(), PREVIEW_CHARS),
            }
        })
        .collect();
    (doc, reports)
}

fn apply_one(
    doc: &mut String,
    edit: &Edit,
    scanner: &Scanner,
    ranges: &mut Vec<Range<usize>>,
    newline: &str,
) -> EditStatus {
    let payload = edit.content.trim();
    let target = edit.target.as_str();
    match &edit.op {
        EditOp::Append => {
            if payload.is_empty() {
                return EditStatus::SkippedEmptyContent;
            }
            if first_marker_in(payload).is_some() {
                return EditStatus::SkippedMarkerInPayload;
            }
            scanner.ranges(doc, ranges);
            let payload = with_newline(payload, newline);
            append(doc, &payload, ranges, newline, false)
        }
        EditOp::InsertAfter => {
            if payload.is_empty() {
                return EditStatus::SkippedEmptyContent;
            }
            if target.is_empty() {
                return EditStatus::SkippedInsertAfterMissingTarget;
            }
            if first_marker_in(payload).is_some() {
                return EditStatus::SkippedMarkerInPayload;
            }
            let payload = with_newline(payload, newline);
            scanner.ranges(doc, ranges);
            let Some(found) = find_target(doc, target, newline) else {
                return append(doc, &payload, ranges, newline, true);
            };
            if touches(ranges, &found) {
                return EditStatus::SkippedProtected;
            }
            let insert_at = line_end_after(doc, found.end);
            if strictly_inside(ranges, insert_at) {
                return EditStatus::SkippedProtected;
            }
            let insertion = format!("{newline}{payload}{newline}");
            splice(
                doc,
                insert_at..insert_at,
                &insertion,
                EditStatus::AppliedInsertAfter,
            )
        }
        EditOp::Replace | EditOp::Delete => {
            let replace = edit.op == EditOp::Replace;
            if target.is_empty() {
                return if replace {
                    EditStatus::SkippedReplaceMissingTarget
                } else {
                    EditStatus::SkippedDeleteMissingTarget
                };
            }
            if replace && first_marker_in(payload).is_some() {
                return EditStatus::SkippedMarkerInPayload;
            }
            let Some(found) = find_target(doc, target, newline) else {
                return if replace {
                    EditStatus::SkippedReplaceTargetNotFound
                } else {
                    EditStatus::SkippedDeleteTargetNotFound
                };
            };
            scanner.ranges(doc, ranges);
            if touches(ranges, &found) {
                return EditStatus::SkippedProtected;
            }
            if replace {
                let payload = with_newline(payload, newline);
                splice(doc, found, &payload, EditStatus::AppliedReplace)
            } else {
                splice(doc, found, "", EditStatus::AppliedDelete)
            }
        }
        EditOp::Other(_) => EditStatus::SkippedUnknownOp,
    }
}

/// Appends `payload` before the earliest non-frontmatter protected range, or
/// at the end of the document.
fn append(
    doc: &mut String,
    payload: &str,
    ranges: &[Range<usize>],
    newline: &str,
    fallback: bool,
) -> EditStatus {
    let at = append_point(ranges, doc.len());
    let before = doc.get(..at).unwrap_or("");
    let separator = blank_line_separator(before, newline);
    if at == doc.len() {
        let insertion = format!("{separator}{payload}{newline}");
        let status = if fallback {
            EditStatus::AppliedInsertAfterFallbackAppend
        } else {
            EditStatus::AppliedAppend
        };
        splice(doc, at..at, &insertion, status)
    } else {
        let insertion = format!("{separator}{payload}{newline}{newline}");
        let status = if fallback {
            EditStatus::AppliedInsertAfterFallbackBeforeProtectedRegion
        } else {
            EditStatus::AppliedAppendBeforeProtectedRegion
        };
        splice(doc, at..at, &insertion, status)
    }
}

/// The first occurrence of `target`; in a CRLF document a target written
/// with lone line feeds is also tried with CRLF.
fn find_target(doc: &str, target: &str, newline: &str) -> Option<Range<usize>> {
    let hay = doc.as_bytes();
    if let Some(pos) = memmem::find(hay, target.as_bytes()) {
        return Some(pos..pos.saturating_add(target.len()));
    }
    match with_newline(target, newline) {
        Cow::Owned(converted) => memmem::find(hay, converted.as_bytes())
            .map(|pos| pos..pos.saturating_add(converted.len())),
        Cow::Borrowed(_) => None,
    }
}

/// Offset just after the line that holds byte `end - 1`: `end` itself when
/// the target ended with a line feed, else after the next line feed, else
/// the end of the document.
fn line_end_after(doc: &str, end: usize) -> usize {
    let bytes = doc.as_bytes();
    if end > 0 && bytes.get(end - 1) == Some(&b'\n') {
        return end;
    }
    match bytes.get(end..).and_then(|rest| memchr::memchr(b'\n', rest)) {
        Some(offset) => end.saturating_add(offset).saturating_add(1),
        None => doc.len(),
    }
}

/// Replaces `range` by `insertion` unless that would create or destroy a
/// marker literal; returns `applied` or why the document was left alone.
fn splice(doc: &mut String, range: Range<usize>, insertion: &str, applied: EditStatus) -> EditStatus {
    let Some(removed) = doc.get(range.clone()).map(str::to_owned) else {
        // Every offset comes from a match of valid UTF-8 or a line feed, so
        // this cannot happen; leave the document untouched if it ever does.
        return EditStatus::Other("skipped_invalid_position".to_owned());
    };
    let reach = MAX_MARKER_LEN - 1;
    let low = range.start.saturating_sub(reach);
    let old_high = range.end.saturating_add(reach).min(doc.len());
    let old_counts = marker_counts(doc.as_bytes().get(low..old_high).unwrap_or_default());
    doc.replace_range(range.clone(), insertion);
    let new_end = range.start.saturating_add(insertion.len());
    let new_high = new_end.saturating_add(reach).min(doc.len());
    let new_counts = marker_counts(doc.as_bytes().get(low..new_high).unwrap_or_default());
    if old_counts == new_counts {
        applied
    } else {
        doc.replace_range(range.start..new_end, &removed);
        EditStatus::SkippedMarkerInPayload
    }
}

fn marker_counts(window: &[u8]) -> [usize; 4] {
    MARKERS.map(|marker| memmem::find_iter(window, marker.as_bytes()).count())
}

/// Whether the non-empty `range` overlaps a protected range.
fn touches(ranges: &[Range<usize>], range: &Range<usize>) -> bool {
    ranges
        .iter()
        .any(|r| r.start < range.end && range.start < r.end)
}

/// Whether inserting at `pos` would split a protected range.
fn strictly_inside(ranges: &[Range<usize>], pos: usize) -> bool {
    ranges.iter().any(|r| r.start < pos && pos < r.end)
}

/// Start of the first cluster of overlapping protected ranges that does not
/// begin at offset 0, or `len` when there is none. `ranges` is sorted by start.
fn append_point(ranges: &[Range<usize>], len: usize) -> usize {
    let mut cluster_end: Option<usize> = None;
    for range in ranges {
        match cluster_end {
            Some(end) if range.start < end => cluster_end = Some(end.max(range.end)),
            _ if range.start > 0 => return range.start,
            _ => cluster_end = Some(range.end),
        }
    }
    len
}

/// Finds every protected range of a document in one pass.
struct Scanner {
    /// Marker literals first (ids 0..4), then the non-empty protected spans.
    patterns: Vec<Vec<u8>>,
    automaton: Option<AhoCorasick>,
}

impl Scanner {
    fn new(protected_spans: &[&str]) -> Self {
        let patterns: Vec<Vec<u8>> = MARKERS
            .iter()
            .copied()
            .chain(protected_spans.iter().copied().filter(|s| !s.is_empty()))
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .ok();
        Scanner {
            patterns,
            automaton,
        }
    }

    /// Fills `out` with the protected ranges of `doc`, sorted by start.
    fn ranges(&self, doc: &str, out: &mut Vec<Range<usize>>) {
        out.clear();
        let hay = doc.as_bytes();
        // For each marker pair: the first start and last end of its markers.
        let mut pairs: [Option<Range<usize>>; 2] = [None, None];
        let mut record = |id: usize, range: Range<usize>, out: &mut Vec<Range<usize>>| {
            if let Some(slot) = pairs.get_mut(id / 2).filter(|_| id < MARKERS.len()) {
                *slot = Some(match slot.take() {
                    Some(span) => span.start.min(range.start)..span.end.max(range.end),
                    None => range.clone(),
                });
            }
            out.push(range);
        };
        match &self.automaton {
            Some(automaton) => {
                for found in automaton.find_overlapping_iter(hay) {
                    record(found.pattern().as_usize(), found.range(), out);
                }
            }
            None => {
                for (id, pattern) in self.patterns.iter().enumerate() {
                    let finder = memmem::Finder::new(pattern);
                    let mut from = 0;
                    while let Some(pos) = hay.get(from..).and_then(|rest| finder.find(rest)) {
                        let start = from.saturating_add(pos);
                        record(id, start..start.saturating_add(pattern.len()), out);
                        from = start.saturating_add(1);
                    }
                }
            }
        }
        out.extend(pairs.into_iter().flatten());
        out.sort_unstable_by_key(|r| (r.start, r.end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_point_skips_a_cluster_at_zero() {
        assert_eq!(append_point(&[], 10), 10);
        assert_eq!(append_point(&[(0..4)], 10), 10);
        assert_eq!(append_point(&[(0..4), (2..6), (6..8)], 10), 6);
        assert_eq!(append_point(&[(3..4), (5..6)], 10), 3);
    }

    #[test]
    fn line_end_after_target() {
        assert_eq!(line_end_after("ab\ncd", 1), 3);
        assert_eq!(line_end_after("ab\ncd", 3), 3);
        assert_eq!(line_end_after("ab\ncd", 4), 5);
    }

    #[test]
    fn scanner_finds_overlapping_spans_and_marker_pairs() {
        let doc = format!("aaa x {} y {} z", MARKERS[0], MARKERS[1]);
        let scanner = Scanner::new(&["aa", ""]);
        let mut ranges = Vec::new();
        scanner.ranges(&doc, &mut ranges);
        let start = doc.find(MARKERS[0]).unwrap_or_default();
        let end = doc.find(MARKERS[1]).unwrap_or_default() + MARKERS[1].len();
        assert!(ranges.contains(&(0..2)));
        assert!(ranges.contains(&(1..3)));
        assert!(ranges.contains(&(start..end)));
    }

    #[test]
    fn splice_refuses_to_join_a_marker() {
        let mut doc = String::from("<!-- APPENDIX_X -->");
        let status = splice(&mut doc, 14..15, "START", EditStatus::AppliedReplace);
        assert_eq!(status, EditStatus::SkippedMarkerInPayload);
        assert_eq!(doc, "<!-- APPENDIX_X -->");
    }
}
