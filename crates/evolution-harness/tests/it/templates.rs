use std::collections::BTreeSet;

use evolution_harness::{
    PlaceholderStyle, PromptTemplates, TEMPLATES, TemplateError, placeholders_in, render_template,
};

#[test]
fn every_default_uses_only_placeholders_its_renderer_fills() {
    for spec in &TEMPLATES {
        let used = placeholders_in(spec.default_text, spec.style);
        let known: BTreeSet<String> = spec.placeholders.iter().map(|p| (*p).to_owned()).collect();
        let unknown: Vec<_> = used.difference(&known).collect();
        assert!(
            unknown.is_empty(),
            "{} uses unknown placeholders {unknown:?}",
            spec.name
        );
        // Evolution and slow-update renderers fill exactly what their template needs.
        if spec.style == PlaceholderStyle::Double || spec.name == "slow_update" {
            assert_eq!(
                used, known,
                "{} leaves documented placeholders unused",
                spec.name
            );
        }
        // The defaults are in English: no CJK ideographs.
        assert!(
            !spec
                .default_text
                .chars()
                .any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c)),
            "{} is not in English",
            spec.name
        );
    }
}

#[test]
fn defaults_fill_both_bundles() {
    let t = PromptTemplates::default();
    let all = [
        &t.diagnose.defect_vs_lapse,
        &t.diagnose.reasoning_sub,
        &t.diagnose.span_eval_system,
        &t.diagnose.span_eval_user,
        &t.diagnose.missed_nodes,
        &t.diagnose.skill_adherence,
        &t.diagnose.confirmation_bias,
        &t.diagnose.evidence_sufficiency,
        &t.evolve.evolve_skill,
        &t.evolve.evolve_system,
        &t.evolve.evolve_tool,
        &t.evolve.evolve_rank,
        &t.evolve.consolidate_system,
        &t.evolve.evolve_rewrite,
        &t.slow_update,
    ];
    for (text, spec) in all.iter().zip(&TEMPLATES) {
        assert_eq!(text.as_str(), spec.default_text, "{}", spec.name);
        assert_eq!(t.get(spec.name), Some(spec.default_text));
    }
    assert_eq!(t.get("nope"), None);
}

fn sample(name: &str) -> String {
    format!("<sample {name}>")
}

#[test]
fn rendered_defaults_snapshot() {
    for spec in &TEMPLATES {
        let values: Vec<String> = spec.placeholders.iter().map(|p| sample(p)).collect();
        let vars: Vec<(&str, &str)> = spec
            .placeholders
            .iter()
            .zip(&values)
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        let rendered = render_template(spec.default_text, spec.style, &vars);
        assert!(
            placeholders_in(&rendered, spec.style).is_empty(),
            "{} left a placeholder",
            spec.name
        );
        insta::assert_snapshot!(spec.name, rendered);
    }
}

#[test]
fn rendering_is_one_pass_and_keeps_json_and_unknown_names() {
    let single = render_template(
        r#"{a} and {b} and {unknown} and {"k": 1} and {{a}}"#,
        PlaceholderStyle::Single,
        &[("a", "{b}"), ("b", "B")],
    );
    assert_eq!(single, r#"{b} and B and {unknown} and {"k": 1} and {{b}}"#);
    let double = render_template(
        r#"{{a}} {a} {{ a }} {"edits": []} {{x}}"#,
        PlaceholderStyle::Double,
        &[("a", "ä{{x}}")],
    );
    assert_eq!(double, r#"ä{{x}} {a} {{ a }} {"edits": []} {{x}}"#);
    assert_eq!(render_template("{", PlaceholderStyle::Single, &[]), "{");
    assert_eq!(
        render_template("tail {a", PlaceholderStyle::Single, &[("a", "x")]),
        "tail {a"
    );
}

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn a_directory_overrides_single_templates() {
    let dir = dir_with(&[
        (
            "evolve_rank.md",
            "Rank {{n_edits}} edits of {{document}}: {{edits}}, keep {{max_edits}}.",
        ),
        ("slow_update.md", "Regressions first: {regressions}"),
        ("README.txt", "ignored"),
    ]);
    let (t, overridden) = PromptTemplates::with_overrides(dir.path()).unwrap();
    assert_eq!(overridden, ["evolve_rank", "slow_update"]);
    assert!(t.evolve.evolve_rank.starts_with("Rank {{n_edits}}"));
    assert_eq!(t.slow_update, "Regressions first: {regressions}");
    assert_eq!(
        t.evolve.evolve_skill,
        PromptTemplates::default().evolve.evolve_skill
    );
}

#[test]
fn bad_overrides_are_errors() {
    let unknown = dir_with(&[("evolve_skil.md", "typo")]);
    let err = PromptTemplates::with_overrides(unknown.path()).unwrap_err();
    assert!(
        matches!(err, TemplateError::UnknownTemplate { ref file, .. } if file == "evolve_skil.md"),
        "{err}"
    );
    let empty = dir_with(&[("evolve_rank.md", "  \n")]);
    assert!(matches!(
        PromptTemplates::with_overrides(empty.path()),
        Err(TemplateError::Empty(_))
    ));
    let typo = dir_with(&[("defect_vs_lapse.md", "Classify {qestion}.")]);
    let err = PromptTemplates::with_overrides(typo.path()).unwrap_err();
    assert!(
        matches!(err, TemplateError::UnknownPlaceholder { ref placeholder, .. } if placeholder == "qestion"),
        "{err}"
    );
    assert!(matches!(
        PromptTemplates::with_overrides(&unknown.path().join("missing")),
        Err(TemplateError::Io { .. })
    ));
}
