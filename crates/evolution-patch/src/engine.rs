//! `apply_patch_with_report`: the four edit operations over a document with
//! protected ranges.

use std::borrow::Cow;
use std::ops::Range;

use evolution_types::{Edit, EditOp, EditReport, EditStatus};
use memchr::memmem;

use crate::markers::{MARKERS, MAX_MARKER_LEN, first_marker_in};
use crate::text::{blank_line_separator, newline_of, preview, with_newline};

/// Most characters kept in a report's `target` and `content_preview`.
const PREVIEW_CHARS: usize = 200;

/// Applies `edits` in order and reports what happened to each, one entry per
/// edit.
///
/// Before every edit the protected ranges are those of the current
/// document: every occurrence of every non-empty `protected_spans` entry,
/// every marker literal, and for each marker pair the stretch from its first
/// to its last marker (a well-formed appendix or slow-update region is
/// therefore protected even when the caller does not list it). Ranges are
/// half-open. They are found in one pass over the document and then kept
/// exact across edits by rescanning only the window each edit can affect,
/// which gives the same ranges as a full rescan per edit.
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
    let mut protection = Protection::new(&scanner, &doc);
    let reports = edits
        .iter()
        .enumerate()
        .map(|(i, edit)| {
            // The line-break style is read before every edit, like the
            // protected ranges, so a patch equals its edits applied one by one.
            let newline = newline_of(&doc);
            let status = apply_one(&mut doc, edit, &mut protection, newline);
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
    protection: &mut Protection<'_>,
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
            let payload = with_newline(payload, newline);
            append(doc, &payload, protection, newline, false)
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
            let Some(found) = find_target(doc, target, newline) else {
                return append(doc, &payload, protection, newline, true);
            };
            if touches(&protection.ranges, &found) {
                return EditStatus::SkippedProtected;
            }
            let insert_at = line_end_after(doc, found.end);
            if strictly_inside(&protection.ranges, insert_at) {
                return EditStatus::SkippedProtected;
            }
            let insertion = format!("{newline}{payload}{newline}");
            splice(
                doc,
                protection,
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
            if touches(&protection.ranges, &found) {
                return EditStatus::SkippedProtected;
            }
            if replace {
                let payload = with_newline(payload, newline);
                splice(doc, protection, found, &payload, EditStatus::AppliedReplace)
            } else {
                splice(doc, protection, found, "", EditStatus::AppliedDelete)
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
    protection: &mut Protection<'_>,
    newline: &str,
    fallback: bool,
) -> EditStatus {
    let at = append_point(&protection.ranges, doc.len());
    let before = doc.get(..at).unwrap_or("");
    let separator = blank_line_separator(before, newline);
    if at == doc.len() {
        let insertion = format!("{separator}{payload}{newline}");
        let status = if fallback {
            EditStatus::AppliedInsertAfterFallbackAppend
        } else {
            EditStatus::AppliedAppend
        };
        splice(doc, protection, at..at, &insertion, status)
    } else {
        let insertion = format!("{separator}{payload}{newline}{newline}");
        let status = if fallback {
            EditStatus::AppliedInsertAfterFallbackBeforeProtectedRegion
        } else {
            EditStatus::AppliedAppendBeforeProtectedRegion
        };
        splice(doc, protection, at..at, &insertion, status)
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
    match bytes
        .get(end..)
        .and_then(|rest| memchr::memchr(b'\n', rest))
    {
        Some(offset) => end.saturating_add(offset).saturating_add(1),
        None => doc.len(),
    }
}

/// Replaces `range` by `insertion` unless that would create or destroy a
/// marker literal; returns `applied` or why the document was left alone, and
/// brings the protected ranges up to date.
fn splice(
    doc: &mut String,
    protection: &mut Protection<'_>,
    range: Range<usize>,
    insertion: &str,
    applied: EditStatus,
) -> EditStatus {
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
        protection.after_splice(doc, range, insertion.len());
        applied
    } else {
        doc.replace_range(range.start..new_end, &removed);
        EditStatus::SkippedMarkerInPayload
    }
}

fn marker_counts(window: &[u8]) -> [usize; 4] {
    // Every marker starts with `<`: most windows need no marker search.
    if memchr::memchr(b'<', window).is_none() {
        return [0; 4];
    }
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

/// One occurrence of a pattern: its byte range and pattern id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Occurrence {
    start: usize,
    end: usize,
    pattern: usize,
}

/// Bytes of the key each pattern is indexed by: its first `KEY_BYTES` bytes
/// (or all of a shorter pattern). Sixteen bytes tell apart spans that share
/// a short prefix, such as numbered list items.
const KEY_BYTES: usize = 16;

/// Bits of the position filter; a set bit means "some key hashes here".
const FILTER_BITS: u32 = 12;

/// A multiplicative hash of a key (the keys are few, the table is tiny).
fn hash(key: u64) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A 64-bit digest of at most `KEY_BYTES` bytes (zero-extended). Equal
/// bytes give equal keys; distinct bytes rarely collide, and a collision
/// only costs one extra comparison.
fn key_of(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; KEY_BYTES];
    let n = bytes.len().min(KEY_BYTES);
    if let (Some(dst), Some(src)) = (buf.get_mut(..n), bytes.get(..n)) {
        dst.copy_from_slice(src);
    }
    let (mut lo, mut hi) = ([0u8; 8], [0u8; 8]);
    lo.copy_from_slice(&buf[..8]);
    hi.copy_from_slice(&buf[8..]);
    u64::from_le_bytes(lo)
        ^ u64::from_le_bytes(hi)
            .rotate_left(29)
            .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

/// The patterns whose keys have one length, indexed by key.
struct KeyTable {
    /// Key length in bytes (1..=`KEY_BYTES`).
    len: usize,
    /// One bit per hash bucket: a cheap first test for every position.
    filter: Vec<u64>,
    /// Sorted (key, pattern id) pairs.
    entries: Vec<(u64, usize)>,
}

impl KeyTable {
    fn new(len: usize) -> Self {
        KeyTable {
            len,
            filter: vec![0; 1 << (FILTER_BITS - 6)],
            entries: Vec::new(),
        }
    }

    fn bucket(key: u64) -> (usize, u64) {
        let bucket = usize::try_from(hash(key) >> (64 - FILTER_BITS)).unwrap_or(0);
        (bucket >> 6, 1u64 << (bucket & 63))
    }

    fn insert(&mut self, key: u64, id: usize) {
        let (word, bit) = Self::bucket(key);
        if let Some(slot) = self.filter.get_mut(word) {
            *slot |= bit;
        }
        self.entries.push((key, id));
    }

    /// Pattern ids whose key is `key`.
    fn lookup(&self, key: u64) -> &[(u64, usize)] {
        let (word, bit) = Self::bucket(key);
        if self.filter.get(word).is_none_or(|w| w & bit == 0) {
            return &[];
        }
        let from = self.entries.partition_point(|(k, _)| *k < key);
        let to = self.entries.partition_point(|(k, _)| *k <= key);
        self.entries.get(from..to).unwrap_or_default()
    }
}

/// Finds every occurrence of the marker literals and protected spans.
///
/// Each pattern is indexed by its first sixteen bytes (shorter patterns by
/// all of theirs); a scan reads the key at every candidate position, tests a
/// small bit filter and checks the few candidate patterns in full. Building costs next
/// to nothing, and the scan is one pass however many spans there are.
struct Scanner<'a> {
    /// Marker literals first (ids 0..4), then the non-empty protected spans.
    patterns: Vec<&'a [u8]>,
    /// One table per key length present, longest first.
    tables: Vec<KeyTable>,
    /// Length of the longest pattern.
    longest: usize,
    /// The distinct first bytes of the patterns, sorted.
    first_bytes: Vec<u8>,
}

impl<'a> Scanner<'a> {
    fn new(protected_spans: &[&'a str]) -> Self {
        let patterns: Vec<&'a [u8]> = MARKERS
            .iter()
            .copied()
            .chain(protected_spans.iter().copied().filter(|s| !s.is_empty()))
            .map(str::as_bytes)
            .collect();
        let mut tables: Vec<KeyTable> = Vec::new();
        for (id, pattern) in patterns.iter().enumerate() {
            let len = pattern.len().min(KEY_BYTES);
            let key = key_of(pattern.get(..len).unwrap_or_default());
            match tables.iter_mut().find(|t| t.len == len) {
                Some(table) => table.insert(key, id),
                None => {
                    let mut table = KeyTable::new(len);
                    table.insert(key, id);
                    tables.push(table);
                }
            }
        }
        for table in &mut tables {
            table.entries.sort_unstable();
        }
        tables.sort_by_key(|t| std::cmp::Reverse(t.len));
        let longest = patterns
            .iter()
            .map(|p| p.len())
            .max()
            .unwrap_or(MAX_MARKER_LEN);
        let mut first_bytes: Vec<u8> = patterns.iter().filter_map(|p| p.first().copied()).collect();
        first_bytes.sort_unstable();
        first_bytes.dedup();
        Scanner {
            patterns,
            tables,
            longest,
            first_bytes,
        }
    }

    /// Every (overlapping) occurrence in `doc` that starts in `starts`, in
    /// one pass over those positions. When the patterns begin with at most
    /// three distinct bytes (markers, frontmatter and headings usually do),
    /// candidate positions come from a vectorised `memchr` search.
    fn scan(&self, doc: &[u8], starts: Range<usize>, out: &mut Vec<Occurrence>) {
        let end = starts.end.min(doc.len());
        let Some(hay) = doc.get(starts.start..end) else {
            return;
        };
        let base = starts.start;
        let mut check = |offset: usize| self.check(doc, base.saturating_add(offset), out);
        match self.first_bytes.as_slice() {
            [] => {}
            [a] => memchr::memchr_iter(*a, hay).for_each(&mut check),
            [a, b] => memchr::memchr2_iter(*a, *b, hay).for_each(&mut check),
            [a, b, c] => memchr::memchr3_iter(*a, *b, *c, hay).for_each(&mut check),
            _ => (0..hay.len()).for_each(&mut check),
        }
    }

    /// Records every pattern that occurs at `start`.
    fn check(&self, doc: &[u8], start: usize, out: &mut Vec<Occurrence>) {
        let Some(rest) = doc.get(start..) else {
            return;
        };
        for table in &self.tables {
            let Some(head) = rest.get(..table.len) else {
                continue;
            };
            for &(_, id) in table.lookup(key_of(head)) {
                let Some(pattern) = self.patterns.get(id) else {
                    continue;
                };
                if rest.starts_with(pattern) {
                    out.push(Occurrence {
                        start,
                        end: start.saturating_add(pattern.len()),
                        pattern: id,
                    });
                }
            }
        }
    }
}

/// The protected ranges of the current document, kept exact across edits.
///
/// The first pass scans the whole document. After an edit replaced bytes
/// `a..b` by `c` new bytes, occurrences before the edit stay, those after it
/// shift by the length change, and the only occurrences that can be new
/// overlap the new bytes or the seam, so they lie in the window from
/// `a - longest + 1` to `a + c`, which is scanned again. The
/// result equals a full rescan before every edit, at the cost of a window.
struct Protection<'s> {
    scanner: &'s Scanner<'s>,
    occurrences: Vec<Occurrence>,
    /// Occurrence ranges plus the extent of each marker pair, sorted.
    ranges: Vec<Range<usize>>,
}

impl<'s> Protection<'s> {
    fn new(scanner: &'s Scanner<'s>, doc: &str) -> Self {
        let mut occurrences = Vec::new();
        scanner.scan(doc.as_bytes(), 0..doc.len(), &mut occurrences);
        occurrences.sort_unstable();
        let mut protection = Protection {
            scanner,
            occurrences,
            ranges: Vec::new(),
        };
        protection.derive_ranges();
        protection
    }

    /// Updates the occurrences after `old` was replaced by `new_len` bytes
    /// (`doc` is the document after the edit).
    fn after_splice(&mut self, doc: &str, old: Range<usize>, new_len: usize) {
        let (a, b) = (old.start, old.end);
        let new_end = a.saturating_add(new_len);
        // Occurrences that lost bytes or were split are gone (the engine
        // never edits protected bytes, so this removes nothing in practice).
        self.occurrences.retain(|o| {
            let damaged = if b > a {
                o.start < b && o.end > a
            } else {
                o.start < a && o.end > a
            };
            !damaged
        });
        for o in &mut self.occurrences {
            if o.start >= b {
                o.start = o.start - b + new_end;
                o.end = o.end - b + new_end;
            }
        }
        // A new occurrence starts before `new_end` and ends after `a`.
        let low = a.saturating_sub(self.scanner.longest.saturating_sub(1));
        let mut fresh = Vec::new();
        self.scanner.scan(doc.as_bytes(), low..new_end, &mut fresh);
        // New occurrences overlap the new bytes or straddle the seam.
        self.occurrences
            .extend(fresh.into_iter().filter(|o| o.start < new_end && o.end > a));
        self.occurrences.sort_unstable();
        self.derive_ranges();
    }

    fn derive_ranges(&mut self) {
        // For each marker pair: from its first marker to the end of its last.
        let mut pairs: [Option<Range<usize>>; 2] = [None, None];
        self.ranges.clear();
        for o in &self.occurrences {
            if o.pattern < MARKERS.len()
                && let Some(slot) = pairs.get_mut(o.pattern / 2)
            {
                *slot = Some(match slot.take() {
                    Some(span) => span.start.min(o.start)..span.end.max(o.end),
                    None => o.start..o.end,
                });
            }
            self.ranges.push(o.start..o.end);
        }
        self.ranges.extend(pairs.into_iter().flatten());
        self.ranges.sort_unstable_by_key(|r| (r.start, r.end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_point_skips_a_cluster_at_zero() {
        assert_eq!(append_point(&[], 10), 10);
        assert_eq!(append_point(std::slice::from_ref(&(0..4)), 10), 10);
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
        let ranges = Protection::new(&scanner, &doc).ranges;
        let start = doc.find(MARKERS[0]).unwrap_or_default();
        let end = doc.find(MARKERS[1]).unwrap_or_default() + MARKERS[1].len();
        assert!(ranges.contains(&(0..2)));
        assert!(ranges.contains(&(1..3)));
        assert!(ranges.contains(&(start..end)));
    }

    /// Every occurrence of every pattern, found the slow way.
    fn naive(scanner: &Scanner<'_>, doc: &str) -> Vec<Occurrence> {
        let mut out = Vec::new();
        for start in 0..doc.len() {
            for (pattern, bytes) in scanner.patterns.iter().enumerate() {
                if doc.as_bytes()[start..].starts_with(bytes) {
                    out.push(Occurrence {
                        start,
                        end: start + bytes.len(),
                        pattern,
                    });
                }
            }
        }
        out.sort_unstable();
        out
    }

    #[test]
    fn scanner_matches_naive_search_for_every_key_length() {
        let spans = [
            "a",
            "ab",
            "abc",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "bcdefghij",
            "é",
            "éé",
        ];
        let scanner = Scanner::new(&spans);
        for doc in [
            "",
            "a",
            "abcdefghij abcdefgh",
            "xxabcdefghijabcdefghij",
            "ééé a",
            "<!-- APPENDIX_START -->ab",
        ] {
            assert_eq!(
                Protection::new(&scanner, doc).occurrences,
                naive(&scanner, doc),
                "{doc:?}"
            );
        }
    }

    /// The incremental update equals a full rescan after any splice,
    /// including splices that damage, create or join occurrences.
    #[test]
    fn incremental_ranges_equal_a_full_rescan() {
        let pieces = [
            "ab",
            "a",
            "b",
            "ba",
            "x",
            "<!-- APPENDIX_",
            "START -->",
            "é",
            "",
        ];
        let spans = ["ab", "aba", "b x", "é a", "ab<!-- APPENDIX_START"];
        let scanner = Scanner::new(&spans);
        let mut seed: u64 = 7;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n.max(1)
        };
        for _ in 0..300 {
            let mut doc: String = (0..12).map(|_| pieces[next(pieces.len())]).collect();
            let mut protection = Protection::new(&scanner, &doc);
            for _ in 0..20 {
                let bounds: Vec<usize> = (0..=doc.len())
                    .filter(|&i| doc.is_char_boundary(i))
                    .collect();
                let x = bounds[next(bounds.len())];
                let y = bounds[next(bounds.len())];
                let (a, b) = (x.min(y), x.max(y).min(x.min(y) + 4));
                let b = if doc.is_char_boundary(b) { b } else { a };
                let insertion = pieces[next(pieces.len())];
                doc.replace_range(a..b, insertion);
                protection.after_splice(&doc, a..b, insertion.len());
                let fresh = Protection::new(&scanner, &doc);
                assert_eq!(protection.occurrences, naive(&scanner, &doc), "{doc:?}");
                assert_eq!(protection.occurrences, fresh.occurrences, "{doc:?}");
                assert_eq!(protection.ranges, fresh.ranges, "{doc:?}");
            }
        }
    }

    #[test]
    fn splice_refuses_to_join_a_marker() {
        let mut doc = String::from("<!-- APPENDIX_X -->");
        let scanner = Scanner::new(&[]);
        let mut protection = Protection::new(&scanner, &doc);
        let status = splice(
            &mut doc,
            &mut protection,
            14..15,
            "START",
            EditStatus::AppliedReplace,
        );
        assert_eq!(status, EditStatus::SkippedMarkerInPayload);
        assert_eq!(doc, "<!-- APPENDIX_X -->");
    }
}
