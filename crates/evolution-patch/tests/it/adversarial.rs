//! Adversarial input: a clear error or a `skipped_*` report, never a panic
//! or silent damage.

use evolution_patch::{
    APPENDIX_END, APPENDIX_START, PatchError, RegionError, SLOW_UPDATE_END, SLOW_UPDATE_START,
    append_to_appendix, appendix_region_bounds, apply_patch_with_report, extract_appendix_notes,
    replace_appendix_notes, replace_slow_update, slow_update_inner, slow_update_region_bounds,
};
use evolution_types::{Edit, EditStatus};

const MARKERS: [&str; 4] = [
    APPENDIX_START,
    APPENDIX_END,
    SLOW_UPDATE_START,
    SLOW_UPDATE_END,
];

fn doc_with_regions() -> String {
    format!(
        "---\nname: x\n---\n# Skill\n\nbody line\n\n{SLOW_UPDATE_START}\n## Long-Term Guidance\nkeep\n{SLOW_UPDATE_END}\n\n{APPENDIX_START}\n- note\n{APPENDIX_END}\n"
    )
}

fn single(doc: &str, edit: Edit, spans: &[&str]) -> (String, EditStatus) {
    let (out, mut reports) = apply_patch_with_report(doc, &[edit], spans);
    (out, reports.remove(0).status)
}

#[test]
fn empty_targets_are_skipped() {
    let doc = doc_with_regions();
    for (edit, status) in [
        (
            Edit::replace("", "x"),
            EditStatus::SkippedReplaceMissingTarget,
        ),
        (Edit::delete(""), EditStatus::SkippedDeleteMissingTarget),
        (
            Edit::insert_after("", "x"),
            EditStatus::SkippedInsertAfterMissingTarget,
        ),
    ] {
        assert_eq!(single(&doc, edit, &[]), (doc.clone(), status));
    }
}

#[test]
fn target_equal_to_a_marker_is_protected() {
    let doc = doc_with_regions();
    for marker in MARKERS {
        for edit in [
            Edit::replace(marker, "x"),
            Edit::delete(marker),
            Edit::insert_after(marker, "x"),
        ] {
            assert_eq!(
                single(&doc, edit, &[]),
                (doc.clone(), EditStatus::SkippedProtected)
            );
        }
    }
}

#[test]
fn target_inside_an_unlisted_region_is_protected() {
    let doc = doc_with_regions();
    assert_eq!(
        single(&doc, Edit::replace("keep", "x"), &[]).1,
        EditStatus::SkippedProtected
    );
    assert_eq!(
        single(&doc, Edit::delete("- note"), &[]).1,
        EditStatus::SkippedProtected
    );
}

#[test]
fn target_spanning_into_a_protected_region_is_skipped() {
    let doc = doc_with_regions();
    let spanning = format!("body line\n\n{}", &SLOW_UPDATE_START[..6]);
    assert_eq!(
        single(&doc, Edit::replace(&spanning, "x"), &[]),
        (doc.clone(), EditStatus::SkippedProtected)
    );
    let frontmatter = "---\nname: x\n---\n";
    assert_eq!(
        single(&doc, Edit::delete("x\n---\n# Skill"), &[frontmatter]),
        (doc.clone(), EditStatus::SkippedProtected)
    );
    assert_eq!(
        single(&doc, Edit::delete("x\n---\n# Skill"), &[]).1,
        EditStatus::AppliedDelete
    );
}

#[test]
fn overlapping_protected_spans_stay_intact() {
    let doc = "alpha beta gamma delta\nfree text\n";
    let spans = ["alpha beta", "beta gamma", "gamma", "a d"];
    let edits = [
        Edit::replace("beta", "B"),
        Edit::delete("a delta"),
        Edit::append("end"),
        Edit::insert_after("gamma", "after"),
        Edit::replace("free", "FREE"),
    ];
    let (out, reports) = apply_patch_with_report(doc, &edits, &spans);
    for span in spans {
        assert!(out.contains(span), "{span:?} lost in {out:?}");
    }
    assert_eq!(out, "alpha beta gamma delta\nFREE text\n\nend\n");
    let statuses: Vec<_> = reports.iter().map(|r| r.status.clone()).collect();
    assert_eq!(
        statuses,
        vec![
            EditStatus::SkippedProtected,
            EditStatus::SkippedProtected,
            // The spans form one cluster starting at offset 0, like a frontmatter.
            EditStatus::AppliedAppend,
            EditStatus::SkippedProtected,
            EditStatus::AppliedReplace,
        ]
    );
}

