//! `skill-evolve diagnose --no-llm`: rule metrics of a run stored in SQLite.

use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::{Prediction, TraceStep};
use serde_json::json;

use crate::support::{assert_one_line_error, skill_evolve};

fn step(q: &str, n: u32, tool: &str, input: serde_json::Value) -> TraceStep {
    TraceStep {
        question_id: q.to_owned(),
        step: n,
        tool_name: tool.to_owned(),
        tool_input: input,
        raw_content: "{\"action\": \"x\"}".to_owned(),
        ..TraceStep::default()
    }
}

fn make_log(path: &std::path::Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let log = SqliteRunLog::open(path).unwrap();
        log.create_run("r1", json!({})).await.unwrap();
        let p = |id: &str, correct: bool, conf: f64| Prediction {
            question_id: id.to_owned(),
            task_type: "qa".to_owned(),
            prediction: "a".to_owned(),
            answer: "a".to_owned(),
            correct,
            answer_confidence: Some(conf),
            steps_used: 2,
            max_steps: 10,
            stop_reason: "submit".to_owned(),
            ..Prediction::default()
        };
        log.insert_predictions("r1", vec![p("q1", true, 0.9), p("q2", false, 0.95)])
            .await
            .unwrap();
        log.insert_traces(
            "r1",
            vec![
                step("q2", 1, "search", json!({"query": "release notes"})),
                step("q2", 2, "search", json!({"query": "release notes"})),
            ],
        )
        .await
        .unwrap();
    });
}

#[test]
fn rule_metrics_as_markdown_and_json() {
    let dir = tempfile::tempdir().unwrap();
    make_log(&dir.path().join("run.sqlite"));
    let out = skill_evolve(dir.path())
        .args([
            "diagnose",
            "--runlog",
            "run.sqlite",
            "--run-id",
            "r1",
            "--no-llm",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["n_questions"], 2);
    assert_eq!(report["accuracy"], 0.5);
    let q2 = &report["questions"][1];
    assert_eq!(q2["question_id"], "q2");
    assert_eq!(q2["trace_steps"], 2);
    assert_eq!(q2["confidence_calibration"], "high_conf_wrong");
    assert_eq!(q2["tool_usage"]["search"], 2);
    assert_eq!(q2["budget_usage"], 0.2);

    let out = skill_evolve(dir.path())
        .args([
            "diagnose",
            "--runlog",
            "run.sqlite",
            "--run-id",
            "r1",
            "--no-llm",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# Diagnosis of run `r1`"), "{text}");
    assert!(text.contains("2 questions, accuracy 50.0%"), "{text}");
    assert!(
        text.contains("| q2 | no | 0.95 | high_conf_wrong |"),
        "{text}"
    );

    let out = skill_evolve(dir.path())
        .args([
            "diagnose",
            "--runlog",
            "run.sqlite",
            "--run-id",
            "nope",
            "--no-llm",
        ])
        .output()
        .unwrap();
    assert_one_line_error(&out, "run.sqlite: no run with id \"nope\"");
}
