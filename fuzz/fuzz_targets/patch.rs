//! Fuzzes `apply_patch_with_report`: it must not panic, must report every
//! edit, keep every protected span and neither create nor destroy a marker.
#![no_main]

mod common;

use evolution_patch::apply_patch_with_report;
use evolution_types::{Edit, EditOp};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    doc: String,
    spans: Vec<String>,
    edits: Vec<(u8, String, String)>,
}

fuzz_target!(|input: Input| {
    let doc = common::expand(&input.doc);
    let spans: Vec<String> = input
        .spans
        .iter()
        .take(64)
        .map(|s| common::expand(s))
        .collect();
    let span_refs: Vec<&str> = spans.iter().map(String::as_str).collect();
    let edits: Vec<Edit> = input
        .edits
        .iter()
        .take(32)
        .map(|(op, target, content)| {
            let op = match op % 5 {
                0 => EditOp::Append,
                1 => EditOp::InsertAfter,
                2 => EditOp::Replace,
                3 => EditOp::Delete,
                _ => EditOp::Other("rewrite".into()),
            };
            Edit::new(op, common::expand(target), common::expand(content))
        })
        .collect();
    let (out, reports) = apply_patch_with_report(&doc, &edits, &span_refs);
    assert_eq!(reports.len(), edits.len());
    for span in &spans {
        assert!(common::overlapping_count(&out, span) >= common::overlapping_count(&doc, span));
    }
    for marker in common::MARKERS {
        assert_eq!(out.matches(marker).count(), doc.matches(marker).count());
    }
});
