//! Integration tests of `evolution-runlog-sqlite` through its public API, on real SQLite files.

mod concurrency;
mod import;
mod reads;
mod results;
mod schema;
mod writes;

use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::{JsonMap, Prediction, TraceStep};
use serde_json::json;

/// A fresh log in a temporary directory.
pub(crate) fn fresh_log() -> (tempfile::TempDir, SqliteRunLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = SqliteRunLog::open(dir.path().join("runs.sqlite")).unwrap();
    (dir, log)
}

/// A prediction with an unknown field in `extra`.
pub(crate) fn prediction(question_id: &str, correct: bool) -> Prediction {
    let mut extra = JsonMap::new();
    extra.insert("judge".into(), json!({"model": "m", "score": 0.75}));
    Prediction {
        question_id: question_id.into(),
        task_type: "Action Reasoning".into(),
        video_id: "vid-1".into(),
        prediction: "B".into(),
        answer: if correct { "B" } else { "C" }.into(),
        correct,
        answer_confidence: Some(0.8),
        steps_used: 3,
        max_steps: 10,
        stop_reason: "submit".into(),
        extra,
        ..Prediction::default()
    }
}

/// A trace step with an unknown field in `extra`.
pub(crate) fn step(question_id: &str, step: u32) -> TraceStep {
    let mut extra = JsonMap::new();
    extra.insert("latency_ms".into(), json!(step * 10));
    TraceStep {
        question_id: question_id.into(),
        step,
        tool_name: "view_node".into(),
        tool_input: json!({"node": format!("L1_{step}")}),
        tool_output: "第一段 output ✓".into(),
        thought: "look closer".into(),
        raw_content: "{\"action\": \"view_node\"}".into(),
        extra,
        ..TraceStep::default()
    }
}
