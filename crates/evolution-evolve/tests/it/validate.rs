use evolution_evolve::validate::{validate_skill, validate_system, validate_tool};
use evolution_types::Profile;

const FM: &str = "---\nname: a\ndescription: d\ntask_type: t\n---\n";

fn skill(body: &str) -> String {
    format!("{FM}{body}")
}

#[test]
fn skill_identical_passes() {
    let content = "---\nname: test\ndescription: d\ntask_type: t\n---\nbody";
    assert!(validate_skill(content, content).passed());
}

#[test]
fn skill_changed_frontmatter_fails_with_reason() {
    let orig = "---\nname: a\ndescription: d\ntask_type: t\n---\nbody";
    let evol = "---\nname: b\ndescription: d\ntask_type: t\n---\nbody";
    let report = validate_skill(orig, evol);
    assert_eq!(
        report.errors,
        vec![r#"frontmatter: field `name` changed from "a" to "b""#]
    );
    // Other keys may change; spacing and quoting that keep the values are fine.
    let evol = "---\nname: \"a\"\ndescription:   d\ntask_type: t\nversion: 2\n---\nbody";
    assert!(validate_skill(orig, evol).passed());
    let evol = "---\nname: a\ndescription: d\n---\nbody";
    assert_eq!(
        validate_skill(orig, evol).errors,
        vec!["frontmatter: field `task_type` changed from \"t\" to (absent)"]
    );
}

#[test]
fn skill_broken_or_removed_frontmatter_fails() {
    let orig = skill("body");
    for evol in ["body", "---\nname: [a\n---\nbody", "---\nname: a\nbody"] {
        let report = validate_skill(&orig, evol);
        assert!(
            report
                .errors
                .iter()
                .any(|e| e.contains("missing or not valid YAML")),
            "{evol:?}: {report:?}"
        );
    }
}

#[test]
fn skill_frontmatter_may_not_be_added() {
    let body = "body text ".repeat(10);
    let report = validate_skill(&body, &format!("---\nname: a\n---\n{body}"));
    assert_eq!(report.errors.len(), 1);
    assert!(report.errors[0].contains("adds a `---` block"));
    assert!(validate_skill("body text", "body text!").passed());
}

#[test]
fn crlf_frontmatter_parses() {
    let orig = "---\r\nname: a\r\ndescription: d\r\ntask_type: t\r\n---\r\nbody";
    assert!(validate_skill(orig, orig).passed());
    let evol = orig.replace("name: a", "name: b");
    assert_eq!(validate_skill(orig, &evol).errors.len(), 1);
}

#[test]
fn yaml_alias_bomb_is_rejected_not_expanded() {
    let bomb = "---\nname: a\ndescription: d\ntask_type: t\nx1: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\nx2: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nx3: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nx4: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\nx5: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nx6: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\nx7: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nx8: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\nx9: [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n---\nbody";
    let report = validate_skill(&skill("body"), bomb);
    assert!(!report.passed());
}

#[test]
fn skill_length_ratio() {
    let orig = skill(&"x".repeat(1000));
    let report = validate_skill(&orig, &skill("short"));
    assert_eq!(report.errors.len(), 1);
    assert!(report.errors[0].starts_with("length: the candidate has 49 characters for the original's 1044 (ratio 0.05, allowed 0.3–2.0)"), "{report:?}");
    assert!(!validate_skill(&orig, &skill(&"x".repeat(2200))).passed());
    assert!(validate_skill(&orig, &skill(&"x".repeat(300))).passed());
    assert!(validate_skill(&orig, &skill(&"x".repeat(2000))).passed());
}

#[test]
fn length_excludes_appendix_and_slow_update() {
    let orig = skill(&"x".repeat(100));
    let notes = "n".repeat(500);
    let evol = skill(&format!(
        "{}\n<!-- APPENDIX_START -->\n{notes}\n<!-- APPENDIX_END -->\n<!-- SLOW_UPDATE_START -->\n{notes}\n<!-- SLOW_UPDATE_END -->\n",
        "x".repeat(100)
    ));
    assert!(validate_skill(&orig, &evol).passed());
}

#[test]
fn appendix_strip_is_tolerant_slow_update_strip_is_strict() {
    let orig = skill(&"x".repeat(100));
    // A lone appendix marker is left in place (tolerant): only the length counts.
    let lone_appendix = skill(&format!("{}\n<!-- APPENDIX_START -->\n", "x".repeat(100)));
    assert!(validate_skill(&orig, &lone_appendix).passed());
    // A lone slow-update marker is an error (strict).
    let lone_slow_update = skill(&format!(
        "{}\n<!-- SLOW_UPDATE_START -->\n",
        "x".repeat(100)
    ));
    let report = validate_skill(&orig, &lone_slow_update);
    assert_eq!(report.errors.len(), 1);
    assert!(
        report.errors[0].contains("slow-update region is malformed"),
        "{report:?}"
    );
}

#[test]
fn skill_code_fences_must_close() {
    let orig = skill("body\n```\ncode\n```\n");
    let report = validate_skill(&orig, &skill("body\n```\ncode\n"));
    assert_eq!(report.errors.len(), 1);
    assert!(report.errors[0].starts_with("code fences"));
}

#[test]
fn every_failed_check_is_reported() {
    let orig = skill(&"x".repeat(1000));
    let evol = "---\nname: z\ndescription: d\ntask_type: q\n---\n```\n";
    let report = validate_skill(&orig, evol);
    assert_eq!(report.errors.len(), 4, "{report:?}");
}

#[test]
fn system_identical_passes_and_frozen_sections_are_compared() {
    let profile = Profile::video_qa();
    let content = "intro\n## 能力边界\nfrozen\n## 输出格式\nfrozen2\n## other\nbody";
    assert!(validate_system(content, content, &profile).passed());
    let orig = "intro\n## 能力边界\noriginal\n## other\nbody";
    let evol = "intro\n## 能力边界\nchanged\n## other\nbody";
    assert_eq!(
        validate_system(orig, evol, &profile).errors,
        vec!["frozen section `## 能力边界` was changed"]
    );
    let removed = "intro\n## other\nbody and more body text";
    assert_eq!(
        validate_system(orig, removed, &profile).errors,
        vec!["frozen section `## 能力边界` was removed"]
    );
    // Editing outside frozen sections is fine; so is a deeper heading inside one.
    let orig = "intro\n## 能力边界\nfrozen\n### sub\nx\n## other\nbody";
    let evol = "intro text\n## 能力边界\nfrozen\n### sub\nx\n## other\nbody, edited";
    assert!(validate_system(orig, evol, &profile).passed());
    let evol = "intro\n## 能力边界\nfrozen\n### sub\ny\n## other\nbody";
    assert!(!validate_system(orig, evol, &profile).passed());
    let unclosed = "intro\n## 能力边界\nfrozen\n### sub\nx\n## other\nbody\n```";
    assert_eq!(validate_system(orig, unclosed, &profile).errors.len(), 1);
}

#[test]
fn system_uses_the_profile_sections() {
    let profile = Profile {
        frozen_system_sections: vec!["Rules".to_owned()],
        ..Profile::video_qa()
    };
    let orig = "## Rules\nkeep\n## 能力边界\nx\n";
    let evol = "## Rules\nkeep\n## 能力边界\ny\n";
    assert!(validate_system(orig, evol, &profile).passed());
}

#[test]
fn tool_checks_output_format_and_length_per_file_but_not_fences() {
    let profile = Profile::video_qa();
    let extract = "## 输出格式\nfixed\n## other\nbody";
    let verify = "## 输出格式\nfixed2\n## other\nbody2";
    assert!(validate_tool(extract, extract, verify, verify, &profile).passed());
    let unclosed = "## 输出格式\nfixed\n```\nunclosed";
    assert!(validate_tool(unclosed, unclosed, "v", "v", &profile).passed());
    let changed = "## 输出格式\nchanged\n## other\nbody";
    let long = format!("{verify}{}", "z".repeat(200));
    let report = validate_tool(extract, changed, verify, &long, &profile);
    assert_eq!(report.errors.len(), 2, "{report:?}");
    assert!(report.errors[0].starts_with("extract: frozen section `## 输出格式` was changed"));
    assert!(report.errors[1].starts_with("verify: length"));
}

#[test]
fn the_builtin_reply_formats_examples_are_read_from_the_templates() {
    use evolution_evolve::EvolvePrompts;
    use evolution_evolve::reflect::ReflectPrompts;
    use evolution_evolve::validate::{placeholder_echo, prompt_example_texts};
    use evolution_types::Edit;

    let reflect = prompt_example_texts(&ReflectPrompts::builtin().reflect);
    for text in [
        "the new text (empty for delete)",
        "which failure this prevents, in one sentence",
        "exact text copied from the skill (empty for append)",
    ] {
        assert!(reflect.iter().any(|t| t == text), "{text}: {reflect:?}");
    }
    let skill = prompt_example_texts(&EvolvePrompts::builtin().evolve_skill);
    assert!(skill.iter().any(|t| t == "new rule"), "{skill:?}");

    let echo = Edit::new("append", "", "New rule");
    assert!(placeholder_echo(&echo, &skill).is_some());
    let real = Edit::new("append", "", "A new rule: name the version in the title.");
    assert_eq!(placeholder_echo(&real, &skill), None);
}
