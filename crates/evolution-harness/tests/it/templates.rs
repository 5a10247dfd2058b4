use std::collections::BTreeSet;

use evolution_diagnose::DiagnosePrompts;
use evolution_evolve::EvolvePrompts;
use evolution_evolve::reflect::ReflectPrompts;
use evolution_harness::{PromptTemplates, TemplateError, all_templates, reads_legacy_syntax};
use evolution_types::template::{legacy_placeholders, placeholders, render};

#[test]
fn every_default_uses_only_placeholders_its_renderer_fills() {
    for spec in all_templates() {
        let used = placeholders(spec.builtin);
        let blanks: Vec<(&str, &str)> = spec.placeholders.iter().map(|p| (*p, "")).collect();
        assert!(
            legacy_placeholders(&render(spec.builtin, &blanks)).is_empty(),
            "{} still uses the older {{name}} syntax",
            spec.name
        );
        let known: BTreeSet<String> = spec.placeholders.iter().map(|p| (*p).to_owned()).collect();
        let unknown: Vec<_> = used.difference(&known).collect();
        assert!(
            unknown.is_empty(),
            "{} uses unknown placeholders {unknown:?}",
            spec.name
        );
        // Evolution and slow-update renderers fill exactly what their template needs.
        if !reads_legacy_syntax(spec.name) || spec.name == "slow_update" {
            assert_eq!(
                used, known,
                "{} leaves documented placeholders unused",
                spec.name
            );
        }
        // The defaults are in English: no CJK ideographs.
        assert!(
            !spec
                .builtin
                .chars()
                .any(|c| ('\u{4E00}'..='\u{9FFF}').contains(&c)),
            "{} is not in English",
            spec.name
        );
    }
}

#[test]
fn defaults_fill_every_bundle() {
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
        &t.diagnose.rubric,
        &t.evolve.evolve_skill,
        &t.evolve.evolve_system,
        &t.evolve.evolve_tool,
        &t.evolve.evolve_rank,
        &t.evolve.consolidate_system,
        &t.evolve.evolve_rewrite,
        &t.reflect.reflect,
        &t.reflect.meta_reflect,
        &t.slow_update,
    ];
    assert_eq!(all.len(), all_templates().count());
    for (text, spec) in all.iter().zip(all_templates()) {
        assert_eq!(text.as_str(), spec.builtin, "{}", spec.name);
        assert_eq!(t.get(spec.name), Some(spec.builtin));
    }
    assert_eq!(t.get("nope"), None);
    assert_eq!(t.diagnose, DiagnosePrompts::default());
    assert_eq!(t.evolve, EvolvePrompts::default());
    assert_eq!(t.reflect, ReflectPrompts::default());
}

fn sample(name: &str) -> String {
    format!("<sample {name}>")
}

#[test]
fn rendered_defaults_snapshot() {
    for spec in all_templates() {
        let values: Vec<String> = spec.placeholders.iter().map(|p| sample(p)).collect();
        let vars: Vec<(&str, &str)> = spec
            .placeholders
            .iter()
            .zip(&values)
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        let rendered = render(spec.builtin, &vars);
        assert!(
            placeholders(&rendered).is_empty(),
            "{} left a placeholder",
            spec.name
        );
        insta::assert_snapshot!(spec.name, rendered);
    }
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
        ("slow_update.md", "Regressions first: {{ regressions }}"),
        ("README.txt", "ignored"),
    ]);
    let (t, overridden) = PromptTemplates::with_overrides(dir.path()).unwrap();
    assert_eq!(overridden, ["evolve_rank", "slow_update"]);
    assert!(t.evolve.evolve_rank.starts_with("Rank {{n_edits}}"));
    assert_eq!(t.slow_update, "Regressions first: {{ regressions }}");
    assert_eq!(
        t.evolve.evolve_skill,
        PromptTemplates::default().evolve.evolve_skill
    );
}

#[test]
fn a_directory_overrides_the_reflect_templates() {
    let dir = dir_with(&[
        (
            "reflect.md",
            "Fix {{skill_content}} for these {{n_trajectories}}: {{trajectories}}",
        ),
        (
            "meta_reflect.md",
            "Which of {{failure_modes}} does {{skill_content}} fix?",
        ),
    ]);
    let (t, overridden) = PromptTemplates::with_overrides(dir.path()).unwrap();
    assert_eq!(overridden, ["meta_reflect", "reflect"]);
    assert_eq!(
        t.get("reflect"),
        Some("Fix {{skill_content}} for these {{n_trajectories}}: {{trajectories}}")
    );
    assert_eq!(
        t.reflect.meta_reflect,
        "Which of {{failure_modes}} does {{skill_content}} fix?"
    );
    // The reflect templates always used `{{name}}`: a wrong name is an
    // error, and single braces are not read as placeholders.
    let typo = dir_with(&[("reflect.md", "Fix {{skill}} for {{trajectories}}")]);
    let err = PromptTemplates::with_overrides(typo.path()).unwrap_err();
    assert!(
        matches!(&err, TemplateError::UnknownPlaceholder { template, placeholder, .. }
            if template == "reflect" && placeholder == "skill"),
        "{err}"
    );
    assert!(!reads_legacy_syntax("meta_reflect"));
    let single = dir_with(&[("meta_reflect.md", "Judge {failure_modes}")]);
    let (t, _) = PromptTemplates::with_overrides(single.path()).unwrap();
    assert_eq!(t.reflect.meta_reflect, "Judge {failure_modes}");
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
    let typo = dir_with(&[("defect_vs_lapse.md", "Classify {{qestion}}.")]);
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

#[test]
fn overrides_in_the_older_single_brace_syntax_still_work() {
    let dir = dir_with(&[
        (
            "confirmation_bias.md",
            "Q: {question} A: {prediction}. Reply {\"confirmation_bias\": false}",
        ),
        ("slow_update.md", "Regressions first: {regressions}"),
    ]);
    let (t, _) = PromptTemplates::with_overrides(dir.path()).unwrap();
    assert_eq!(
        t.diagnose.confirmation_bias,
        "Q: {{question}} A: {{prediction}}. Reply {\"confirmation_bias\": false}"
    );
    assert_eq!(t.slow_update, "Regressions first: {{regressions}}");
    // An unknown name is still an error in the older syntax.
    let typo = dir_with(&[("defect_vs_lapse.md", "Classify {qestion}.")]);
    let err = PromptTemplates::with_overrides(typo.path()).unwrap_err();
    assert!(
        matches!(err, TemplateError::UnknownPlaceholder { ref placeholder, .. } if placeholder == "qestion"),
        "{err}"
    );
    // Templates that always used `{{name}}` are not converted.
    let evolve = dir_with(&[("evolve_rank.md", "Rank {document} {{edits}}")]);
    let (t, _) = PromptTemplates::with_overrides(evolve.path()).unwrap();
    assert_eq!(t.evolve.evolve_rank, "Rank {document} {{edits}}");
}

#[cfg(unix)]
#[test]
fn an_override_that_is_not_a_regular_file_is_refused_without_reading_it() {
    let dir = dir_with(&[]);
    let fifo = dir.path().join("evolve_rank.md");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // Reading the pipe would block for ever; the check comes first.
    let err = PromptTemplates::with_overrides(dir.path()).unwrap_err();
    assert!(
        matches!(&err, TemplateError::Io { source, .. } if source.to_string() == "not a regular file"),
        "{err}"
    );
}
