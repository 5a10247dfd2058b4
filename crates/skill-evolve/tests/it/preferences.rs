//! A project's house rules (`preferences.md`, `[preferences] file`, `--preferences`): every
//! proposal prompt carries their text, a proposal that breaks one of their checks is dropped
//! before it is gated or offered, with its reason in the summaries and reports, and a bad
//! file is refused before any LLM call.

use std::sync::atomic::Ordering;

use crate::evolve_gated::{SKILL, agent_config, evolve, json_of, workspace};
use crate::fake_llm::{GUIDANCE, QA_RULE, start_evolve_gain, start_loop};
use crate::run::{loop_config, rule_agent, run_to_end, run_workspace_with};
use crate::support::{assert_one_line_error, run_config, snapshot};

/// An old override of the reflect prompt, written before `{{preferences}}` existed.
const OLD_REFLECT: &str = "OLD REFLECT PROMPT\n\n## Current skill\n{{skill_content}}\n\n\
                           ## Failed trajectories ({{n_trajectories}})\n{{trajectories}}\n\n\
                           Reply with {\"suggestions\": [], \"edits\": []}.\n";

const TERSE: &str = "Keep the tone terse: imperative sentences, no filler.";

#[test]
fn every_prompt_of_an_evolve_session_carries_the_house_rules() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 2, "");
    let d = dir.path();
    std::fs::write(
        d.join("rules.md"),
        format!("{TERSE}\n\n```checks\nmax_lines = 200\n```\n"),
    )
    .unwrap();
    std::fs::create_dir(d.join("prompts")).unwrap();
    std::fs::write(d.join("prompts/reflect.md"), OLD_REFLECT).unwrap();
    let out = evolve(
        d,
        &fake.base_url,
        &[
            "--preferences",
            "rules.md",
            "--prompts",
            "prompts",
            "--slow-update",
            "--json",
        ],
    );
    let summary = json_of(&out);
    assert_eq!(summary["preferences"], "rules.md", "{summary}");
    assert!(summary.get("dropped").is_none(), "{summary}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("house rules: rules.md (text in every proposal prompt; 1 check(s)"),
        "{stderr}"
    );
    // The reflection (an old override: the rules are appended), the meta-reflection and
    // the slow update: each request carries the text and the checks in plain words.
    let prompts = fake.prompts();
    assert_eq!(prompts.len(), 3, "{prompts:#?}");
    for prompt in &prompts {
        assert!(
            prompt.contains("## House rules of this project"),
            "{prompt}"
        );
        assert!(prompt.contains(TERSE), "{prompt}");
        assert!(
            prompt.contains("- the document stays within 200 lines"),
            "{prompt}"
        );
    }
    let reflect = &prompts[0];
    assert!(reflect.starts_with("OLD REFLECT PROMPT"), "{reflect}");
    assert!(
        reflect.find("Reply with").unwrap() < reflect.find("## House rules").unwrap(),
        "appended after the old template: {reflect}"
    );
    assert!(prompts[2].contains("long-term guidance"), "{}", prompts[2]);
}

