//! The `[profile]` table: an agent whose tools are its own (`lookup_order`,
//! `search_kb`) is diagnosed and evolved under those names, nothing is
//! assumed without the table, and every bad value is one line, exit 2.

use evolution_types::{Prediction, TraceStep};
use serde_json::{Value, json};

use crate::run::{CONFIG, live_config, one_epoch, run_to_end, run_workspace, run_workspace_with};
use crate::runlogs::{prediction, step, with_log, write_run};
use crate::support::{assert_one_line_error, diagnose_rules, run_config, skill_evolve, snapshot};

/// Step `n` of question `q`: `tool` called with `input` returned `output`.
fn tool_step(q: &str, n: u32, tool: &str, input: Value, output: &str) -> TraceStep {
    TraceStep {
        tool_output: output.to_owned(),
        thought: format!("call {tool}"),
        ..step(q, n, tool, input)
    }
}

/// A run `r1` of an order-support agent: q1 right, q2 wrong; each looks an
/// order up and searches the knowledge base twice with the same query.
fn make_orders_log(path: &std::path::Path) {
    let p = |id: &str, answer: &str, correct: bool| Prediction {
        steps_used: 3,
        ..prediction(id, answer, correct)
    };
    let mut steps = Vec::new();
    for q in ["q1", "q2"] {
        steps.push(tool_step(
            q,
            1,
            "lookup_order",
            json!({"order_id": "7"}),
            "order 7: shipped on Monday",
        ));
        for n in [2, 3] {
            steps.push(tool_step(
                q,
                n,
                "search_kb",
                json!({"query": "late delivery"}),
                "deliveries take 3 days",
            ));
        }
    }
    write_run(
        path,
        "r1",
        vec![p("q1", "shipped", true), p("q2", "lost", false)],
        steps,
    );
}

const ORDER_QUESTIONS: &str = r#"{"question_id": "q1", "task_type": "qa", "question": "Where is order 7?", "answer": "shipped"}
{"question_id": "q2", "task_type": "qa", "question": "Was order 7 shipped?", "answer": "shipped"}
"#;

fn orders_workspace(profile: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    make_orders_log(&d.join("run.sqlite"));
    std::fs::write(d.join("questions.jsonl"), ORDER_QUESTIONS).unwrap();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    std::fs::write(
        d.join("skills/default-strategy.md"),
        "1. Look the order up.\n2. Search the knowledge base.\n",
    )
    .unwrap();
    if let Some(profile) = profile {
        std::fs::write(d.join("skill-evolve.toml"), profile).unwrap();
    }
    dir
}

fn rules_json(d: &std::path::Path) -> Value {
    let out = diagnose_rules(d, "r1").arg("--json").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn metrics_of_tools_the_profile_does_not_name_are_not_computed() {
    // No [profile]: the tools are counted, the visit and search metrics are
    // not computed (null), never a made-up 0.
    let dir = orders_workspace(None);
    let report = rules_json(dir.path());
    let q2 = &report["questions"][1];
    assert_eq!(q2["tool_usage"], json!({"lookup_order": 1, "search_kb": 2}));
    assert_eq!(q2["repeat_visit_rate"], Value::Null, "{q2}");
    assert_eq!(q2["search_keyword_repetition"], Value::Null, "{q2}");
    // Naming the search tool measures its repetition (the same query twice).
    let dir = orders_workspace(Some("[profile]\nsearch_tool = \"search_kb\"\n"));
    let report = rules_json(dir.path());
    let q2 = &report["questions"][1];
    assert_eq!(q2["search_keyword_repetition"], 1.0, "{q2}");
    assert_eq!(q2["repeat_visit_rate"], Value::Null, "{q2}");
    // The markdown says n/a for what was not computed.
    let out = diagnose_rules(dir.path(), "r1").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| n/a | 1.00 | lookup_order×1, search_kb×2 |"),
        "{text}"
    );
}

