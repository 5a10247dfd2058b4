//! The house rules: parsing a preferences file, its prompt section, and the checks.

use evolution_evolve::preferences::{
    MAX_PREFERENCES_CHARS, Preferences, PreferencesError, render_with_preferences,
};

const FILE: &str = "Keep the tone terse.\n\n```checks\nmax_lines = 5\nmax_growth_chars = 40\n\
                    forbidden = [\"always\", \"Simply\"]\nmax_examples_added = 1\n\
                    max_code_blocks_added = 0\nrequired_headings = [\"## Steps\"]\n```\n\n\
                    Never add more than one example.\n";

fn parse(text: &str) -> Preferences {
    Preferences::parse(text).unwrap()
}

fn line_of_error(text: &str) -> (Option<usize>, String) {
    let e = Preferences::parse(text).unwrap_err();
    (e.line(), e.to_string())
}

#[test]
fn the_checks_block_is_read_and_left_out_of_the_text() {
    let p = parse(FILE);
    assert_eq!(
        p.text,
        "Keep the tone terse.\n\n\nNever add more than one example."
    );
    assert_eq!(p.checks.max_lines, Some(5));
    assert_eq!(p.checks.max_growth_chars, Some(40));
    assert_eq!(p.checks.forbidden, ["always", "Simply"]);
    assert_eq!(p.checks.required_headings, ["## Steps"]);
    assert_eq!(p.checks.len(), 7);
    assert!(parse("").is_empty());
    assert!(parse("just text").checks.is_empty());
}

#[test]
fn other_fences_stay_text_even_when_they_hold_a_checks_fence() {
    let text = "````markdown\n```checks\nmax_lines = 1\n```\n````\n";
    let p = parse(text);
    assert!(p.checks.is_empty());
    assert_eq!(p.text, text.trim());
    // `~~~ checks toml` opens the block too: the first word of the info string counts.
    assert_eq!(
        parse("~~~ checks toml\nmax_chars = 9\n~~~\n")
            .checks
            .max_chars,
        Some(9)
    );
}

#[test]
fn bad_checks_name_their_line() {
    let (line, msg) = line_of_error("a\n\n```checks\nmax_lines = 3\nmax_line = 4\n```\n");
    assert_eq!(line, Some(5), "{msg}");
    assert!(msg.contains("unknown field `max_line`"), "{msg}");
    let (line, msg) = line_of_error("```checks\n\nmax_lines = \"many\"\n```\n");
    assert_eq!(line, Some(3), "{msg}");
    let (line, msg) = line_of_error("```checks\nmax_lines = -1\n```\n");
    assert_eq!(line, Some(2), "{msg}");
    let (line, msg) = line_of_error("x\n```checks\nmax_lines = 0\n```\n");
    assert_eq!(line, Some(3));
    assert!(msg.contains("max_lines must be at least 1"), "{msg}");
    let (line, msg) = line_of_error("```checks\nforbidden = [\"ok\", \" \"]\n```\n");
    assert_eq!(line, Some(2));
    assert!(msg.contains("forbidden holds an empty entry"), "{msg}");
    let (line, msg) = line_of_error("x\n\n```checks\nmax_lines = 3\n");
    assert_eq!(line, Some(3));
    assert!(msg.contains("never closed"), "{msg}");
    let (line, msg) = line_of_error("```checks\n```\ntext\n```checks\n```\n");
    assert_eq!(line, Some(4));
    assert!(msg.contains("the first opens at line 1"), "{msg}");
    let (line, msg) = line_of_error("```checks\nmax_lines = = 3\n```\n");
    assert_eq!(line, Some(2), "{msg}");
}

#[test]
fn a_file_past_the_cap_is_refused() {
    let long = "é".repeat(MAX_PREFERENCES_CHARS + 1);
    let e = Preferences::parse(&long).unwrap_err();
    assert_eq!(
        e,
        PreferencesError::TooLong {
            chars: MAX_PREFERENCES_CHARS + 1,
            max: MAX_PREFERENCES_CHARS
        }
    );
    assert_eq!(e.line(), None);
    assert!(Preferences::parse(&"é".repeat(MAX_PREFERENCES_CHARS)).is_ok());
}

