//! Skill layouts, staging and adoption through the binary: an Agent Skills
//! folder runs with the reference agent, the result is staged (the user's
//! files untouched), `status` lists it and `adopt` writes it through the
//! file's version store; every refusal writes nothing.

use crate::profile::{EXTRACT_PROMPT, ORDERS_AGENT};
use crate::run::{
    CONFIG, live_config, loop_config, one_epoch, rule_agent, run_to_end, run_workspace,
    run_workspace_with,
};
use crate::support::{assert_one_line_error, history_json, run_config, skill_evolve, snapshot};

/// The support skill, in the Agent Skills layout, named by its frontmatter.
pub(crate) const SUPPORT: &str =
    "---\nname: support-bot\ndescription: Answers support questions.\n---\nRULE other => no\n";

/// A workspace whose skills are `skills/support/SKILL.md` (named
/// `support-bot`) and `skills/billing/SKILL.md`, with `qa` mapped to the
/// support skill.
pub(crate) fn agent_skills_workspace(base_url: &str) -> tempfile::TempDir {
    let config = loop_config(&rule_agent(), base_url)
        .replace("[llm]\n", "[skills]\nqa = \"support-bot\"\n\n[llm]\n");
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    std::fs::remove_file(d.join("skills/default-strategy.md")).unwrap();
    for (folder, text) in [
        ("support", SUPPORT),
        ("billing", "---\nname: billing\n---\nRULE refund => no\n"),
    ] {
        std::fs::create_dir_all(d.join("skills").join(folder)).unwrap();
        std::fs::write(d.join("skills").join(folder).join("SKILL.md"), text).unwrap();
    }
    std::fs::write(d.join("skills/support/reference.txt"), "a resource\n").unwrap();
    std::fs::write(
        d.join("skills/README.md"),
        "About these skills; not a skill.\n",
    )
    .unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn an_agent_skills_folder_runs_stages_and_is_adopted_with_yes() {
    let fake = crate::fake_llm::start_loop();
    let dir = agent_skills_workspace(&fake.base_url);
    let d = dir.path();
    let skills_before = snapshot(&d.join("skills"));

    let dry = run_config(d, &["--dry-run"]);
    assert!(dry.status.success(), "{dry:?}");
    assert!(
        text(&dry.stdout).contains("2 skill document(s) in skills"),
        "{}",
        text(&dry.stdout)
    );
    assert!(
        text(&dry.stdout).contains("task type \"qa\" → support-bot.md"),
        "{}",
        text(&dry.stdout)
    );

    let out = run_config(d, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    assert!(stdout.contains("skill-evolve adopt demo"), "{stdout}");
    // Nothing in the user's folder changed.
    assert_eq!(snapshot(&d.join("skills")), skills_before);
    let run = d.join(".skill-evolve/runs/demo");
    let staged = std::fs::read_to_string(run.join("staged/files/support-bot.md")).unwrap();
    assert!(staged.starts_with("---\nname: support-bot\n"), "{staged}");
    assert!(staged.contains("RULE qa => yes"), "{staged}");
    let diff = std::fs::read_to_string(run.join("staged/diffs/support-bot.md.diff")).unwrap();
    assert!(diff.contains("+++ b/skills/support/SKILL.md"), "{diff}");
    assert!(diff.contains("+RULE qa => yes"), "{diff}");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("## Staged for adoption"), "{report}");
    assert!(report.contains("skills/support/SKILL.md"), "{report}");
    assert!(report.contains("`skill-evolve adopt demo`"), "{report}");
    let proposal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("staged/proposal.json")).unwrap())
            .unwrap();
    assert_eq!(proposal["documents"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        proposal["evidence"][0]["decision"], "accept_confirmed",
        "{proposal}"
    );

    let status = skill_evolve(d).arg("status").output().unwrap();
    let status_text = text(&status.stdout);
    assert!(status.status.success(), "{status:?}");
    assert!(
        status_text.contains("demo: finished (v000002): 1 document(s) staged, 1 not adopted yet"),
        "{status_text}"
    );
    assert!(
        status_text.contains("support-bot → skills/support/SKILL.md (staged;"),
        "{status_text}"
    );

    // Without a terminal and without --yes: the diff is shown, nothing is written.
    let before = snapshot(d);
    let refused = skill_evolve(d).args(["adopt", "demo"]).output().unwrap();
    assert_one_line_error(&refused, "no terminal to confirm on");
    assert!(text(&refused.stdout).contains("+RULE qa => yes"));
    assert_eq!(snapshot(d), before);
    // A document the run did not stage is named as such.
    assert_one_line_error(
        &skill_evolve(d)
            .args(["adopt", "demo", "--skill", "billing", "--yes"])
            .output()
            .unwrap(),
        "staged no such document (it staged support-bot)",
    );
    assert_one_line_error(
        &skill_evolve(d).args(["adopt", "nope"]).output().unwrap(),
        "no run named \"nope\"",
    );
    assert_eq!(snapshot(d), before);

    let adopted = skill_evolve(d)
        .args(["adopt", "demo", "--skill", "support-bot", "--yes"])
        .output()
        .unwrap();
    assert!(adopted.status.success(), "{adopted:?}");
    assert!(
        text(&adopted.stdout).contains("adopted skills/support/SKILL.md as v000002"),
        "{}",
        text(&adopted.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        staged
    );
    let history = history_json(d, "skills/support/SKILL.md", None);
    assert_eq!(history["current"], "v000002", "{history}");
    assert_eq!(
        history["history"][1]["message"], "adopted from run demo (v000002)",
        "{history}"
    );
    // The rollback covers it: back to the imported text.
    let back = skill_evolve(d)
        .args(["rollback", "skills/support/SKILL.md", "--to", "v1", "--yes"])
        .output()
        .unwrap();
    assert!(back.status.success(), "{back:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        SUPPORT
    );
    // The same run command again resumes a finished run: the adoption stays recorded.
    let again = run_config(d, &[]);
    assert!(again.status.success(), "{again:?}");
    // Status says the adoption was rolled back since.
    let status = text(&skill_evolve(d).arg("status").output().unwrap().stdout);
    assert!(
        status.contains("(adopted as v000002, since rolled back to v000001;"),
        "{status}"
    );
    let twice = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(twice.status.success(), "{twice:?}");
    assert!(
        text(&twice.stdout).contains("was adopted already (as v000002)"),
        "{}",
        text(&twice.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        SUPPORT
    );
}

/// An agent with its own tools (`lookup_order`, `search_kb`) and Agent
/// Skills: the profile's lookup maps `lookup_order` to `orders_extract.md`
/// and `orders_verify.md` (a `lookup_order_extract.md` beside them is not
/// its prompt), the run evolves the extract prompt its spans need, and
/// `adopt --yes` writes exactly that file, which `history` then lists.
#[test]
fn the_file_a_tool_lookup_chooses_is_the_one_adopted_and_listed_in_history() {
    let fake = crate::fake_llm::start_tools();
    let config = format!(
        "{}\n[profile]\nspan_eval_tools = [\"lookup_order\", \"search_kb\"]\n\
         tool_target_files = {{ lookup_order = [\"orders_extract.md\", \"orders_verify.md\"] }}\n",
        one_epoch(&live_config(&fake.base_url))
            .replace(
                "skills = \"skills\"",
                "skills = \"skills\"\nprompts = \"prompts\""
            )
            .replace("[llm]\n", "[skills]\nqa = \"support-bot\"\n\n[llm]\n")
    );
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    std::fs::remove_file(d.join("skills/default-strategy.md")).unwrap();
    std::fs::create_dir_all(d.join("skills/support")).unwrap();
    std::fs::write(d.join("skills/support/SKILL.md"), SUPPORT).unwrap();
    std::fs::write(
        d.join("agent.sh"),
        ORDERS_AGENT.replace("lookup_order_extract.md", "orders_extract.md"),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("prompts")).unwrap();
    let verify = EXTRACT_PROMPT.replace("Extract from", "Verify");
    for (name, text) in [
        ("orders_extract.md", EXTRACT_PROMPT),
        ("orders_verify.md", verify.as_str()),
        ("lookup_order_extract.md", EXTRACT_PROMPT),
    ] {
        std::fs::write(d.join("prompts").join(name), text).unwrap();
    }

    let finished = run_to_end(d);
    finished.assert_summary("1 candidate(s), 1 accepted");
    let run = d.join(".skill-evolve/runs/demo");
    let proposal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("staged/proposal.json")).unwrap())
            .unwrap();
    let documents = proposal["documents"].as_array().unwrap();
    assert_eq!(documents.len(), 1, "{proposal}");
    assert_eq!(
        documents[0]["path"], "prompts/orders_extract.md",
        "{proposal}"
    );
    let staged = std::fs::read_to_string(run.join("staged/files/orders_extract.md")).unwrap();
    assert!(staged.contains("RULE qa => yes"), "{staged}");

    let before = snapshot(d);
    let adopted = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(adopted.status.success(), "{adopted:?}");
    let stdout = text(&adopted.stdout);
    let version = stdout
        .split("adopted prompts/orders_extract.md as ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no adoption line in {stdout}"))
        .to_owned();
    // Exactly that file changed among the user's files; besides it, only
    // the tool's own folders changed (the run's record of the adoption, the
    // file's version store beside it).
    let after = snapshot(d);
    let outside_stores = |files: &[(String, Vec<u8>)]| -> Vec<(String, Vec<u8>)> {
        files
            .iter()
            .filter(|(path, _)| {
                !path.starts_with(".skill-evolve/") && !path.contains("/.skill-evolve/")
            })
            .cloned()
            .collect()
    };
    let (kept_before, kept_after) = (outside_stores(&before), outside_stores(&after));
    let changed: Vec<&str> = kept_after
        .iter()
        .filter(|file| !kept_before.contains(file))
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(changed, ["prompts/orders_extract.md"]);
    assert_eq!(kept_after.len(), kept_before.len());
    assert_eq!(
        std::fs::read_to_string(d.join("prompts/orders_extract.md")).unwrap(),
        staged
    );
    assert_eq!(
        std::fs::read_to_string(d.join("prompts/lookup_order_extract.md")).unwrap(),
        EXTRACT_PROMPT
    );
    assert_eq!(
        std::fs::read_to_string(d.join("skills/support/SKILL.md")).unwrap(),
        SUPPORT
    );

    let history = history_json(d, "prompts/orders_extract.md", None);
    assert_eq!(history["current"], version.as_str(), "{history}");
    let listed = history["history"].as_array().unwrap();
    let last = listed.last().unwrap();
    assert_eq!(last["version"], version.as_str(), "{history}");
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .starts_with("adopted from run demo"),
        "{history}"
    );
}

