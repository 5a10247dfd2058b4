use std::path::PathBuf;

use evolution_harness::{
    FailureRules, IngestError, load_session_state, load_trajectory_dir, parse_trajectories,
};
use serde_json::json;

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

#[test]
fn a_trajectory_folder_becomes_records_and_every_bad_file_is_reported() {
    let out = load_trajectory_dir("import_1", &data("trajectories")).unwrap();
    let ids: Vec<_> = out
        .predictions
        .iter()
        .map(|p| p.question_id.as_str())
        .collect();
    assert_eq!(ids, ["traj-001", "traj-002"]);
    let first = &out.predictions[0];
    assert_eq!(first.run_id, "import_1");
    assert_eq!(first.task_type, "copywriting");
    assert_eq!(first.prediction, "The X100 headphones are ... (52 words)");
    assert_eq!(first.answer, "Crisp sound, 40-hour battery, folds flat.");
    assert!(!first.correct);
    assert_eq!(first.answer_confidence, Some(0.4));
    assert_eq!(first.steps_used, 2);
    assert_eq!(first.extra["fail_reason"], json!("Missed the word limit"));
    assert_eq!(
        first.extra["task_description"],
        json!("Write a product blurb")
    );
    assert_eq!(first.extra["feedback"], json!("too long"));
    assert_eq!(
        first.extra["source_file"],
        json!("failed_trajectory_001.json")
    );
    assert_eq!(
        out.questions[0].question,
        "Describe the X100 headphones in 30 words"
    );
    assert_eq!(out.questions[1].answer, "M2");
    assert_eq!(out.traces.len(), 2);
    assert_eq!(
        (out.traces[1].step, out.traces[1].tool_name.as_str()),
        (2, "submit")
    );
    assert_eq!(out.traces[0].question_id, "traj-001");
    insta::assert_yaml_snapshot!(out.diagnostics, @r#"
    - source: "failed_trajectory_002.json[1]"
      reason: "missing required fields [\"fail_reason\"]"
    - source: "failed_trajectory_002.json[2]"
      reason: "duplicate trajectory id \"traj-001\""
    - source: "failed_trajectory_002.json[3]"
      reason: not a JSON object
    - source: failed_trajectory_003.json
      reason: "invalid JSON: EOF while parsing a value at line 2 column 0"
    - source: failed_trajectory_004.json
      reason: "field \"predicted_answer\" must be a string, found 42"
    - source: notes.txt
      reason: not a .json file
    "#);
}

#[test]
fn an_empty_or_missing_folder_is_an_error() {
    assert!(matches!(
        load_trajectory_dir("r", &data("empty")),
        Err(IngestError::Empty(_))
    ));
    assert!(matches!(
        load_trajectory_dir("r", &data("nope")),
        Err(IngestError::Io { .. })
    ));
}

#[test]
fn in_memory_parsing_checks_types_and_ranges() {
    let out = parse_trajectories(
        "r",
        [
            (
                "a.json",
                r#"{"id":"", "task_description":"", "question":"", "fail_reason":"", "predicted_answer":"", "reference_text":""}"#,
            ),
            (
                "b.json",
                r#"{"id":"x", "task_description":"", "question":"", "fail_reason":"", "predicted_answer":"", "reference_text":"", "soft": 2}"#,
            ),
            (
                "c.json",
                r#"{"id":"y", "task_description":"", "question":"", "fail_reason":"", "predicted_answer":"ok", "reference_text":"ok", "hard": 1, "steps": [3]}"#,
            ),
            (
                "d.json",
                r#"{"id":"z", "task_description":"", "question":"", "fail_reason":"", "predicted_answer":"ok", "reference_text":"ok", "hard": true}"#,
            ),
            ("e.json", "[]"),
            ("f.json", "7"),
        ],
    );
    let reasons: Vec<_> = out
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.source, d.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "a.json: field \"id\" is empty",
            "b.json: field \"soft\" must lie in [0, 1], found 2",
            "c.json: steps[0] is not an object",
            "e.json: empty array",
            "f.json: not a JSON object or array",
        ]
    );
    assert_eq!(out.predictions.len(), 1);
    assert!(
        out.predictions[0].correct,
        "hard: true marks a passed trajectory"
    );
}

