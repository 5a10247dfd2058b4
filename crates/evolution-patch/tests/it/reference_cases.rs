//! The behaviours the reference implementation's `test_patch.py` checks, kept as-is.

use evolution_patch::{
    APPENDIX_END, APPENDIX_START, SLOW_UPDATE_END, SLOW_UPDATE_START, append_to_appendix,
    appendix_region_bounds, apply_patch_with_report, extract_appendix_notes,
    replace_appendix_notes, replace_slow_update, slow_update_inner, slow_update_region_bounds,
};
use evolution_types::Edit;

#[test]
fn no_markers_returns_none() {
    assert_eq!(appendix_region_bounds("hello"), Ok(None));
    assert_eq!(slow_update_region_bounds("hello"), Ok(None));
}

#[test]
fn both_markers_returns_range() {
    let text = format!("head\n{APPENDIX_START}\nbody\n{APPENDIX_END}\ntail");
    let range = appendix_region_bounds(&text).unwrap().unwrap();
    assert!(text[range.clone()].starts_with(APPENDIX_START));
    assert!(text[range].ends_with(APPENDIX_END));
}

#[test]
fn single_marker_raises() {
    assert!(appendix_region_bounds(&format!("head\n{APPENDIX_START}\nbody")).is_err());
    assert!(slow_update_region_bounds(&format!("head\n{SLOW_UPDATE_END}\nbody")).is_err());
}

#[test]
fn append_creates_region() {
    let result = append_to_appendix("content", &["note1"]).unwrap();
    assert!(result.contains(APPENDIX_START));
    assert!(result.contains("- note1"));
}

#[test]
fn extract_notes() {
    let text = format!("{APPENDIX_START}\n- a\n- b\n{APPENDIX_END}");
    assert_eq!(extract_appendix_notes(&text).unwrap(), vec!["a", "b"]);
}

#[test]
fn replace_empty_deletes_region() {
    let text = format!("head\n{APPENDIX_START}\n- old\n{APPENDIX_END}\ntail");
    let result = replace_appendix_notes::<&str>(&text, &[]).unwrap();
    assert!(!result.contains(APPENDIX_START));
}

#[test]
fn replace_creates_region() {
    let result = replace_slow_update("content", "guidance text").unwrap();
    assert!(result.contains(SLOW_UPDATE_START));
    assert!(result.contains("guidance text"));
}

#[test]
fn marker_injection_raises() {
    assert!(replace_slow_update("content", &format!("evil {SLOW_UPDATE_START}")).is_err());
}

#[test]
fn empty_guidance_clears() {
    let text = replace_slow_update("content", "old").unwrap();
    let result = replace_slow_update(&text, "").unwrap();
    assert_eq!(slow_update_inner(&result), Ok(Some("")));
}

#[test]
fn append_before_protected() {
    let protected = format!("{APPENDIX_START}\nprotected\n{APPENDIX_END}");
    let content = format!("body\n{protected}");
    let (new, report) =
        apply_patch_with_report(&content, &[Edit::append("new line")], &[protected.as_str()]);
    assert!(report[0].status.as_str().starts_with("applied"));
    assert!(new.find("new line").unwrap() < new.find(APPENDIX_START).unwrap());
}

#[test]
fn replace_in_protected_skipped() {
    let protected = format!("{APPENDIX_START}\nprotected\n{APPENDIX_END}");
    let content = format!("body\n{protected}");
    let edits = [Edit::replace("protected", "replaced")];
    let (new, report) = apply_patch_with_report(&content, &edits, &[protected.as_str()]);
    assert_eq!(report[0].status.as_str(), "skipped_protected");
    assert!(new.contains("protected"));
    assert_eq!(new, content);
}

#[test]
fn insert_after_fallback() {
    let edits = [Edit::insert_after("nonexistent", "new")];
    let (_, report) = apply_patch_with_report("line1\nline2", &edits, &[]);
    assert!(
        report[0]
            .status
            .as_str()
            .contains("applied_insert_after_fallback")
    );
}

#[test]
fn delete_first_occurrence() {
    let (new, report) = apply_patch_with_report("a\nb\na\nc", &[Edit::delete("a")], &[]);
    assert_eq!(new.matches('a').count(), 1);
    assert_eq!(report[0].status.as_str(), "applied_delete");
}