#[test]
fn adopt_refuses_a_file_edited_since_the_run_read_it() {
    let fake = crate::fake_llm::start_loop();
    let dir = agent_skills_workspace(&fake.base_url);
    let d = dir.path();
    let out = run_config(d, &[]);
    assert!(out.status.success(), "{out:?}");
    let edited = format!("{SUPPORT}RULE refund => ask\n");
    std::fs::write(d.join("skills/support/SKILL.md"), &edited).unwrap();
    let before = snapshot(d);
    assert_one_line_error(
        &skill_evolve(d)
            .args(["adopt", "demo", "--yes"])
            .output()
            .unwrap(),
        "skills/support/SKILL.md: changed since run \"demo\" read it",
    );
    assert_eq!(snapshot(d), before);
    assert!(!d.join("skills/support/.skill-evolve").exists());
}

#[test]
fn a_task_type_without_a_skill_fails_before_any_rollout() {
    let dir = run_workspace(CONFIG);
    let d = dir.path();
    std::fs::remove_file(d.join("skills/default-strategy.md")).unwrap();
    std::fs::write(d.join("skills/billing.md"), "RULE refund => no\n").unwrap();
    std::fs::write(d.join("skills/shipping.md"), "RULE late => sorry\n").unwrap();
    let before = snapshot(d);
    for extra in [&["--dry-run"][..], &[]] {
        let out = run_config(d, extra);
        assert_one_line_error(
            &out,
            "evolve.toml: task type \"qa\" has no skill: no [skills] entry for it or `default`, \
             and no skill is named \"qa\"; the skills folder holds billing (skills/billing.md), \
             shipping (skills/shipping.md)",
        );
        assert_eq!(snapshot(d), before, "{extra:?}");
    }
    // A mapping that names a missing skill is found at its line.
    let mapped = CONFIG.replace("[llm]\n", "[skills]\ndefault = \"shiping\"\n\n[llm]\n");
    std::fs::write(d.join("evolve.toml"), &mapped).unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(
        &out,
        "evolve.toml:26: [skills] \"default\" = \"shiping\": no such skill",
    );
    // With the fallback named, every task type resolves.
    std::fs::write(d.join("evolve.toml"), mapped.replace("shiping", "shipping")).unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout).contains("task type \"qa\" → shipping.md"));
}

