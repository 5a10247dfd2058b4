//! The user documentation's examples, run through the binary so that they stay true:
//! docs/trajectories.md's minimal trajectory and SESSION-STATE.md, and docs/skill-layouts.md's
//! task type → skill lines of `run --dry-run`.

use std::path::{Path, PathBuf};

use crate::support::skill_evolve;

/// A page of the repository's `docs/` folder.
fn page(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The first fenced block of `language` after the heading that starts with `heading`.
fn block(page: &str, heading: &str, language: &str) -> String {
    let at = page
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    let rest = &page[at..];
    let open = format!("```{language}\n");
    let start = rest
        .find(&open)
        .unwrap_or_else(|| panic!("no {language} block after {heading:?}"))
        + open.len();
    let end = rest[start..].find("```").unwrap();
    rest[start..start + end].to_owned()
}

fn harvest(dir: &Path, args: &[&str]) -> String {
    let out = skill_evolve(dir)
        .arg("harvest")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "harvest {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_minimal_trajectory_of_the_page_is_read_as_a_failure() {
    let text = page("trajectories.md");
    let example = block(&text, "## A minimal trajectory file", "json");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("failures")).unwrap();
    std::fs::write(d.join("failures/refund-042.json"), &example).unwrap();
    // The command the page gives for checking a folder without an LLM.
    assert!(text.contains("$ skill-evolve harvest --source dir --from failures\n"));
    let printed = harvest(d, &["--source", "dir", "--from", "failures"]);
    assert!(printed.starts_with("failed  refund-042  "), "{printed}");
    assert!(printed.contains("\nfailed: 1\npassed: 0\n"), "{printed}");
    // Every field the page calls required is in the example, and each is needed: without
    // one, the trajectory is skipped with a line naming it.
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&example).unwrap();
    for field in [
        "id",
        "task_description",
        "question",
        "fail_reason",
        "predicted_answer",
        "reference_text",
    ] {
        assert!(
            text.contains(&format!("| `{field}` |")),
            "{field} is not in the fields table"
        );
        let mut without = object.clone();
        without.remove(field);
        std::fs::write(
            d.join("failures/refund-042.json"),
            serde_json::to_string(&without).unwrap(),
        )
        .unwrap();
        let out = skill_evolve(d)
            .args(["harvest", "--source", "dir", "--from", "failures"])
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            printed.contains("\nsessions: 0\n") && err.contains(&format!("\"{field}\"")),
            "without {field}: {out:?}"
        );
    }
}

#[test]
fn the_session_state_example_of_the_page_is_judged_by_its_outcome_field() {
    let text = page("trajectories.md");
    let example = block(&text, "## SESSION-STATE.md", "markdown");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("SESSION-STATE.md"), &example).unwrap();
    let printed = harvest(
        d,
        &["--source", "session-state", "--from", "SESSION-STATE.md"],
    );
    assert!(
        printed.starts_with("failed  session-state-deploy-7  the session states outcome: failed"),
        "{printed}"
    );
}

#[test]
fn the_dry_run_of_the_layouts_page_maps_task_types_as_it_shows() {
    let text = page("skill-layouts.md");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The Agent Skills folder the page draws, with the [skills] table it shows.
    for (folder, name) in [("billing", "billing"), ("support-desk", "support")] {
        std::fs::create_dir_all(d.join("skills").join(folder)).unwrap();
        std::fs::write(
            d.join("skills").join(folder).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: how to help\n---\n# {name}\n"),
        )
        .unwrap();
    }
    std::fs::write(d.join("skills/billing/refund.py"), "print('a resource')\n").unwrap();
    // 48 questions, 24 gate, as the page says: the default gate's reach
    // check needs 11 gate questions of each skill's task types over this horizon.
    let questions: String = ["Refund Request", "Other", "Billing", "Other"]
        .iter()
        .cycle()
        .take(48)
        .enumerate()
        .map(|(i, task)| {
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"{task}\", \"question\": \"?\", \"answer\": \"!\"}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let mapping = block(&text, "## Which skill serves a question", "toml");
    std::fs::write(
        d.join("evolve.toml"),
        format!(
            "[run]\nname = \"demo\"\nskills = \"skills\"\n\n[agent]\ncommand = [\"./agent.py\"]\n\n\
             [questions]\nfile = \"questions.jsonl\"\ntrain = 0.5\ngate = 0.5\n\n{mapping}\n\
             [llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"
        ),
    )
    .unwrap();
    std::fs::write(d.join("agent.py"), "").unwrap();
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let shown = block(&text, "## Checking it first", "text");
    let mapped: Vec<&str> = printed
        .lines()
        .filter(|l| l.trim_start().starts_with("task type"))
        .collect();
    assert_eq!(mapped.len(), 3, "{printed}");
    for line in mapped {
        assert!(
            shown.contains(&format!("{line}\n")),
            "the page lacks {line:?}:\n{shown}"
        );
    }
    // Each skill's reach, from its own gate questions, as the page shows it.
    let reach: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("gate reach") || l.starts_with("  the fewest"))
        .collect();
    assert_eq!(reach.len(), 4, "{printed}");
    for line in reach {
        assert!(
            shown.contains(&format!("{line}\n")),
            "the page lacks {line:?}:\n{shown}"
        );
    }
    assert!(printed.ends_with("dry run: the configuration is valid; nothing was run or written\n"));
}

#[test]
fn the_checks_of_the_configuration_page_are_the_ones_the_program_reads() {
    let text = page("run-config.md");
    // The page's example question is read, and its check combines form and content.
    let example = block(&text, "### Checks", "json");
    let questions = evolution_harness::parse_question_set(&example).unwrap();
    let check = evolution_harness::AnswerCheck::of(&questions[0])
        .unwrap()
        .unwrap();
    assert!(!check.is_form_only());
    let answer = "# v2.3\n## Breaking changes\n- The config format is TOML now.\n";
    assert_eq!(check.passes(answer, &[]), Some(true));
    assert_eq!(check.passes("I'm sorry, I cannot.", &[]), Some(false));
    // Every refusal opening the program knows is listed on the page.
    let lower = text.to_lowercase();
    for opening in evolution_harness::REFUSAL_OPENINGS {
        assert!(lower.contains(&format!("`{opening}`")), "{opening} missing");
    }
}