#[test]
fn a_round_that_breaks_the_house_rules_is_dropped_and_never_gated() {
    let agent = rule_agent();
    let fake = start_evolve_gain();
    // The gate's configuration names the rules: evolve reads them as run does.
    let config = agent_config(&agent, "0.85", "\n[preferences]\nfile = \"rules.md\"\n");
    let dir = workspace(SKILL, 14, &config);
    let d = dir.path();
    std::fs::write(d.join("rules.md"), "```checks\nforbidden = [\"qa\"]\n```\n").unwrap();
    let out = evolve(
        d,
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes", "--json"],
    );
    let summary = json_of(&out);
    let reason = "breaks preference 'forbidden \"qa\"': adds 1 (2 before, 3 after)";
    assert_eq!(summary["dropped"][0]["candidate"], "round 1", "{summary}");
    assert_eq!(summary["dropped"][0]["reasons"][0], reason, "{summary}");
    assert_eq!(
        summary["rounds"][0]["breaches"][0]["check"],
        "forbidden \"qa\""
    );
    assert_eq!(summary["changed"], false);
    assert_eq!(summary["written"], false);
    assert!(
        summary["stop_reason"]
            .as_str()
            .unwrap()
            .contains("breaks the project's preferences and was dropped"),
        "{summary}"
    );
    // Never gated: no verdict, no rollout; only the reflection was asked (no
    // meta-reflection of a dropped candidate).
    assert_eq!(
        summary["gate"]["verdicts"],
        serde_json::json!([]),
        "{summary}"
    );
    assert_eq!(
        summary["usage_by_phase"]["gate"]["rollouts"]
            .as_u64()
            .unwrap_or(0),
        0,
        "{summary}"
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("dropped (round 1): {reason}")),
        "{stderr}"
    );
    let page = std::fs::read_to_string(
        d.join(summary["run_dir"].as_str().unwrap())
            .join("report.html"),
    )
    .unwrap();
    assert!(
        page.contains("house rules: breaks preference &#39;forbidden &quot;qa&quot;&#39;"),
        "{page}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap(),
        SKILL,
        "nothing written"
    );
}

#[test]
fn a_slow_update_that_breaks_the_house_rules_is_not_offered() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 2, "");
    let d = dir.path();
    std::fs::write(
        d.join("preferences.md"),
        "```checks\nforbidden = [\"per task type\"]\n```\n",
    )
    .unwrap();
    let out = evolve(
        d,
        &fake.base_url,
        &[
            "--preferences",
            "preferences.md",
            "--slow-update",
            "--yes",
            "--json",
        ],
    );
    let summary = json_of(&out);
    assert_eq!(
        summary["dropped"][0]["candidate"], "slow-update",
        "{summary}"
    );
    assert_eq!(
        summary["dropped"][0]["reasons"][0],
        "breaks preference 'forbidden \"per task type\"': adds 1 occurrence"
    );
    let slow = &summary["slow_update"];
    assert_eq!(slow["updated"], false, "{summary}");
    assert!(
        slow["note"].as_str().unwrap().starts_with("dropped: "),
        "{summary}"
    );
    // The rounds' candidate, which keeps the rules, is what was written.
    let written = std::fs::read_to_string(d.join("skill/SKILL.md")).unwrap();
    assert!(written.contains(QA_RULE), "{written}");
    assert!(!written.contains(GUIDANCE), "{written}");
}

#[test]
fn bad_house_rules_are_refused_before_any_call() {
    let fake = start_evolve_gain();
    let dir = workspace(SKILL, 2, "");
    let d = dir.path();
    std::fs::write(
        d.join("rules.md"),
        "Be brief.\n\n```checks\nmax_lines = 100\nmax_line = 4\n```\n",
    )
    .unwrap();
    let before = snapshot(d);
    let out = evolve(d, &fake.base_url, &["--preferences", "rules.md"]);
    assert_one_line_error(&out, "rules.md:5: ```checks: unknown field `max_line`");
    std::fs::write(d.join("rules.md"), "x".repeat(9000)).unwrap();
    let out = evolve(d, &fake.base_url, &["--preferences", "rules.md"]);
    assert_one_line_error(
        &out,
        "rules.md: 9000 characters, more than a preferences file may hold (8000)",
    );
    let out = evolve(d, &fake.base_url, &["--preferences", "missing.md"]);
    assert_one_line_error(&out, "missing.md: cannot read the preferences file");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    std::fs::write(
        d.join("rules.md"),
        "Be brief.\n\n```checks\nmax_lines = 100\nmax_line = 4\n```\n",
    )
    .unwrap();
    assert_eq!(snapshot(d), before, "a refused session writes nothing");

    // `run` refuses the preferences.md beside its configuration the same way.
    let fake = start_loop();
    let dir = run_workspace_with(&loop_config(&rule_agent(), &fake.base_url), 18);
    let d = dir.path();
    std::fs::write(
        d.join("preferences.md"),
        "```checks\nforbidden = \"qa\"\n```\n",
    )
    .unwrap();
    let before = snapshot(d);
    assert_one_line_error(
        &run_config(d, &[]),
        "preferences.md:2: ```checks: invalid type",
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    assert_eq!(snapshot(d), before, "a refused run writes nothing");
    // A `[preferences] file` that is not there names the key's line.
    let config = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        format!("{config}\n[preferences]\nfile = \"house.md\"\n"),
    )
    .unwrap();
    let line = config.lines().count() + 3;
    assert_one_line_error(
        &run_config(d, &["--dry-run"]),
        &format!("evolve.toml:{line}: [preferences] file house.md: no such file"),
    );
}