#[test]
fn the_section_stands_in_for_a_blank_line() {
    assert_eq!(Preferences::default().prompt_section(), "");
    let section = parse(FILE).prompt_section();
    assert!(
        section.starts_with("\n## House rules of this project\n\n"),
        "{section}"
    );
    assert!(section.ends_with('\n'));
    assert!(section.contains("Keep the tone terse."));
    assert!(
        section.contains("- the document stays within 5 lines\n"),
        "{section}"
    );
    assert!(section.contains("\"always\", \"Simply\""), "{section}");
    assert!(
        section.contains("- these headings stay: \"## Steps\""),
        "{section}"
    );
    let only_text = parse("Be brief.").prompt_section();
    assert!(!only_text.contains("Limits"), "{only_text}");
}

#[test]
fn the_section_fills_the_placeholder_or_is_appended() {
    let section = parse("Be brief.").prompt_section();
    let with = "A {{x}}\n{{ preferences }}\n## Reply\n";
    assert_eq!(
        render_with_preferences(with, &[("x", "1")], ""),
        "A 1\n\n## Reply\n",
        "no preferences: the blank line the placeholder stands for"
    );
    let rendered = render_with_preferences(with, &[("x", "1")], &section);
    assert!(rendered.starts_with("A 1\n\n## House rules"), "{rendered}");
    assert!(rendered.ends_with("Be brief.\n\n## Reply\n"), "{rendered}");
    // A template without the placeholder gets the section at its end.
    let old = render_with_preferences("Old {{x}}", &[("x", "{{preferences}}")], &section);
    assert!(
        old.starts_with("Old {{preferences}}\n\n## House rules"),
        "values are not rescanned: {old}"
    );
    assert_eq!(render_with_preferences("Old", &[], ""), "Old");
}

const DOC: &str = "# Notes\n\n## Steps\n1. Group.\n2. Lead.\n";

