use evolution_types::{Edit, EditOp, EditReport, EditStatus, EditStatusKind};

#[test]
fn edit_reads_the_skillopt_wire_format_and_keeps_extra_fields() {
    let json = r###"{"op":"insert_after","target":"## Steps","content":"- check","support_count":3,"source_type":"failure"}"###;
    let edit: Edit = serde_json::from_str(json).unwrap();
    assert_eq!(edit.op, EditOp::InsertAfter);
    assert_eq!(edit.support_count, Some(3));
    assert_eq!(edit.extra["source_type"], "failure");
    let back = serde_json::to_value(&edit).unwrap();
    assert_eq!(
        back,
        serde_json::from_str::<serde_json::Value>(json).unwrap()
    );
}

#[test]
fn unknown_ops_survive_as_other() {
    let edit: Edit = serde_json::from_str(r#"{"op":"rewrite_all"}"#).unwrap();
    assert_eq!(edit.op, EditOp::Other("rewrite_all".into()));
    assert_eq!(edit.target, "");
    assert_eq!(serde_json::to_value(&edit).unwrap()["op"], "rewrite_all");
}

#[test]
fn statuses_use_wire_strings_and_classify() {
    let cases = [
        (
            "applied_append",
            EditStatus::AppliedAppend,
            EditStatusKind::Applied,
        ),
        (
            "applied_insert_after_fallback_append",
            EditStatus::AppliedInsertAfterFallbackAppend,
            EditStatusKind::Fallback,
        ),
        (
            "skipped_protected",
            EditStatus::SkippedProtected,
            EditStatusKind::Skipped,
        ),
        (
            "skipped_protected_region",
            EditStatus::SkippedProtected,
            EditStatusKind::Skipped,
        ),
        (
            "skipped_unknown_op",
            EditStatus::SkippedUnknownOp,
            EditStatusKind::Skipped,
        ),
        (
            "error",
            EditStatus::Other("error".into()),
            EditStatusKind::Skipped,
        ),
    ];
    for (text, status, kind) in cases {
        let parsed: EditStatus = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        assert_eq!(parsed, status, "{text}");
        assert_eq!(parsed.kind(), kind, "{text}");
    }
    assert_eq!(
        EditStatus::SkippedProtected.to_string(),
        "skipped_protected"
    );
}

#[test]
fn report_round_trips() {
    let report = EditReport {
        index: 1,
        op: EditOp::Replace,
        status: EditStatus::AppliedReplace,
        target: "old".into(),
        content_preview: "new".into(),
    };
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(
        json,
        r#"{"index":1,"op":"replace","status":"applied_replace","target":"old","content_preview":"new"}"#
    );
    assert_eq!(serde_json::from_str::<EditReport>(&json).unwrap(), report);
}
