//! `skill-evolve init`: a commented run configuration for a folder, with the
//! tool names of a run log or trajectory folder in its `[profile]`; an
//! existing configuration is kept unless `--force`.

use evolution_types::TraceStep;
use serde_json::json;

use crate::runlogs::write_run;
use crate::support::{assert_one_line_error, run_config, skill_evolve, snapshot};

const TRAJECTORY: &str = r#"{"id": "t1", "task_description": "orders", "question": "Where is order 7?",
 "fail_reason": "the status was misread", "predicted_answer": "lost", "reference_text": "shipped",
 "steps": [
  {"step": 1, "tool_name": "lookup_order", "tool_input": {"order_id": "7"}, "tool_output": "shipped"},
  {"step": 2, "tool_name": "search_kb", "tool_input": {"query": "late"}, "tool_output": "3 days"},
  {"step": 3, "tool_name": "lookup_order", "tool_input": {"order_id": "8"}, "tool_output": "lost"}
 ]}"#;

/// A folder with Agent-Skills-style and flat skills, the prompts of one
/// tool, and a trajectory folder.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills/orders")).unwrap();
    std::fs::write(d.join("skills/orders/SKILL.md"), "# Orders\n").unwrap();
    std::fs::create_dir_all(d.join("skills/orders/references")).unwrap();
    std::fs::write(d.join("skills/orders/references/returns.md"), "# Returns\n").unwrap();
    std::fs::write(d.join("skills/default-strategy.md"), "# Default\n").unwrap();
    std::fs::create_dir_all(d.join("prompts")).unwrap();
    for name in ["lookup_order_extract.md", "lookup_order_verify.md"] {
        std::fs::write(d.join("prompts").join(name), "# Prompt\n").unwrap();
    }
    std::fs::create_dir_all(d.join("traces")).unwrap();
    std::fs::write(d.join("traces/t1.json"), TRAJECTORY).unwrap();
    dir
}