fn breaches(file: &str, after: &str) -> Vec<String> {
    parse(file)
        .breaches("notes.md", DOC, after)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_longer_document_breaks_the_length_checks() {
    let after = format!("{DOC}3. More.\n4. Even more.\n");
    assert_eq!(
        breaches("```checks\nmax_lines = 6\n```", &after),
        ["breaks preference 'max_lines = 6' in notes.md: 7 lines"]
    );
    assert_eq!(
        breaches("```checks\nmax_chars = 40\n```", &after),
        ["breaks preference 'max_chars = 40' in notes.md: 60 characters"]
    );
    // Already past the limit: only a longer document breaks it.
    assert_eq!(
        breaches("```checks\nmax_lines = 2\n```", &after),
        ["breaks preference 'max_lines = 2' in notes.md: 7 lines, up from 5"]
    );
    assert!(breaches("```checks\nmax_lines = 2\n```", "# Notes\n## Steps\n1. x\n").is_empty());
    assert_eq!(
        breaches(
            "```checks\nmax_growth_lines = 1\nmax_growth_chars = 100\n```",
            &after
        ),
        ["breaks preference 'max_growth_lines = 1' in notes.md: +2 lines (5 → 7)"]
    );
}

#[test]
fn forbidden_phrases_count_only_when_added() {
    let file = "```checks\nforbidden = [\"always\", \"must never\"]\n```";
    assert_eq!(
        breaches(file, &format!("{DOC}3. ALWAYS check. Never must.\n")),
        ["breaks preference 'forbidden \"always\"' in notes.md: adds 1 occurrence"]
    );
    let before_has = "# Notes\n\n## Steps\nalways\n";
    let p = parse(file);
    assert!(p.breaches("d", before_has, before_has).is_empty());
    let more = p.breaches(
        "d",
        before_has,
        &format!("{before_has}always again, always\n"),
    );
    assert_eq!(more[0].found, "adds 2 (1 before, 3 after)");
    assert!(p.breaches("d", DOC, &format!("{DOC}alwaysx\n")).is_empty());
}

#[test]
fn examples_code_blocks_and_headings_are_counted() {
    let file = "```checks\nmax_examples_added = 1\nmax_code_blocks_added = 0\n\
                required_headings = [\"steps\", \"Output\"]\n```";
    assert!(breaches(file, &format!("{DOC}Example: one\n")).is_empty());
    assert_eq!(
        breaches(
            file,
            &format!("{DOC}Example: one\n- **Example** two\n```text\nx\n```\n")
        ),
        [
            "breaks preference 'max_examples_added = 1' in notes.md: adds 2 examples",
            "breaks preference 'max_code_blocks_added = 0' in notes.md: adds 1 code block",
        ]
    );
    // A heading the document never had is not required of it; one it had must stay.
    assert_eq!(
        breaches(file, "# Notes\n\nSteps\n1. Group.\n"),
        ["breaks preference 'required_headings \"steps\"' in notes.md: removes the heading"]
    );
    assert!(breaches(file, "# Notes\n### STEPS\n").is_empty());
}

#[test]
fn a_breach_without_a_document_reads_as_in_the_issue() {
    let b = parse("```checks\nmax_lines = 120\n```")
        .checks
        .evaluate("", &"x\n".repeat(134));
    assert_eq!(
        b[0].to_string(),
        "breaks preference 'max_lines = 120': 134 lines"
    );
}

#[test]
fn every_builtin_template_holds_the_placeholder_on_a_line_of_its_own() {
    use evolution_evolve::EvolvePrompts;
    use evolution_evolve::reflect::ReflectPrompts;
    use evolution_types::template::render;
    for spec in EvolvePrompts::TEMPLATES
        .iter()
        .chain(ReflectPrompts::TEMPLATES.iter())
    {
        assert!(
            spec.builtin.lines().any(|l| l == "{{preferences}}"),
            "{}",
            spec.name
        );
        // Without preferences the prompt is the template with a blank line in its place.
        assert_eq!(
            render_with_preferences(spec.builtin, &[], ""),
            render(spec.builtin, &[("preferences", "")]),
            "{}",
            spec.name
        );
    }
}

#[tokio::test]
async fn the_ranking_prompt_carries_the_house_rules() {
    use evolution_evolve::EvolvePrompts;
    use evolution_evolve::rank::rank_and_clip;
    use evolution_testkit::ScriptedLlm;
    use evolution_types::Edit;
    let llm = ScriptedLlm::with_replies([r#"{"ranking": [1]}"#]);
    let prompts = EvolvePrompts::builtin().with_preferences(&parse(FILE));
    let edits = vec![Edit::append("a"), Edit::append("b")];
    let clip = rank_and_clip(&llm, &prompts, DOC, edits, 1).await.unwrap();
    assert_eq!(clip.edits.len(), 1);
    let prompt = llm.requests()[0].full_text();
    assert!(
        prompt.contains("## House rules of this project"),
        "{prompt}"
    );
    assert!(prompt.contains("Keep the tone terse."), "{prompt}");
    assert!(
        prompt.contains("- the document stays within 5 lines"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_round_that_breaks_a_check_is_dropped_before_the_meta_reflection() {
    use evolution_evolve::reflect::{
        Failure, ReflectOptions, ReflectPrompts, StopReason, reflect_loop,
    };
    use evolution_evolve::{EditBudgetSchedule, EvolvePrompts};
    use evolution_testkit::ScriptedLlm;
    let preferences = parse("Be brief.\n```checks\nmax_growth_lines = 1\n```\n");
    let reply = serde_json::json!({"suggestions": [], "edits": [
        {"op": "append", "target": "", "content": "3. One.\n4. Two."}]})
    .to_string();
    let llm = ScriptedLlm::with_replies([reply]);
    let options = ReflectOptions {
        rounds: 3,
        batch_size: 4,
        schedule: EditBudgetSchedule::Constant { max_edits: 8 },
        rank_prompts: EvolvePrompts::builtin().with_preferences(&preferences),
        checks: preferences.checks.clone(),
    };
    let failures = [Failure {
        id: "t1".to_owned(),
        fail_reason: "too vague".to_owned(),
        ..Failure::default()
    }];
    let out = reflect_loop(
        &llm,
        &ReflectPrompts::builtin().with_preferences(&preferences),
        DOC,
        &failures,
        &options,
        &|_: &str| {},
    )
    .await
    .unwrap();
    assert_eq!(out.stop, StopReason::BreaksPreferences { round: 1 });
    assert_eq!(out.document, DOC, "the dropped candidate is not kept");
    assert_eq!(
        llm.call_count(),
        1,
        "no meta-reflection of a dropped candidate"
    );
    let round = &out.rounds[0];
    assert!(!round.accepted);
    assert_eq!(
        round.breaches[0].to_string(),
        "breaks preference 'max_growth_lines = 1': +3 lines (5 → 8)"
    );
    assert!(llm.requests()[0].full_text().contains("Be brief."));
    assert_eq!(
        out.stop.to_string(),
        "round 1: the candidate breaks the project's preferences and was dropped"
    );
}