#[test]
fn payloads_with_markers_are_skipped() {
    let doc = doc_with_regions();
    for marker in MARKERS {
        for edit in [
            Edit::append(format!("x {marker}")),
            Edit::insert_after("body line", marker),
            Edit::replace("body line", format!("{marker} y")),
        ] {
            assert_eq!(
                single(&doc, edit, &[]),
                (doc.clone(), EditStatus::SkippedMarkerInPayload)
            );
        }
    }
}

#[test]
fn edits_that_would_assemble_a_marker_are_skipped() {
    let doc = "<!-- APPENDIX_ X START -->\n";
    assert_eq!(
        single(doc, Edit::delete(" X "), &[]),
        (doc.to_owned(), EditStatus::SkippedMarkerInPayload)
    );
    let doc = "<!-- SLOW_UPDATE_?? -->";
    assert_eq!(
        single(doc, Edit::replace("??", "END"), &[]),
        (doc.to_owned(), EditStatus::SkippedMarkerInPayload)
    );
}

#[test]
fn duplicated_markers_are_errors_for_region_functions() {
    // The layout of the workflow's example document: both markers doubled.
    let doc = format!(
        "body\n{SLOW_UPDATE_START}\n{SLOW_UPDATE_START}\nguidance\n{SLOW_UPDATE_END}\n{SLOW_UPDATE_END}\n"
    );
    let err = slow_update_region_bounds(&doc).unwrap_err();
    assert_eq!(
        err,
        RegionError::Duplicated {
            marker: SLOW_UPDATE_START,
            line: 3
        }
    );
    assert!(slow_update_inner(&doc).is_err());
    assert!(matches!(
        replace_slow_update(&doc, "g"),
        Err(PatchError::Region(_))
    ));
    assert!(matches!(
        append_to_appendix(&doc, &["n"]),
        Err(PatchError::Region(_))
    ));
    assert!(matches!(
        replace_appendix_notes::<&str>(&doc, &[]),
        Err(PatchError::Region(_))
    ));
    // The appendix of such a document can still be read.
    assert_eq!(extract_appendix_notes(&doc).unwrap(), Vec::<String>::new());
    // The engine protects everything between the first and the last marker.
    assert_eq!(
        single(&doc, Edit::replace("guidance", "x"), &[]).1,
        EditStatus::SkippedProtected
    );
    let (out, status) = single(&doc, Edit::append("new"), &[]);
    assert_eq!(status, EditStatus::AppliedAppendBeforeProtectedRegion);
    assert!(out.ends_with(&doc[5..]));
}

#[test]
fn marker_text_in_fenced_code_counts_as_a_marker() {
    // Markers are recognised byte for byte anywhere, as SkillOpt does, so a
    // literal marker quoted in a code fence is still a marker.
    let doc = format!("```\n{APPENDIX_START}\n```\n");
    assert!(matches!(
        appendix_region_bounds(&doc),
        Err(RegionError::Unpaired { line: 2, .. })
    ));
    assert_eq!(
        single(&doc, Edit::replace(APPENDIX_START, "x"), &[]).1,
        EditStatus::SkippedProtected
    );
}

#[test]
fn ten_megabyte_document() {
    let line = "- step: check the evidence before answering 检查证据\n";
    let mut doc = String::from("# Big skill\n");
    doc.push_str(&line.repeat(10 * 1024 * 1024 / line.len()));
    doc.push_str("unique tail line\n");
    doc.push_str(&format!("{APPENDIX_START}\n- n\n{APPENDIX_END}\n"));
    assert!(doc.len() >= 10 * 1024 * 1024);
    let edits = [
        Edit::replace("unique tail line", "changed tail"),
        Edit::append("appended"),
        Edit::insert_after("changed tail", "inserted"),
        Edit::delete("- n"),
        Edit::replace("# Big skill", "# Renamed"),
    ];
    let (out, reports) = apply_patch_with_report(&doc, &edits, &["# Big skill\n"]);
    let statuses: Vec<_> = reports.iter().map(|r| r.status.clone()).collect();
    assert_eq!(
        statuses,
        vec![
            EditStatus::AppliedReplace,
            EditStatus::AppliedAppendBeforeProtectedRegion,
            EditStatus::AppliedInsertAfter,
            EditStatus::SkippedProtected,
            EditStatus::SkippedProtected,
        ]
    );
    let tail =
        format!("changed tail\n\ninserted\n\nappended\n\n{APPENDIX_START}\n- n\n{APPENDIX_END}\n");
    assert!(out.ends_with(&tail), "{:?}", &out[out.len() - 200..]);
    assert!(out.starts_with("# Big skill\n"));
    assert_eq!(extract_appendix_notes(&out).unwrap(), vec!["n"]);
}