#[test]
fn init_writes_a_commented_configuration_with_the_tools_seen() {
    let dir = folder();
    let d = dir.path();
    let out = skill_evolve(d)
        .args(["init", "--trajectories", "traces"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2 skill document(s), tools lookup_order, search_kb"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    for needle in [
        "found: default-strategy.md, orders/SKILL.md",
        "prompts = \"prompts\"",
        "command = [\"./my-agent\"]",
        "# Tools seen in traces: lookup_order (2 call(s)), search_kb (1 call(s))",
        "span_eval_tools = [\"lookup_order\", \"search_kb\"]",
        "tool_target_files = { \"lookup_order\" = [\"lookup_order_extract.md\", \"lookup_order_verify.md\"] }",
        "# search_tool = \"search_kb\"",
        "# evolve_references = [\"orders\"]   # these skills have references/*.md",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    // With the agent and the questions filled in, the configuration is valid
    // and its profile is the one written. Its gate parameters over a horizon
    // of eleven candidates need 17 gate questions: 34 questions, half gated.
    let questions: String = (0..34)
        .map(|i| format!("{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"question\": \"?\", \"answer\": \"yes\"}}\n"))
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::write(d.join("agent.sh"), "cat >/dev/null\n").unwrap();
    // The knobs written commented out are valid once uncommented.
    let mut text = text.clone();
    for key in [
        "e_confirm",
        "e_provisional",
        "w_net_min",
        "delta_min",
        "lambda_dir",
        "e_rollback",
        "alternative",
        "skill_update",
        "consolidate_notes",
        "consolidate_chars",
    ] {
        let commented = format!("\n# {key} = ");
        assert!(text.contains(&commented), "{key} not offered in\n{text}");
        text = text.replace(&commented, &format!("\n{key} = "));
    }
    std::fs::write(
        d.join("evolve.toml"),
        text.replace(
            "command = [\"./my-agent\"]",
            "command = [\"sh\", \"agent.sh\"]",
        ) + "\n[llm]\nprovider = \"openai\"\n[llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
               model = \"m\"\napi_key_env = \"SKILL_EVOLVE_TEST_KEY\"\n",
    )
    .unwrap();
    let out = run_config(d, &["--dry-run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("profile: span-judged tools: lookup_order, search_kb"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "gate: seed (e_confirm, e_provisional, delta_min, lambda_dir, e_rollback, w_net_min, \
             alternative set in [gate]) parameters"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("skills: patched with small edits; appendix notes merged at 6 notes or past 2000 characters"),
        "{stdout}"
    );
}

/// A harvested Claude Code session's trajectory: the host's shell and file
/// tools, and one tool of the user's own.
const HOST_TRAJECTORY: &str = r#"{"id": "s1", "task_description": "fix the build",
 "question": "Why does make fail?", "fail_reason": "the fix was not tried",
 "predicted_answer": "it passes", "reference_text": "a missing target",
 "steps": [
  {"step": 1, "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_output": "error"},
  {"step": 2, "tool_name": "Read", "tool_input": {"file_path": "Makefile"}, "tool_output": "all:"},
  {"step": 3, "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_output": "ok"},
  {"step": 4, "tool_name": "mcp__orders__lookup", "tool_input": {"id": "7"}, "tool_output": "shipped"},
  {"step": 5, "tool_name": "AskUserQuestion", "tool_input": {"question": "Which target?"}, "tool_output": "all"},
  {"step": 6, "tool_name": "EnterPlanMode", "tool_input": {}, "tool_output": "ok"}
 ]}"#;

#[test]
fn init_leaves_the_hosts_own_tools_out_of_the_judged_tools() {
    let dir = folder();
    let d = dir.path();
    std::fs::write(d.join("traces/t1.json"), HOST_TRAJECTORY).unwrap();
    let out = skill_evolve(d)
        .args(["init", "--trajectories", "traces"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    assert!(
        text.contains("\nspan_eval_tools = [\"mcp__orders__lookup\"]\n"),
        "{text}"
    );
    assert!(text.contains("own tools (add any whose"), "{text}");
    assert!(
        text.contains("): Bash, AskUserQuestion, EnterPlanMode, Read\n"),
        "{text}"
    );

    // Only the host's tools: nothing is judged unless the user says so.
    let only_host = HOST_TRAJECTORY.replace("mcp__orders__lookup", "Grep");
    std::fs::write(d.join("traces/t1.json"), only_host).unwrap();
    let out = skill_evolve(d)
        .args(["init", "--force", "--trajectories", "traces"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    assert!(!text.contains("\nspan_eval_tools ="), "{text}");
    assert!(text.contains("# span_eval_tools = ["), "{text}");
    assert!(
        text.contains("): Bash, AskUserQuestion, EnterPlanMode, Grep, Read\n"),
        "{text}"
    );
}

#[test]
fn init_keeps_an_existing_configuration_unless_forced() {
    let dir = folder();
    let d = dir.path();
    std::fs::write(d.join("evolve.toml"), "# mine\n").unwrap();
    let before = snapshot(d);
    let out = skill_evolve(d).args(["init"]).output().unwrap();
    assert_one_line_error(&out, "evolve.toml: already exists");
    assert_eq!(snapshot(d), before);
    let out = skill_evolve(d).args(["init", "--force"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    assert!(text.contains("[profile]"), "{text}");
    assert!(
        text.contains("# span_eval_tools = [\"lookup_order\", \"search_kb\"]"),
        "no traces: the tools are an example, commented out\n{text}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("span_eval_tools")),
        "{text}"
    );
}

#[test]
fn init_reads_tool_names_from_a_run_log() {
    let dir = folder();
    let d = dir.path();
    for (run, tool) in [("r1", "lookup_order"), ("r2", "refund\u{7}order")] {
        let step = TraceStep {
            question_id: "q1".to_owned(),
            step: 1,
            tool_name: tool.to_owned(),
            tool_input: json!({}),
            ..TraceStep::default()
        };
        write_run(&d.join("run.sqlite"), run, Vec::new(), vec![step]);
    }
    let out = skill_evolve(d)
        .args(["init", "--runlog", "run.sqlite"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
    assert!(
        text.contains("span_eval_tools = [\"lookup_order\"]"),
        "{text}"
    );
    assert!(
        text.contains("1 more tool name(s) left out"),
        "a name with a control character is not written\n{text}"
    );
    // A run that is not there: the valid ones are named, nothing is written.
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args([
            "init",
            "--force",
            "--runlog",
            "run.sqlite",
            "--run-id",
            "r9",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "run.sqlite: no run \"r9\" here (runs: r1, r2)");
    assert_eq!(snapshot(d), before);
    // Missing inputs are one line, exit 2.
    for (args, needle) in [
        (vec!["init", "nowhere"], "nowhere: no such folder"),
        (
            vec!["init", "--force", "--runlog", "none.sqlite"],
            "none.sqlite: no such run log file",
        ),
        (
            vec!["init", "--force", "--trajectories", "skills"],
            "skills: no .json trajectory files here",
        ),
    ] {
        let out = skill_evolve(d).args(&args).output().unwrap();
        assert_one_line_error(&out, needle);
        assert_eq!(snapshot(d), before);
    }
}

#[test]
fn init_finds_a_hosts_own_skills_folder_and_names_that_host() {
    for (folder, host) in [
        (".claude/skills", "claude-code"),
        (".agents/skills", "codex"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join(folder).join("release-notes")).unwrap();
        std::fs::write(
            d.join(folder).join("release-notes/SKILL.md"),
            "---\nname: release-notes\ndescription: Notes.\n---\nWrite them.\n",
        )
        .unwrap();
        let out = skill_evolve(d).args(["init"]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("1 skill document(s)"), "{stdout}");
        assert!(stdout.contains(&format!("host = \"{host}\"")), "{stdout}");
        let text = std::fs::read_to_string(d.join("evolve.toml")).unwrap();
        assert!(text.contains(&format!("skills = \"{folder}\"")), "{text}");
        assert!(text.contains("found: release-notes/SKILL.md"), "{text}");
        assert!(text.contains(&format!("host = \"{host}\"")), "{text}");
        assert!(!text.contains("command = [\"./my-agent\"]"), "{text}");
    }
}