#[test]
fn a_single_skill_md_serves_every_task_type() {
    let config = CONFIG.replace(r#"skills = "skills""#, r#"skills = "my-skill""#);
    let dir = run_workspace(&config);
    let d = dir.path();
    std::fs::create_dir_all(d.join("my-skill/scripts")).unwrap();
    std::fs::write(
        d.join("my-skill/SKILL.md"),
        "---\ndescription: x\n---\nRULE a => b\n",
    )
    .unwrap();
    std::fs::write(d.join("my-skill/scripts/notes.md"), "a resource\n").unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("1 skill document(s) in my-skill"),
        "{stdout}"
    );
    assert!(
        stdout.contains("task type \"qa\" → my-skill.md"),
        "{stdout}"
    );
}

#[cfg(unix)]
#[test]
fn a_link_in_the_skills_folder_is_refused() {
    let dir = run_workspace(CONFIG);
    let d = dir.path();
    std::fs::write(d.join("secret.md"), "not a skill\n").unwrap();
    std::os::unix::fs::symlink(d.join("secret.md"), d.join("skills/linked.md")).unwrap();
    let out = run_config(d, &["--dry-run"]);
    assert_one_line_error(&out, "is a symbolic link; skill folders may not hold links");
}

#[test]
fn a_store_made_for_other_documents_names_fresh() {
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&loop_config(&rule_agent(), &fake.base_url), 14);
    let d = dir.path();
    let first = run_config(d, &[]);
    assert!(first.status.success(), "{first:?}");
    // The user moves to the Agent Skills layout; the run name stays.
    std::fs::remove_file(d.join("skills/default-strategy.md")).unwrap();
    std::fs::create_dir_all(d.join("skills/general")).unwrap();
    std::fs::write(d.join("skills/general/SKILL.md"), "RULE other => no\n").unwrap();
    let before = snapshot(d);
    for extra in [&["--dry-run"][..], &[]] {
        assert_one_line_error(
            &run_config(d, extra),
            "run \"demo\" was started with other documents (default-strategy.md from \
             skills/default-strategy.md; the configuration now gives general.md from \
             skills/general/SKILL.md): run again with --fresh",
        );
        assert_eq!(snapshot(d), before);
    }
    let dry = run_config(d, &["--fresh", "--dry-run"]);
    assert!(dry.status.success(), "{dry:?}");
    assert!(text(&dry.stdout).contains("the run would start over"));
    assert_eq!(snapshot(d), before);
    let fresh = run_config(d, &["--fresh"]);
    let stdout = text(&fresh.stdout);
    assert!(fresh.status.success(), "{stdout}\n{}", text(&fresh.stderr));
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    let staged =
        std::fs::read_to_string(d.join(".skill-evolve/runs/demo/staged/files/general.md")).unwrap();
    assert!(staged.contains("RULE qa => yes"), "{staged}");
}

