//! `apply_patch_with_report`: one case per line of behaviour.

use evolution_patch::{
    APPENDIX_END, APPENDIX_START, SLOW_UPDATE_END, SLOW_UPDATE_START, apply_patch_with_report,
};
use evolution_types::{Edit, EditOp, EditStatus};

/// Applies one edit and checks the resulting document and status.
fn check(doc: &str, spans: &[&str], edit: Edit, expect_doc: &str, expect_status: EditStatus) {
    let (out, reports) = apply_patch_with_report(doc, std::slice::from_ref(&edit), spans);
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].status, expect_status, "{edit:?} on {doc:?}");
    assert_eq!(out, expect_doc, "{edit:?} on {doc:?}");
}

#[test]
fn append() {
    use EditStatus::*;
    check("a", &[], Edit::append(" x \n"), "a\n\nx\n", AppliedAppend);
    check("a\n", &[], Edit::append("x"), "a\n\nx\n", AppliedAppend);
    check("a\n\n", &[], Edit::append("x"), "a\n\nx\n", AppliedAppend);
    check("", &[], Edit::append("x"), "x\n", AppliedAppend);
    check(
        "a\nP\n",
        &["P"],
        Edit::append("x"),
        "a\n\nx\n\nP\n",
        AppliedAppendBeforeProtectedRegion,
    );
    // A protected span at offset 0 (frontmatter) stays first.
    check(
        "F\nb",
        &["F"],
        Edit::append("x"),
        "F\nb\n\nx\n",
        AppliedAppend,
    );
    check(
        "F\nbP",
        &["F", "P"],
        Edit::append("x"),
        "F\nb\n\nx\n\nP",
        AppliedAppendBeforeProtectedRegion,
    );
    check("a", &[], Edit::append("  "), "a", SkippedEmptyContent);
}

#[test]
fn append_lands_before_the_earliest_region_even_unlisted() {
    let doc = format!(
        "body\n\n{SLOW_UPDATE_START}\ng\n{SLOW_UPDATE_END}\n\n{APPENDIX_START}\n{APPENDIX_END}\n"
    );
    let expect = format!(
        "body\n\nnew\n\n{SLOW_UPDATE_START}\ng\n{SLOW_UPDATE_END}\n\n{APPENDIX_START}\n{APPENDIX_END}\n"
    );
    check(
        &doc,
        &[],
        Edit::append("new"),
        &expect,
        EditStatus::AppliedAppendBeforeProtectedRegion,
    );
    // Repeated appends stack without piling up blank lines.
    let (out, _) = apply_patch_with_report(&doc, &[Edit::append("one"), Edit::append("two")], &[]);
    assert!(
        out.starts_with(&format!("body\n\none\n\ntwo\n\n{SLOW_UPDATE_START}")),
        "{out:?}"
    );
}

#[test]
fn insert_after() {
    use EditStatus::*;
    check(
        "a\nb\nc",
        &[],
        Edit::insert_after("a", "x"),
        "a\n\nx\nb\nc",
        AppliedInsertAfter,
    );
    check(
        "aa\nb",
        &[],
        Edit::insert_after("a", "x"),
        "aa\n\nx\nb",
        AppliedInsertAfter,
    );
    check(
        "a\nb",
        &[],
        Edit::insert_after("b", "x"),
        "a\nb\nx\n",
        AppliedInsertAfter,
    );
    check(
        "a\nb\n",
        &[],
        Edit::insert_after("a\n", "x"),
        "a\n\nx\nb\n",
        AppliedInsertAfter,
    );
    check(
        "a\nb",
        &[],
        Edit::insert_after("zz", "x"),
        "a\nb\n\nx\n",
        AppliedInsertAfterFallbackAppend,
    );
    check(
        "a\nP",
        &["P"],
        Edit::insert_after("zz", "x"),
        "a\n\nx\n\nP",
        AppliedInsertAfterFallbackBeforeProtectedRegion,
    );
    check(
        "a\nP",
        &["P"],
        Edit::insert_after("P", "x"),
        "a\nP",
        SkippedProtected,
    );
    check(
        "a\nb",
        &[],
        Edit::insert_after("", "x"),
        "a\nb",
        SkippedInsertAfterMissingTarget,
    );
    check(
        "a\nb",
        &[],
        Edit::insert_after("a", ""),
        "a\nb",
        SkippedEmptyContent,
    );
    // The line holding the target continues into a protected span.
    check(
        "a P\nQ\n",
        &["P\nQ"],
        Edit::insert_after("a", "x"),
        "a P\nQ\n",
        SkippedProtected,
    );
}