fn judged(d: &std::path::Path, base_url: &str) -> Value {
    let out = skill_evolve(d)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["diagnose", "--runlog", "run.sqlite", "--run-id", "r1"])
        .args([
            "--questions",
            "questions.jsonl",
            "--skills",
            "skills",
            "--json",
        ])
        .args(["--concurrency", "1", "--provider", "openai", "--model", "m"])
        .args([
            "--base-url",
            base_url,
            "--api-key-env",
            "SKILL_EVOLVE_TEST_KEY",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_diagnosis_judges_and_packs_the_agents_own_tools() {
    let fake = crate::fake_llm::start_tools();
    let dir = orders_workspace(Some(
        "[profile]\nspan_eval_tools = [\"lookup_order\", \"search_kb\"]\n",
    ));
    let report = judged(dir.path(), &fake.base_url);
    // Tool statistics and span judgements are under the agent's tool names.
    let stats = &report["tool_stats"];
    assert_eq!(stats["lookup_order"]["n_calls"], 2, "{stats}");
    assert_eq!(stats["lookup_order"]["n_spans"], 2, "{stats}");
    assert_eq!(stats["search_kb"]["n_spans"], 4, "{stats}");
    assert_eq!(stats["lookup_order"]["avg_completeness"], 0.2, "{stats}");
    let spans: Vec<&str> = report["question_metrics"][1]["span_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(spans, ["lookup_order", "search_kb", "search_kb"]);
    // Poor spans put each tool's prompts up for evolution.
    let packs: Vec<(&str, Value)> = report["tool_packs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["tool_name"].as_str().unwrap(), p["target_files"].clone()))
        .collect();
    assert_eq!(
        packs,
        [
            (
                "lookup_order",
                json!(["lookup_order_extract.md", "lookup_order_verify.md"])
            ),
            (
                "search_kb",
                json!(["search_kb_extract.md", "search_kb_verify.md"])
            ),
        ]
    );
    assert!(
        report["tool_packs"][0]["failure_spans"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    // The markdown report has the tools table.
    let out = skill_evolve(dir.path())
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["diagnose", "--runlog", "run.sqlite", "--run-id", "r1"])
        .args(["--questions", "questions.jsonl", "--skills", "skills"])
        .args([
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &fake.base_url,
        ])
        .args(["--api-key-env", "SKILL_EVOLVE_TEST_KEY"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| lookup_order | 2 | 2 | 0.20 | 0.00 |"),
        "{text}"
    );

    // Without [profile] nothing is judged or packed, yet the tools are listed.
    let dir = orders_workspace(None);
    let report = judged(dir.path(), &fake.base_url);
    assert_eq!(report["tool_stats"]["lookup_order"]["n_calls"], 2);
    assert_eq!(report["tool_stats"]["lookup_order"]["n_spans"], 0);
    assert_eq!(report["tool_packs"], json!([]));
    assert_eq!(report["question_metrics"][1]["span_metrics"], json!([]));
}

#[test]
fn bad_profile_values_are_one_line_errors_naming_file_line_and_key() {
    let cases = [
        (
            "span_eval_tool = [\"x\"]",
            "skill-evolve.toml:2: unknown field `span_eval_tool`",
        ),
        (
            "level_pattern = '_L(\\d+_'",
            "skill-evolve.toml:2: [profile] level_pattern is not a valid regular expression",
        ),
        (
            "high_confidence = 1.5",
            "skill-evolve.toml:2: [profile] high_confidence must be from 0 to 1, not 1.5",
        ),
        (
            "low_confidence = 0.9",
            "skill-evolve.toml:2: [profile] low_confidence must not exceed high_confidence",
        ),
        (
            "min_pattern_count = 0",
            "skill-evolve.toml:2: [profile] min_pattern_count must be at least 1",
        ),
        ("min_pattern_count = -1", "skill-evolve.toml:2:"),
        (
            "preset = \"video\"",
            "skill-evolve.toml:2: [profile] preset \"video\" is unknown: expected one of neutral, video-qa",
        ),
        (
            "span_eval_tools = \"lookup_order\"",
            "skill-evolve.toml:2: invalid type",
        ),
        (
            "tool_target_files = { lookup_order = [\"../x.md\"] }",
            "skill-evolve.toml:2: [profile] tool_target_files \"../x.md\" is not a plain file name",
        ),
    ];
    for (line, needle) in cases {
        let dir = orders_workspace(Some(&format!("[profile]\n{line}\n")));
        let d = dir.path();
        let before = snapshot(d);
        let out = diagnose_rules(d, "r1").output().unwrap();
        assert_one_line_error(&out, needle);
        assert_eq!(snapshot(d), before, "{line}");
    }
}

#[test]
fn the_run_configuration_takes_a_profile_and_checks_it() {
    let with_profile = format!(
        "{CONFIG}\n[profile]\nspan_eval_tools = [\"lookup_order\", \"search_kb\"]\n\
         search_tool = \"search_kb\"\n"
    );
    let dir = run_workspace(&with_profile);
    let out = run_config(dir.path(), &["--dry-run"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "profile: span-judged tools: lookup_order, search_kb; visit tool: none; \
             search tool: search_kb"
        ),
        "{text}"
    );
    // Without the table: nothing named.
    let dir = run_workspace(CONFIG);
    let out = run_config(dir.path(), &["--dry-run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("profile: span-judged tools: none; visit tool: none; search tool: none"),
        "{text}"
    );
    let lines = CONFIG.lines().count();
    for (line, needle) in [
        (
            "high_confidence = 2.0",
            format!(
                "evolve.toml:{}: [profile] high_confidence must be from 0 to 1",
                lines + 3
            ),
        ),
        (
            "visit_tools = \"open_page\"",
            format!("evolve.toml:{}: unknown field `visit_tools`", lines + 3),
        ),
    ] {
        let dir = run_workspace(&format!("{CONFIG}\n[profile]\n{line}\n"));
        let before = snapshot(dir.path());
        let out = run_config(dir.path(), &["--dry-run"]);
        assert_one_line_error(&out, &needle);
        assert_eq!(snapshot(dir.path()), before);
    }
}

/// An agent (a shell script) whose tools are `lookup_order` and `search_kb`:
/// it answers `yes` once its extract prompt holds the rule, `unknown` before.
pub(crate) const ORDERS_AGENT: &str = r#"while IFS= read -r line; do
  qid=$(printf '%s' "$line" | sed -n 's/.*"question_id":"\([^"]*\)".*/\1/p')
  dir=$(printf '%s' "$line" | sed -n 's/.*"prompts_dir":"\([^"]*\)".*/\1/p')
  answer=unknown
  if grep -q 'RULE qa => yes' "$dir/lookup_order_extract.md" 2>/dev/null; then answer=yes; fi
  printf '{"type":"step","question_id":"%s","tool_name":"lookup_order","tool_input":{"order_id":"7"},"tool_output":"order 7: shipped","thought":"look the order up"}\n' "$qid"
  printf '{"type":"step","question_id":"%s","tool_name":"search_kb","tool_input":{"query":"shipping"},"tool_output":"shipping takes 3 days","thought":"search"}\n' "$qid"
  printf '{"type":"result","question_id":"%s","prediction":"%s","answer_confidence":0.9,"max_steps":5}\n' "$qid" "$answer"
done
"#;

pub(crate) const EXTRACT_PROMPT: &str = "# Extract from an order lookup\n\n## Output format\nOne line \
    per fact.\n\n## What to extract\nRead the order record and write down its status, its \
    dates and anything the customer asked about.\n";

#[test]
fn a_run_evolves_the_prompt_of_a_tool_whose_spans_are_judged_poor() {
    let fake = crate::fake_llm::start_tools();
    let config = format!(
        "{}\n[profile]\nspan_eval_tools = [\"lookup_order\", \"search_kb\"]\n",
        one_epoch(&live_config(&fake.base_url)).replace(
            "skills = \"skills\"",
            "skills = \"skills\"\nprompts = \"prompts\""
        )
    );
    let dir = run_workspace_with(&config, 14);
    let d = dir.path();
    std::fs::write(d.join("agent.sh"), ORDERS_AGENT).unwrap();
    std::fs::create_dir_all(d.join("prompts")).unwrap();
    std::fs::write(d.join("prompts/lookup_order_extract.md"), EXTRACT_PROMPT).unwrap();
    std::fs::write(
        d.join("prompts/lookup_order_verify.md"),
        EXTRACT_PROMPT.replace("Extract from", "Verify"),
    )
    .unwrap();
    let finished = run_to_end(d);
    finished.assert_summary("1 candidate(s), 1 accepted");
    let report = finished.report;
    let run = d.join(".skill-evolve/runs/demo");
    assert!(report.contains("lookup_order_extract.md"), "{report}");
    assert!(report.contains("+RULE qa => yes"), "{report}");
    // The recorded diagnosis names the agent's tools.
    let diagnoses = with_log(&run.join("runlog.sqlite"), async |log| {
        let mut all = Vec::new();
        for info in log.runs().await.unwrap() {
            all.extend(log.diagnoses(&info.run_id).await.unwrap());
        }
        all
    });
    assert!(!diagnoses.is_empty());
    let first = &diagnoses[0];
    assert!(
        first.tool_stats.contains_key("lookup_order"),
        "{:?}",
        first.tool_stats
    );
    assert!(first.tool_stats.contains_key("search_kb"));
    assert!(
        first
            .tool_packs
            .iter()
            .any(|p| p.tool_name == "lookup_order")
    );
}
