//! JSONL import: whole files in one transaction, bad lines named, nothing half-imported.

use std::path::PathBuf;

use evolution_runlog_sqlite::SqliteRunLogError;
use evolution_types::RunLog;
use serde_json::json;

use crate::fresh_log;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const PREDICTIONS: &str = r#"{"question_id": "q1", "task_type": "Counting", "prediction": "3", "answer": "3", "correct": true, "stop_reason": "submit", "steps_used": 4, "max_steps": 10, "custom_score": 0.5}

{"question_id": "q2", "prediction": "", "correct": false, "stop_reason": "error", "error": "HTTP 502", "nested": {"a": [1, 2]}}
"#;

const TRACES: &str = r#"{"question_id": "q1", "step": 1, "tool_name": "view_node", "tool_input": {"node": "L0_1"}, "tool_output": "root", "thought": "start", "raw_content": "x", "tokens": 120}
{"question_id": "q1", "step": 2, "tool_name": "submit", "tool_input": "3", "tool_output": "", "thought": "done", "raw_content": "y"}
"#;

#[tokio::test]
async fn jsonl_files_import_with_unknown_fields_kept() {
    let (dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let preds = write(&dir, "predictions.jsonl", PREDICTIONS);
    let traces = write(&dir, "traces.jsonl", TRACES);
    assert_eq!(log.import_predictions_jsonl("r1", &preds).await.unwrap(), 2);
    assert_eq!(log.import_traces_jsonl("r1", &traces).await.unwrap(), 2);

    let read = log.get_predictions("r1", None).await.unwrap();
    assert_eq!(read[0].extra["custom_score"], json!(0.5));
    assert_eq!(read[1].error.as_deref(), Some("HTTP 502"));
    assert_eq!(read[1].extra["nested"], json!({"a": [1, 2]}));
    assert!(read.iter().all(|p| p.run_id == "r1"));

    let steps = log.get_traces("r1", None).await.unwrap();
    assert_eq!(steps[0].extra["tokens"], json!(120));
    assert_eq!(steps[1].tool_input, json!("3"));

    // Every field of the file comes back: a record re-serialized equals the line it came from
    // plus the run id.
    let first_line: serde_json::Value =
        serde_json::from_str(PREDICTIONS.lines().next().unwrap()).unwrap();
    let mut back = serde_json::to_value(&read[0]).unwrap();
    back.as_object_mut().unwrap().remove("run_id");
    for (key, value) in first_line.as_object().unwrap() {
        assert_eq!(&back[key], value, "field {key}");
    }
}

#[tokio::test]
async fn a_bad_line_names_itself_and_imports_nothing() {
    let (dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let text = format!("{PREDICTIONS}{{\"question_id\": \"q3\", \"correct\": \"yes\"}}\n");
    let path = write(&dir, "bad.jsonl", &text);
    match log.import_predictions_jsonl("r1", &path).await {
        Err(SqliteRunLogError::Jsonl { line, path: p, .. }) => {
            assert_eq!(line, 4);
            assert_eq!(p, path);
        }
        other => panic!("expected a JSONL error, got {other:?}"),
    }
    assert!(log.get_predictions("r1", None).await.unwrap().is_empty());

    let missing_step = write(&dir, "t.jsonl", "{\"question_id\": \"q1\"}\n");
    assert!(matches!(
        log.import_traces_jsonl("r1", &missing_step).await,
        Err(SqliteRunLogError::Jsonl { line: 1, .. })
    ));
    assert!(matches!(
        log.import_traces_jsonl("r1", dir.path().join("absent.jsonl"))
            .await,
        Err(SqliteRunLogError::Io { .. })
    ));
}