#[test]
fn a_run_drops_a_proposal_that_breaks_the_house_rules_before_its_gate() {
    let fake = start_loop();
    let dir = run_workspace_with(&loop_config(&rule_agent(), &fake.base_url), 18);
    let d = dir.path();
    std::fs::write(
        d.join("preferences.md"),
        format!("{TERSE}\n\n```checks\nforbidden = [\"qa\"]\n```\n"),
    )
    .unwrap();
    let dry = run_config(d, &["--dry-run"]);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("house rules: preferences.md (text in every proposal prompt; 1 check(s)"),
        "{text}"
    );

    let finished = run_to_end(d);
    finished.assert_summary("0 candidate(s), 0 accepted");
    finished
        .assert_summary("1 proposal(s) dropped before the gate (see the report for each reason)");
    let reason = "breaks preference 'forbidden \"qa\"' in default-strategy.md: adds 1 occurrence";
    let report = &finished.report;
    assert!(report.contains("## Dropped before the gate"), "{report}");
    assert!(report.contains(reason), "{report}");
    assert!(
        report.contains("No candidate was gated: every proposal was dropped before its gate"),
        "{report}"
    );
    assert!(
        report.contains("before its gate: "),
        "the event line: {report}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["dropped"][0]["reasons"][0], reason, "{json}");
    assert_eq!(json["records"], serde_json::json!([]));
    assert_eq!(
        json["usage_by_phase"]["gate"]["rollouts"]
            .as_u64()
            .unwrap_or(0),
        0,
        "never gated: {json}"
    );
    // The skill's proposal prompt carried the text; the diagnosis judges' did not need to.
    let prompts = fake.prompts();
    let evolve = prompts
        .iter()
        .find(|p| p.contains("You improve a skill document"))
        .unwrap();
    assert!(evolve.contains(TERSE), "{evolve}");
    assert!(
        evolve.contains("none of these words or phrases, in any case: \"qa\""),
        "{evolve}"
    );

    // Changed house rules are changed inputs: the run does not resume under them.
    std::fs::write(d.join("preferences.md"), TERSE).unwrap();
    assert_one_line_error(
        &run_config(d, &[]),
        "run \"demo\" cannot resume: the house rules ([preferences]) changed since it started",
    );
}

#[test]
fn the_readme_example_of_house_rules_is_accepted() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = &readme[readme.find("\n## House rules\n").unwrap()..];
    let start = section.find("````markdown\n").unwrap() + "````markdown\n".len();
    let example = &section[start..start + section[start..].find("\n````").unwrap()];
    assert!(example.contains("```checks"), "{example}");
    let dir = run_workspace_with(&loop_config(&rule_agent(), "http://127.0.0.1:9/v1"), 18);
    let d = dir.path();
    std::fs::write(d.join("house.md"), example).unwrap();
    let out = run_config(d, &["--dry-run", "--preferences", "house.md"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("house rules: house.md (text in every proposal prompt; 7 check(s)"),
        "{text}"
    );
}
