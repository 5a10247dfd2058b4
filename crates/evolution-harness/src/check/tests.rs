use serde_json::json;

use super::*;

fn question(check: Value) -> GeneratedQuestion {
    let mut q = GeneratedQuestion {
        question_id: "q1".into(),
        ..GeneratedQuestion::default()
    };
    q.extra.insert(CHECK_KEY.into(), check);
    q
}

fn check(check: Value) -> AnswerCheck {
    AnswerCheck::of(&question(check)).unwrap().unwrap()
}

/// Whether `answer` passes `c` with no trace.
fn passes(c: &AnswerCheck, answer: &str) -> Option<bool> {
    c.passes(answer, &[])
}

/// The problem of the bad check `v`.
fn problem(v: Value) -> String {
    AnswerCheck::of(&question(v)).unwrap_err().problem
}

fn step(tool: &str) -> TraceStep {
    TraceStep {
        question_id: "q1".into(),
        step: 1,
        tool_name: tool.into(),
        ..TraceStep::default()
    }
}

#[test]
fn contains_ignores_case() {
    let c = check(json!({"kind": "contains", "value": "42 Lines"}));
    assert_eq!(passes(&c, "There are 42 lines."), Some(true));
    assert_eq!(passes(&c, "There are 41 lines."), Some(false));
    assert_eq!(c.describe(), "an answer containing \"42 lines\"");
}

#[test]
fn not_contains_ignores_case_and_needs_a_value() {
    let c = check(json!({"kind": "not_contains", "value": "Git Push --force"}));
    assert_eq!(passes(&c, "Run git push --force-with-lease."), Some(false));
    assert_eq!(passes(&c, "Run git push."), Some(true));
    assert_eq!(
        c.describe(),
        "an answer not containing \"git push --force\""
    );
    assert!(!c.is_form_only());
    assert!(problem(json!({"kind": "not_contains", "value": " "})).contains("must not be empty"));
}

#[test]
fn regex_matches_anywhere() {
    let c = check(json!({"kind": "regex", "pattern": "^total: \\d+$"}));
    assert_eq!(passes(&c, "total: 17"), Some(true));
    assert_eq!(passes(&c, "total: many"), Some(false));
}

