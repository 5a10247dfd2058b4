//! Property tests: for any document and any edit sequence, protected spans
//! survive byte for byte, no marker is created or destroyed, and untouched
//! text stays in order.

use evolution_patch::{
    APPENDIX_END, APPENDIX_START, SLOW_UPDATE_END, SLOW_UPDATE_START, append_to_appendix,
    appendix_region_bounds, apply_patch_with_report, extract_appendix_notes,
    replace_appendix_notes, replace_slow_update, slow_update_inner, slow_update_region_bounds,
};
use evolution_types::{Edit, EditOp, EditStatus};
use proptest::prelude::*;

const MARKERS: [&str; 4] = [
    APPENDIX_START,
    APPENDIX_END,
    SLOW_UPDATE_START,
    SLOW_UPDATE_END,
];

/// Building blocks of documents, targets and payloads: ordinary lines, CJK,
/// frontmatter, markers, half markers and marker-like text.
const PIECES: &[&str] = &[
    "# Skill",
    "---",
    "name: demo",
    "",
    "- check the units",
    "Step 1: read the question",
    "检查证据后再回答",
    "```",
    "<!-- not a marker -->",
    "<!-- APPENDIX_",
    "START -->",
    "END -->",
    "<!-- SLOW_UPDATE_",
    "<!-- APPENDIX_START -->",
    "<!-- APPENDIX_END -->",
    "<!-- SLOW_UPDATE_START -->",
    "<!-- SLOW_UPDATE_END -->",
    "  indented  ",
    "a",
    "é",
    "\t",
    "-->",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(PIECES).prop_map(str::to_owned),
        1 => "[a-z <>!_\\-\n語é]{0,12}",
    ]
}

fn document() -> impl Strategy<Value = String> {
    (prop::collection::vec(piece(), 0..24), any::<bool>())
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }))
}

/// Where a target or span comes from: a slice of the document or a piece.
#[derive(Debug, Clone)]
enum Pick {
    Slice(usize, usize),
    Piece(String),
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        3 => (any::<usize>(), 0usize..40).prop_map(|(s, l)| Pick::Slice(s, l)),
        1 => piece().prop_map(Pick::Piece),
    ]
}

fn resolve(doc: &str, pick: &Pick) -> String {
    match pick {
        Pick::Piece(p) => p.clone(),
        Pick::Slice(start, len) => {
            let chars: Vec<char> = doc.chars().collect();
            if chars.is_empty() {
                return String::new();
            }
            let start = start % chars.len();
            let end = (start + len).min(chars.len());
            chars[start..end].iter().collect()
        }
    }
}

fn op() -> impl Strategy<Value = EditOp> {
    prop_oneof![
        Just(EditOp::Append),
        Just(EditOp::InsertAfter),
        Just(EditOp::Replace),
        Just(EditOp::Delete),
        Just(EditOp::Other("rewrite".into())),
    ]
}

fn overlapping_count(hay: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    (0..hay.len())
        .filter(|&i| hay.as_bytes()[i..].starts_with(needle.as_bytes()))
        .count()
}

