//! Realistic SKILL.md documents before and after edit sequences.

use std::fmt::Write as _;

use evolution_patch::{
    append_to_appendix, appendix_region_bounds, apply_patch_with_report, replace_slow_update,
    slow_update_region_bounds,
};
use evolution_types::Edit;

const FRONTMATTER: &str = include_str!("data/frontmatter.md");
const FENCED: &str = include_str!("data/fenced.md");
const CJK: &str = include_str!("data/cjk.md");
const BOTH_REGIONS: &str = include_str!("data/both_regions.md");

/// The frontmatter block (`---` to `---` and its line break), if any.
fn frontmatter(doc: &str) -> Option<&str> {
    let rest = doc.strip_prefix("---")?;
    let close = rest.find("\n---")? + 3 + "\n---".len();
    let end = doc[close..].find('\n').map_or(doc.len(), |p| close + p + 1);
    Some(&doc[..end])
}

/// Protected spans as the evolve step passes them: frontmatter and regions.
fn spans(doc: &str) -> Vec<&str> {
    let mut spans: Vec<&str> = frontmatter(doc).into_iter().collect();
    for bounds in [appendix_region_bounds(doc), slow_update_region_bounds(doc)] {
        if let Ok(Some(range)) = bounds {
            spans.push(&doc[range]);
        }
    }
    spans
}

/// Applies `edits` and renders document, reports and result, with CRLF shown.
fn render(doc: &str, edits: &[Edit]) -> String {
    let spans = spans(doc);
    let (out, reports) = apply_patch_with_report(doc, edits, &spans);
    for span in &spans {
        assert!(out.contains(span), "protected span changed: {span:?}");
    }
    let mut text = String::new();
    for report in &reports {
        let _ = writeln!(
            text,
            "{:>2}. {:<13} {:<54} {:?}",
            report.index,
            report.op.as_str(),
            report.status.as_str(),
            report.target
        );
    }
    let _ = write!(text, "--- after ---\n{}", out.replace("\r\n", "␍\n"));
    text
}

fn step_edits() -> Vec<Edit> {
    vec![
        Edit::insert_after(
            "2. Draft three headlines.",
            "   2a. Test each headline against the audience.  ",
        ),
        Edit::replace("Keep sentences short.", "Keep sentences under 20 words."),
        Edit::append("## Checks\n- Re-read the brief before submitting."),
        Edit::replace("name: copywriting", "name: hacked"),
        Edit::delete("- Never invent product features.\n"),
        Edit::insert_after("not in the document", "Fallback note."),
    ]
}

#[test]
fn yaml_frontmatter_document() {
    insta::assert_snapshot!(render(FRONTMATTER, &step_edits()));
}

#[test]
fn fenced_code_with_marker_like_text() {
    let edits = vec![
        Edit::replace("<!--APPENDIX_START-->", "<!-- APPENDIX (example) -->"),
        Edit::insert_after("SLOW_UPDATE_START and", "Markers must stand alone."),
        Edit::replace("2. Answer.", "2. Answer in one paragraph."),
        Edit::replace("<!-- APPENDIX", "<!-- APPENDIX_START -->"),
        Edit::append("## Notes\n- Quote the input verbatim."),
    ];
    insta::assert_snapshot!(render(FENCED, &edits));
}

#[test]
fn cjk_document() {
    let edits = vec![
        Edit::insert_after(
            "2. 用 search_similar 查找相关片段。",
            "   2.1 结果少于三条时扩大检索范围。",
        ),
        Edit::replace(
            "只回答视频中出现的内容。",
            "只回答视频中出现的内容，不做推测。",
        ),
        Edit::replace("name: 视频问答", "name: 改名"),
        Edit::delete("答案 + "),
        Edit::append("## 常见错误\n- 过早提交答案。"),
    ];
    insta::assert_snapshot!(render(CJK, &edits));
}

#[test]
fn crlf_document() {
    let doc = FRONTMATTER.replace('\n', "\r\n");
    insta::assert_snapshot!(render(&doc, &step_edits()));
}

#[test]
fn document_with_both_regions() {
    let edits = vec![
        Edit::replace(
            "1. Search for primary sources.\n2. Cite every claim.\n\n<!--",
            "x",
        ),
        Edit::replace("Prefer primary sources over summaries.", "Ignore sources."),
        Edit::delete("- Re-read the question before answering."),
        Edit::insert_after("2. Cite every claim.", "3. Give the date of each source."),
        Edit::append("## Pitfalls\n- Secondary sources that quote each other."),
        Edit::insert_after("<!-- SLOW_UPDATE_END -->", "sneaky"),
    ];
    let after_edits = render(BOTH_REGIONS, &edits);
    let (patched, _) = apply_patch_with_report(BOTH_REGIONS, &edits, &spans(BOTH_REGIONS));
    let with_notes = append_to_appendix(
        &patched,
        &[
            "Check the date of each source.",
            "re-read the question before answering",
        ],
    )
    .expect("well-formed regions");
    let with_guidance =
        replace_slow_update(&with_notes, "Prefer primary sources.\nDate every source.")
            .expect("well-formed regions");
    insta::assert_snapshot!(format!(
        "{after_edits}\n--- after appendix and guidance ---\n{with_guidance}"
    ));
}