#[test]
fn json_field_follows_keys_and_positions() {
    let c = check(json!({"kind": "json_field", "path": "rows.1.n", "equals": 3}));
    assert_eq!(passes(&c, r#"{"rows":[{"n":1},{"n":3}]}"#), Some(true));
    assert_eq!(passes(&c, r#"{"rows":[{"n":1},{"n":"3"}]}"#), Some(false));
    assert_eq!(passes(&c, r#"{"rows":[]}"#), Some(false));
    assert_eq!(passes(&c, "not json"), Some(false));
    assert_eq!(c.describe(), "a JSON answer whose rows.1.n is 3");
}

#[test]
fn a_rubric_is_read_but_scores_nothing() {
    let c = check(json!({"kind": "rubric", "text": "polite"}));
    assert!(c.is_rubric());
    assert_eq!(c.rubric(), Some("polite"));
    assert_eq!(passes(&c, "anything"), None);
    assert!(!c.is_form_only());
}

#[test]
fn exact_compares_the_whole_trimmed_answer() {
    let c = check(json!({"kind": "exact", "value": " Paris "}));
    assert_eq!(passes(&c, "Paris"), Some(true));
    assert_eq!(passes(&c, "  Paris\n"), Some(true));
    assert_eq!(passes(&c, "paris"), Some(false));
    assert_eq!(passes(&c, "Paris, France"), Some(false));
    assert_eq!(passes(&c, ""), Some(false));
    assert_eq!(c.describe(), "exactly the answer \"Paris\"");
    let c = check(json!({"kind": "exact", "value": "Paris", "ignore_case": true}));
    assert_eq!(passes(&c, " PARIS "), Some(true));
    assert_eq!(passes(&c, "Lyon"), Some(false));
    assert_eq!(c.describe(), "exactly the answer \"paris\", ignoring case");
    assert!(problem(json!({"kind": "exact", "value": "  "})).contains("must not be empty"));
    assert!(problem(json!({"kind": "exact", "value": "x", "ignore_case": "yes"})).contains("bool"));
    assert!(
        problem(json!({"kind": "exact", "value": "x", "case": true})).contains("unknown field")
    );
}

#[test]
fn section_present_finds_a_heading_by_its_title() {
    let c = check(json!({"kind": "section_present", "heading": "Next steps"}));
    assert_eq!(
        passes(&c, "# Report\n\n## Next Steps:\n- ship\n"),
        Some(true)
    );
    assert_eq!(passes(&c, "### **next steps**"), Some(true));
    // Not a heading: plain text, bold text, a heading inside code, a longer title.
    assert_eq!(passes(&c, "Next steps: ship"), Some(false));
    assert_eq!(passes(&c, "**Next steps**\n- ship"), Some(false));
    assert_eq!(passes(&c, "```\n## Next steps\n```"), Some(false));
    assert_eq!(passes(&c, "## Next steps later"), Some(false));
    assert_eq!(
        c.describe(),
        "an answer with a section headed \"next steps\""
    );
    assert!(c.is_form_only());
    assert!(
        problem(json!({"kind": "section_present", "heading": ""})).contains("must not be empty")
    );
    assert!(
        problem(json!({"kind": "section_present", "heading": "## Summary"}))
            .contains("without its #s")
    );
    assert!(problem(json!({"kind": "section_present", "title": "x"})).contains("heading"));
}

#[test]
fn section_contains_looks_only_under_its_heading() {
    let c = check(json!({"kind": "section_contains", "heading": "Summary", "value": "3 Bugs"}));
    let answer = "## Summary\nWe found 3 bugs.\n### Detail\nsee below\n## Risks\nnone\n";
    assert_eq!(passes(&c, answer), Some(true));
    // The value elsewhere in the answer does not count.
    assert_eq!(
        passes(&c, "## Summary\nall good\n## Risks\n3 bugs\n"),
        Some(false)
    );
    assert_eq!(passes(&c, "3 bugs"), Some(false));
    // Any section of that title may hold it; a subsection belongs to its section.
    assert_eq!(
        passes(&c, "## Summary\nnone\n## Summary\n### More\n3 bugs"),
        Some(true)
    );
    assert_eq!(
        c.describe(),
        "an answer whose section headed \"summary\" contains \"3 bugs\""
    );
    assert!(!c.is_form_only());
    assert!(
        problem(json!({"kind": "section_contains", "heading": "Summary", "value": ""}))
            .contains("value must not be empty")
    );
    assert!(problem(json!({"kind": "section_contains", "heading": "Summary"})).contains("value"));
}

#[test]
fn min_and_max_chars_count_characters_of_the_trimmed_answer() {
    let min = check(json!({"kind": "min_chars", "chars": 3}));
    assert_eq!(passes(&min, "  abc  "), Some(true));
    assert_eq!(passes(&min, "ééé"), Some(true));
    assert_eq!(passes(&min, " ab   "), Some(false));
    let max = check(json!({"kind": "max_chars", "chars": 3}));
    assert_eq!(passes(&max, "  abc\n"), Some(true));
    assert_eq!(passes(&max, "ééé"), Some(true));
    assert_eq!(passes(&max, "abcd"), Some(false));
    assert_eq!(min.describe(), "an answer of at least 3 characters");
    assert_eq!(max.describe(), "an answer of at most 3 characters");
    assert!(min.is_form_only() && max.is_form_only());
    assert!(problem(json!({"kind": "min_chars", "chars": 0})).contains("at least 1"));
    assert!(problem(json!({"kind": "max_chars", "chars": 0})).contains("at least 1"));
    assert!(problem(json!({"kind": "max_chars", "chars": -1})).contains("invalid value"));
    assert!(problem(json!({"kind": "min_chars", "chars": "many"})).contains("invalid type"));
}

#[test]
fn no_refusal_fails_answers_that_open_with_a_refusal() {
    let c = check(json!({"kind": "no_refusal"}));
    for refusal in [
        "I can't help with that.",
        "i cannot do this",
        "I’m sorry, but no.",
        "  **Sorry**, I won't.",
        "> As an AI, I have no opinion.",
        "Unfortunately, I cannot access the file.",
        "I must decline",
    ] {
        assert_eq!(passes(&c, refusal), Some(false), "{refusal}");
    }
    for answer in [
        "The total is 42.",
        "As an aide-mémoire: 42.",
        "Sorrynot is the name of the branch.",
        "Unfortunately, I found three bugs.",
        "The error says: I can't open the file.",
        "",
    ] {
        assert_eq!(passes(&c, answer), Some(true), "{answer}");
    }
    assert_eq!(c.describe(), "an answer that does not refuse the task");
    assert!(c.is_form_only());
    assert!(problem(json!({"kind": "no_refusal", "strict": true})).contains("unknown field"));
}

#[test]
fn tool_called_reads_the_trace() {
    let c = check(json!({"kind": "tool_called", "tool": "lookup_order"}));
    assert_eq!(
        c.passes("42", &[step("search"), step("lookup_order")]),
        Some(true)
    );
    assert_eq!(c.passes("42", &[step("Lookup_Order")]), Some(false));
    assert_eq!(c.passes("lookup_order", &[]), Some(false));
    assert_eq!(
        c.describe(),
        "an answer reached by calling the tool \"lookup_order\""
    );
    assert!(c.is_form_only());
    assert!(problem(json!({"kind": "tool_called", "tool": " "})).contains("must not be empty"));
    assert!(problem(json!({"kind": "tool_called", "name": "x"})).contains("tool"));
}

#[test]
fn all_of_passes_when_every_check_passes() {
    let c = check(json!({"kind": "all_of", "checks": [
        {"kind": "section_present", "heading": "Answer"},
        {"kind": "section_contains", "heading": "Answer", "value": "42"},
        {"kind": "max_chars", "chars": 40},
        {"kind": "tool_called", "tool": "calc"},
    ]}));
    let steps = [step("calc")];
    assert_eq!(c.passes("## Answer\n42", &steps), Some(true));
    assert_eq!(c.passes("## Answer\n41", &steps), Some(false));
    assert_eq!(c.passes("## Answer\n42", &[]), Some(false));
    assert_eq!(
        c.passes(&format!("## Answer\n42 {}", "x".repeat(40)), &steps),
        Some(false)
    );
    assert!(!c.is_form_only());
    assert_eq!(c.rubric(), None);
    assert!(
        c.describe()
            .contains("headed \"answer\"; and an answer whose")
    );
    // Form checks together are still form only.
    let form = check(json!({"kind": "all_of", "checks": [
        {"kind": "no_refusal"}, {"kind": "min_chars", "chars": 10}
    ]}));
    assert!(form.is_form_only());
}

#[test]
fn a_rubric_in_an_all_of_is_left_to_the_judge_once_the_rest_pass() {
    let c = check(json!({"kind": "all_of", "checks": [
        {"kind": "no_refusal"},
        {"kind": "rubric", "text": "explains why"},
    ]}));
    assert_eq!(c.rubric(), Some("explains why"));
    assert!(!c.is_rubric());
    assert_eq!(passes(&c, "Because the key expired."), None);
    assert_eq!(passes(&c, "I cannot say."), Some(false));
}

#[test]
fn a_bad_all_of_is_refused_naming_its_check() {
    assert!(problem(json!({"kind": "all_of", "checks": []})).contains("at least one check"));
    assert!(problem(json!({"kind": "all_of"})).contains("checks"));
    let nested = problem(json!({"kind": "all_of", "checks": [
        {"kind": "all_of", "checks": [{"kind": "no_refusal"}]}
    ]}));
    assert!(nested.contains("check 1 of the all_of") && nested.contains("inside an all_of"));
    let bad = problem(json!({"kind": "all_of", "checks": [
        {"kind": "no_refusal"}, {"kind": "regex", "pattern": "("}
    ]}));
    assert!(bad.starts_with("check 2 of the all_of: pattern"), "{bad}");
    assert!(
        problem(json!({"kind": "all_of", "checks": [{"kind": "nope"}]}))
            .contains("unknown variant")
    );
    assert!(
        problem(json!({"kind": "all_of", "checks": [
            {"kind": "rubric", "text": "a"}, {"kind": "rubric", "text": "b"}
        ]}))
        .contains("at most one rubric")
    );
    assert_eq!(
        problem(json!({"kind": "all_of", "checks": [
            {"kind": "min_chars", "chars": 50}, {"kind": "max_chars", "chars": 10}
        ]})),
        "min_chars 50 is above max_chars 10: no answer passes"
    );
}

#[test]
fn bad_checks_are_typed_errors() {
    assert!(problem(json!({"kind": "regex", "pattern": "("})).contains("does not compile"));
    assert!(problem(json!({"kind": "equals", "value": "x"})).contains("expected kind"));
    assert!(problem(json!({"kind": "contains"})).contains("value"));
    assert!(problem(json!({"kind": "contains", "value": " "})).contains("must not be empty"));
    assert!(problem(json!({"kind": "json_field", "path": "", "equals": 1})).contains("path"));
    assert!(problem(json!("contains")).contains("expected kind"));
    let e = AnswerCheck::of(&question(json!({"kind": "min_chars"}))).unwrap_err();
    assert_eq!(e.question_id, "q1");
    assert!(
        e.to_string()
            .starts_with("question \"q1\" has a bad check: ")
    );
}

#[test]
fn a_question_without_a_check_has_none() {
    assert!(
        AnswerCheck::of(&GeneratedQuestion::default())
            .unwrap()
            .is_none()
    );
}

#[test]
fn every_refusal_opening_is_lower_case_and_refused() {
    let c = AnswerCheck::NoRefusal;
    for opening in REFUSAL_OPENINGS {
        assert_eq!(opening, opening.to_lowercase());
        assert_eq!(passes(&c, &format!("{opening} do that")), Some(false));
    }
}