/// A finished run whose skill was adopted (or whose agent changed) is not resumed: the
/// rerun says what changed and names `--fresh` instead of printing the old result; with
/// the inputs it started with, it resumes.
#[test]
fn a_rerun_after_adopt_or_a_new_agent_is_refused_before_any_rollout() {
    let fake = crate::fake_llm::start_loop();
    let agent = rule_agent();
    let config = loop_config(&agent, &fake.base_url);
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    let original = std::fs::read_to_string(d.join("skills/default-strategy.md")).unwrap();
    run_to_end(d).assert_summary("1 candidate(s), 1 accepted");
    let adopted = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(adopted.status.success(), "{adopted:?}");
    assert_ne!(
        std::fs::read_to_string(d.join("skills/default-strategy.md")).unwrap(),
        original
    );
    let calls = fake.calls.load(std::sync::atomic::Ordering::SeqCst);
    let before = snapshot(d);
    for extra in [&["--dry-run"][..], &[]] {
        let out = run_config(d, extra);
        assert_one_line_error(
            &out,
            "error: run \"demo\" cannot resume: the skills (default-strategy.md) changed since \
             it started; start over with --fresh, or use another run name",
        );
        assert!(!text(&out.stdout).contains("finished"), "{out:?}");
        assert_eq!(snapshot(d), before);
    }

    // The skill as the run read it, a new agent command: refused for the agent.
    std::fs::write(d.join("skills/default-strategy.md"), &original).unwrap();
    let wrapped = config.replace(
        &format!("[{:?}]", agent.display().to_string()),
        &format!("[\"env\", {:?}]", agent.display().to_string()),
    );
    assert_ne!(wrapped, config);
    std::fs::write(d.join("evolve.toml"), &wrapped).unwrap();
    assert_one_line_error(
        &run_config(d, &[]),
        "run \"demo\" cannot resume: the agent ([agent] command) changed since it started",
    );

    // Everything as the run started: it resumes, and asks nothing of the model.
    std::fs::write(d.join("evolve.toml"), &config).unwrap();
    let again = run_config(d, &[]);
    assert!(again.status.success(), "{again:?}");
    assert!(text(&again.stderr).contains("resuming from"), "{again:?}");
    assert_eq!(fake.calls.load(std::sync::atomic::Ordering::SeqCst), calls);

    // A run folder without the record of its inputs (an earlier version made it) is not
    // resumed either: nothing shows its inputs are the ones it started with.
    std::fs::remove_file(d.join(".skill-evolve/runs/demo/inputs.json")).unwrap();
    assert_one_line_error(
        &run_config(d, &[]),
        "run \"demo\" cannot resume: it was started by an earlier version that did not record \
         its inputs",
    );
}

#[test]
fn a_run_that_accepts_nothing_stages_nothing_and_says_why() {
    let fake = crate::fake_llm::start_loop();
    let dir = run_workspace_with(&loop_config(&rule_agent(), &fake.base_url), 14);
    let d = dir.path();
    // The proposed rule answers `yes`; these questions want `maybe`, so the gate rejects it.
    let questions: String = (0..14)
        .map(|i| format!("{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"question\": \"?\", \"answer\": \"maybe\"}}\n"))
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let out = run_config(d, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("0 accepted"), "{stdout}");
    assert!(
        stdout.contains("nothing staged: your files stay as they are"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    assert!(
        report.contains("Nothing is staged: no candidate was accepted"),
        "{report}"
    );
    let status = text(&skill_evolve(d).arg("status").output().unwrap().stdout);
    assert!(
        status.contains("demo: finished (v000001): nothing staged"),
        "{status}"
    );
    let before = snapshot(d);
    let adopt = skill_evolve(d).args(["adopt", "demo"]).output().unwrap();
    assert!(adopt.status.success(), "{adopt:?}");
    assert!(text(&adopt.stdout).contains("run \"demo\" staged nothing"));
    assert_eq!(snapshot(d), before);
}