#[test]
fn replace_and_delete() {
    use EditStatus::*;
    check(
        "a b a",
        &[],
        Edit::replace("a", " z "),
        "z b a",
        AppliedReplace,
    );
    check("a b", &[], Edit::replace("b", ""), "a ", AppliedReplace);
    check(
        "a b",
        &[],
        Edit::replace("", "z"),
        "a b",
        SkippedReplaceMissingTarget,
    );
    check(
        "a b",
        &[],
        Edit::replace("c", "z"),
        "a b",
        SkippedReplaceTargetNotFound,
    );
    check("a b a", &[], Edit::delete("a "), "b a", AppliedDelete);
    check(
        "a b",
        &[],
        Edit::delete(""),
        "a b",
        SkippedDeleteMissingTarget,
    );
    check(
        "a b",
        &[],
        Edit::delete("c"),
        "a b",
        SkippedDeleteTargetNotFound,
    );
    // First occurrence protected: skipped even though a later one is free.
    check(
        "P x P",
        &["P x"],
        Edit::replace("P", "z"),
        "P x P",
        SkippedProtected,
    );
}

#[test]
fn targets_are_not_trimmed_payloads_are() {
    check(
        "a b",
        &[],
        Edit::replace(" b", "  c  "),
        "ac",
        EditStatus::AppliedReplace,
    );
    check(
        "a b",
        &[],
        Edit::replace("b ", "c"),
        "a b",
        EditStatus::SkippedReplaceTargetNotFound,
    );
}

#[test]
fn unknown_op_is_reported() {
    let edit = Edit::new(EditOp::Other("rewrite_section".into()), "a", "b");
    check("a", &[], edit, "a", EditStatus::SkippedUnknownOp);
}

#[test]
fn one_report_per_edit_in_order_with_previews() {
    let long_target = "t".repeat(300);
    let long_content = "語".repeat(300);
    let edits = vec![
        Edit::append(format!("  {long_content}  ")),
        Edit::replace(long_target.clone(), "x"),
        Edit::delete("a"),
    ];
    let (_, reports) = apply_patch_with_report("a", &edits, &[]);
    assert_eq!(reports.len(), 3);
    assert_eq!(
        reports.iter().map(|r| r.index).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(reports[0].content_preview, "語".repeat(200));
    assert_eq!(reports[1].target, "t".repeat(200));
    assert_eq!(reports[1].op, EditOp::Replace);
    assert_eq!(reports[2].status, EditStatus::AppliedDelete);
}

#[test]
fn later_edits_see_earlier_ones() {
    let edits = [
        Edit::replace("one", "two"),
        Edit::replace("two", "three"),
        Edit::delete("three"),
    ];
    let (out, reports) = apply_patch_with_report("one\n", &edits, &[]);
    assert_eq!(out, "\n");
    assert!(reports.iter().all(|r| r.status.is_applied()));
}

#[test]
fn protected_ranges_follow_earlier_edits() {
    // The span moves right after the first edit; the second must still hit it.
    let edits = [Edit::replace("a", "aaaa"), Edit::replace("P", "z")];
    let (out, reports) = apply_patch_with_report("a P", &edits, &["P"]);
    assert_eq!(out, "aaaa P");
    assert_eq!(reports[1].status, EditStatus::SkippedProtected);
}

#[test]
fn crlf_documents() {
    let doc = "a\r\nb\r\nc\r\n";
    check(
        doc,
        &[],
        Edit::insert_after("a", "x\ny"),
        "a\r\n\r\nx\r\ny\r\nb\r\nc\r\n",
        EditStatus::AppliedInsertAfter,
    );
    check(
        doc,
        &[],
        Edit::replace("a\nb", "z"),
        "z\r\nc\r\n",
        EditStatus::AppliedReplace,
    );
    check(
        doc,
        &[],
        Edit::append("x"),
        "a\r\nb\r\nc\r\n\r\nx\r\n",
        EditStatus::AppliedAppend,
    );
}

#[test]
fn serde_edits_from_skillopt_json() {
    let json = r#"[{"op":"replace","target":"old","content":"new","source_type":"failure"},
                   {"op":"rewrite","target":"x","content":"y"}]"#;
    let edits: Vec<Edit> = serde_json::from_str(json).unwrap();
    let (out, reports) = apply_patch_with_report("old text", &edits, &[]);
    assert_eq!(out, "new text");
    let wire = serde_json::to_value(&reports).unwrap();
    assert_eq!(wire[0]["status"], "applied_replace");
    assert_eq!(wire[1]["status"], "skipped_unknown_op");
    assert_eq!(wire[1]["op"], "rewrite");
}
