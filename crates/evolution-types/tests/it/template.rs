use evolution_types::template::{
    TemplateError, check, legacy_placeholders, placeholders, render, render_with, truncate_chars,
    upgrade_legacy,
};

#[test]
fn render_is_one_pass_and_keeps_json_and_unknown_names() {
    let out = render(
        "a {{x}} b {{ y }} c {{unknown}} d {{x",
        &[("x", "{{y}}"), ("y", "Y")],
    );
    assert_eq!(out, "a {{y}} b Y c {{unknown}} d {{x");
    assert_eq!(
        render(r#"{a} {"edits": []} {{a}}"#, &[("a", "ä")]),
        r#"{a} {"edits": []} ä"#
    );
    assert_eq!(render("中{{skill}}文", &[("skill", "S")]), "中S文");
    assert_eq!(render("", &[("a", "x")]), "");
}

#[test]
fn render_handles_brace_runs() {
    assert_eq!(render("{{{{x}}}}", &[("x", "1")]), "{{1}}");
    assert_eq!(render("{{{x}}}", &[("x", "1")]), "{1}");
    assert_eq!(render("{{}}", &[]), "{{}}");
    assert_eq!(render("{{ }}", &[]), "{{ }}");
    assert_eq!(render("}}{{", &[]), "}}{{");
    assert_eq!(render("{", &[]), "{");
    assert_eq!(render("tail {{a", &[("a", "x")]), "tail {{a");
    assert_eq!(render("{{1a}} {{a b}}", &[("a", "x")]), "{{1a}} {{a b}}");
}

#[test]
fn render_with_asks_only_for_used_names() {
    let mut asked = Vec::new();
    let out = render_with("{{b}} and {{ a }} and {{b}}", |name| {
        asked.push(name.to_owned());
        (name == "a").then(|| "A".to_owned())
    });
    assert_eq!(out, "{{b}} and A and {{b}}");
    assert_eq!(asked, ["b", "a", "b"]);
}

#[test]
fn placeholders_are_the_names_used() {
    let names = placeholders(r#"{{ b }} {{a}} {{a}} {"k": {{c}}} {d} {{ }}"#);
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
}

#[test]
fn check_names_the_unknown_placeholder() {
    assert_eq!(check("{{a}} {{b}}", &["a", "b", "c"]), Ok(()));
    let err = check("{{a}} {{qestion}}", &["a", "question"]).unwrap_err();
    assert_eq!(
        err,
        TemplateError::UnknownPlaceholder {
            placeholder: "qestion".to_owned(),
            known: "a, question".to_owned(),
        }
    );
    assert!(err.to_string().contains("{{qestion}}"), "{err}");
}

#[test]
fn legacy_templates_are_read_and_upgraded() {
    let old = r#"Q: {question} / {skill} {"a": 1} {{question}}"#;
    assert_eq!(
        legacy_placeholders(old).into_iter().collect::<Vec<_>>(),
        ["question", "skill"]
    );
    let new = upgrade_legacy(old, &["question", "skill"]).unwrap();
    assert_eq!(
        new,
        r#"Q: {{question}} / {{skill}} {"a": 1} {{{question}}}"#
    );
    assert_eq!(
        render(&new, &[("question", "why?"), ("skill", "S")]),
        r#"Q: why? / S {"a": 1} {why?}"#
    );
    assert!(matches!(
        upgrade_legacy("Classify {qestion}.", &["question"]),
        Err(TemplateError::UnknownPlaceholder { placeholder, .. }) if placeholder == "qestion"
    ));
}

#[test]
fn truncation_counts_characters() {
    assert_eq!(truncate_chars("日本語テキスト", 3), "日本語…[4 more chars]");
    assert_eq!(truncate_chars("abc", 3), "abc");
    assert_eq!(truncate_chars("abcd", 0), "…[4 more chars]");
    assert_eq!(truncate_chars("", 0), "");
}