fn marker_counts(text: &str) -> Vec<usize> {
    MARKERS.iter().map(|m| text.matches(m).count()).collect()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &str, b: &str) -> usize {
    a.bytes()
        .rev()
        .zip(b.bytes().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// `text` with lone line feeds turned into CRLF.
fn to_crlf(text: &str) -> String {
    let mut out = String::new();
    let mut prev = '\0';
    for c in text.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

fn is_crlf(doc: &str) -> bool {
    doc.find('\n')
        .is_some_and(|p| p > 0 && doc.as_bytes()[p - 1] == b'\r')
}

/// The bytes of `target` as the engine matches it in `doc`, if present.
fn found_len(doc: &str, target: &str) -> Option<usize> {
    if doc.contains(target) {
        return Some(target.len());
    }
    let converted = to_crlf(target);
    (is_crlf(doc) && doc.contains(&converted)).then_some(converted.len())
}

/// Length of the longest common subsequence of two line lists.
fn lcs(a: &[&str], b: &[&str]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn patch_invariants(
        doc in document(),
        span_picks in prop::collection::vec(pick(), 0..4),
        edit_specs in prop::collection::vec((op(), pick(), piece()), 0..8),
    ) {
        let spans: Vec<String> = span_picks.iter().map(|p| resolve(&doc, p)).collect();
        let span_refs: Vec<&str> = spans.iter().map(String::as_str).collect();
        let edits: Vec<Edit> = edit_specs
            .iter()
            .map(|(op, target, content)| Edit::new(op.clone(), resolve(&doc, target), content.clone()))
            .collect();

        let (out, reports) = apply_patch_with_report(&doc, &edits, &span_refs);

        // One report per edit, in order.
        prop_assert_eq!(reports.len(), edits.len());
        for (i, report) in reports.iter().enumerate() {
            prop_assert_eq!(report.index, i + 1);
            prop_assert_eq!(&report.op, &edits[i].op);
        }
        // Protected spans survive: no occurrence is lost.
        for span in &spans {
            prop_assert!(overlapping_count(&out, span) >= overlapping_count(&doc, span),
                "span {:?} lost: {:?} -> {:?}", span, doc, out);
        }
        // No marker is created or destroyed.
        prop_assert_eq!(marker_counts(&out), marker_counts(&doc));

        // Edit by edit: the same result, skipped edits change nothing, and
        // untouched text keeps its order.
        let mut current = doc.clone();
        for (edit, report) in edits.iter().zip(&reports) {
            let (next, single) = apply_patch_with_report(&current, std::slice::from_ref(edit), &span_refs);
            prop_assert_eq!(&single[0].status, &report.status);
            if !report.status.is_applied() {
                prop_assert_eq!(&next, &current);
            } else {
                let removable = match report.status {
                    EditStatus::AppliedReplace | EditStatus::AppliedDelete => {
                        found_len(&current, &edit.target).unwrap_or(usize::MAX)
                    }
                    _ => 0,
                };
                prop_assert!(removable != usize::MAX, "applied edit without target");
                let kept = common_prefix(&current, &next)
                    .saturating_add(common_suffix(&current, &next));
                prop_assert!(kept.saturating_add(removable) >= current.len(),
                    "untouched text changed by {:?}: {:?} -> {:?}", edit, current, next);
                let payload = edit.content.trim();
                let payload = if is_crlf(&current) { to_crlf(payload) } else { payload.to_owned() };
                if edit.op != EditOp::Delete {
                    prop_assert!(next.contains(&payload), "payload missing after {:?}", edit);
                }
                // Every untouched line, in order: at most the lines the
                // target covers (plus the one it may join) or the one an
                // insertion splits go missing.
                let allowed = if removable > 0 { edit.target.matches('\n').count() + 2 } else { 1 };
                let before: Vec<&str> = current.split('\n').filter(|l| !l.is_empty()).collect();
                let after: Vec<&str> = next.split('\n').collect();
                let missing = before.len() - lcs(&before, &after);
                prop_assert!(missing <= allowed,
                    "lines lost by {:?}: {:?} -> {:?}", edit, current, next);
            }
            current = next;
        }
        prop_assert_eq!(current, out);
    }

    #[test]
    fn region_parsers_are_consistent(doc in document()) {
        for (bounds, start, end) in [
            (appendix_region_bounds(&doc), APPENDIX_START, APPENDIX_END),
            (slow_update_region_bounds(&doc), SLOW_UPDATE_START, SLOW_UPDATE_END),
        ] {
            let (starts, ends) = (doc.matches(start).count(), doc.matches(end).count());
            match bounds {
                Ok(None) => prop_assert_eq!((starts, ends), (0, 0)),
                Ok(Some(range)) => {
                    prop_assert_eq!((starts, ends), (1, 1));
                    prop_assert!(doc[range.clone()].starts_with(start));
                    prop_assert!(doc[range].ends_with(end));
                }
                Err(err) => {
                    prop_assert!(starts != 1 || ends != 1 || doc.find(end) < doc.find(start));
                    prop_assert!(err.marker() == start || err.marker() == end);
                    let line = doc[..doc.find(err.marker()).unwrap_or(0)].matches('\n').count() + 1;
                    prop_assert!(err.line() >= line);
                    prop_assert!(err.line() <= doc.matches('\n').count() + 1);
                }
            }
        }
    }

    #[test]
    fn region_writers_touch_only_their_region(
        doc in document(),
        guidance in "[a-z 語\n]{0,40}",
        notes in prop::collection::vec("[a-z 語]{0,12}", 0..5),
    ) {
        if let Ok(out) = replace_slow_update(&doc, &guidance) {
            prop_assert_eq!(slow_update_inner(&out).ok().flatten().map(|s| s.replace('\r', "")),
                Some(guidance.trim().to_owned()));
            if let Ok(Some(range)) = slow_update_region_bounds(&doc) {
                prop_assert!(out.starts_with(&doc[..range.start]));
                prop_assert!(out.ends_with(&doc[range.end..]));
            } else {
                prop_assert!(out.starts_with(&doc));
            }
            prop_assert_eq!(out.matches(SLOW_UPDATE_START).count(), 1);
        }
        if let Ok(out) = replace_appendix_notes(&doc, &notes) {
            let expected: Vec<String> = {
                let mut seen = std::collections::HashSet::new();
                notes.iter()
                    .map(|n| n.split_whitespace().collect::<Vec<_>>().join(" "))
                    .filter(|n| !n.is_empty() && seen.insert(n.to_lowercase()))
                    .collect()
            };
            prop_assert_eq!(extract_appendix_notes(&out).ok(), Some(expected.clone()));
            prop_assert_eq!(out.matches(APPENDIX_START).count(), usize::from(!expected.is_empty()));
            if let Ok(Some(range)) = appendix_region_bounds(&doc) {
                prop_assert!(out.starts_with(&doc[..range.start]));
            }
            let again = append_to_appendix(&out, &notes);
            prop_assert_eq!(again.ok(), Some(out));
        }
    }
}