#[test]
fn session_state_sections_are_classified_by_the_failure_rules() {
    let out = load_session_state(
        "session_1",
        &data("SESSION-STATE.md"),
        &FailureRules::default(),
    )
    .unwrap();
    let rows: Vec<_> = out
        .predictions
        .iter()
        .map(|p| {
            (
                p.question_id.as_str(),
                p.correct,
                p.answer_confidence,
                p.extra["failure_signals"].clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("s-1", true, Some(0.9), json!([])),
            (
                "session-state-2",
                false,
                Some(0.6),
                json!(["user_correction", "user_rejection"])
            ),
            (
                "session-state-3",
                false,
                Some(0.2),
                json!(["hard_failure", "tool_error", "failed_status"])
            ),
        ]
    );
    assert_eq!(
        out.predictions[0].extra["task_description"],
        json!("用户要求生成 skill-evolve-pro 蓝图文档")
    );
    assert_eq!(out.questions[1].question, "查找配置文件");
    let reasons: Vec<_> = out
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.source, d.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            "SESSION-STATE.md:28: hard_success must be true or false, found \"maybe\"",
            "SESSION-STATE.md:32: soft_score must be a number in [0, 1], found \"1.5\"",
        ]
    );
}

#[test]
fn a_session_state_without_outcomes_is_reported() {
    let out = evolution_harness::parse_session_state(
        "r",
        "S.md",
        "# Notes\n- a: b\n",
        &FailureRules::default(),
    );
    assert!(out.predictions.is_empty());
    assert_eq!(out.diagnostics.len(), 1);
    assert_eq!(out.diagnostics[0].reason, "no \"## Outcomes\" section");
}

#[test]
fn skipped_inputs_become_events() {
    let out = load_trajectory_dir("r", &data("trajectories")).unwrap();
    let events = evolution_harness::EventLog::new();
    out.report_to(&events);
    let skipped: Vec<_> = events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            evolution_harness::HarnessEvent::InputSkipped { file, .. } => Some(file),
            _ => None,
        })
        .collect();
    assert_eq!(skipped.len(), out.diagnostics.len());
    assert_eq!(skipped.last().map(String::as_str), Some("notes.txt"));
}

/// The shape that was slow: one array of many trajectories, some ids repeated, across files.
#[test]
fn duplicates_among_many_trajectories_are_each_reported_once() {
    let item = |id: &str| {
        format!(
            r#"{{"id":"{id}", "task_description":"", "question":"", "fail_reason":"", "predicted_answer":"", "reference_text":""}}"#
        )
    };
    let n = 2000;
    let first: Vec<String> = (0..n).map(|i| item(&format!("t{i}"))).collect();
    // The second file repeats every 100th id of the first and adds new ones.
    let second: Vec<String> = (0..n)
        .map(|i| {
            if i % 100 == 0 {
                item(&format!("t{i}"))
            } else {
                item(&format!("u{i}"))
            }
        })
        .collect();
    let out = parse_trajectories(
        "r",
        [
            ("a.json", format!("[{}]", first.join(","))),
            ("b.json", format!("[{}]", second.join(","))),
        ],
    );
    assert_eq!(out.predictions.len(), 2 * n - n / 100);
    let reasons: Vec<_> = out
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.source, d.reason))
        .collect();
    assert_eq!(reasons.len(), n / 100);
    assert_eq!(reasons[0], "b.json[0]: duplicate trajectory id \"t0\"");
    assert_eq!(reasons[1], "b.json[100]: duplicate trajectory id \"t100\"");
    // Input order is kept.
    assert_eq!(out.predictions[n].question_id, "u1");
}

#[test]
fn session_state_sections_with_one_id_keep_the_first() {
    let text = "## Outcomes\n- id: s1\n- hard_success: false\n\n## Outcomes\n- id: s1\n- hard_success: true\n";
    let out = evolution_harness::parse_session_state("r", "S.md", text, &FailureRules::default());
    assert_eq!(out.predictions.len(), 1);
    assert!(!out.predictions[0].correct);
    assert_eq!(out.diagnostics[0].source, "S.md:5");
    assert_eq!(out.diagnostics[0].reason, "duplicate trajectory id \"s1\"");
}
