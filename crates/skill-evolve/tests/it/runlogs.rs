//! Run logs for the tests: runs written into a SQLite run log the way an
//! agent's harness would, the records they are made of, and reading a run
//! log back.

use std::path::Path;

use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::{Prediction, TraceStep};
use serde_json::{Value, json};

/// Runs `work` on the run log at `path` (created when missing) and returns
/// what it returns.
pub(crate) fn with_log<T>(path: &Path, work: impl AsyncFnOnce(&SqliteRunLog) -> T) -> T {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let log = SqliteRunLog::open(path).unwrap();
        work(&log).await
    })
}

/// Adds run `run_id` to the run log at `path` with these predictions and
/// trace steps (an empty list is not inserted).
pub(crate) fn write_run(
    path: &Path,
    run_id: &str,
    predictions: Vec<Prediction>,
    steps: Vec<TraceStep>,
) {
    with_log(path, async |log| {
        log.create_run(run_id, json!({})).await.unwrap();
        if !predictions.is_empty() {
            log.insert_predictions(run_id, predictions).await.unwrap();
        }
        if !steps.is_empty() {
            log.insert_traces(run_id, steps).await.unwrap();
        }
    });
}

/// A `qa` answer to question `id`: `prediction`, right or not, given with
/// confidence 0.9 after 2 of at most 10 steps.
pub(crate) fn prediction(id: &str, prediction: &str, correct: bool) -> Prediction {
    Prediction {
        question_id: id.to_owned(),
        task_type: "qa".to_owned(),
        prediction: prediction.to_owned(),
        correct,
        answer_confidence: Some(0.9),
        steps_used: 2,
        max_steps: 10,
        stop_reason: "submit".to_owned(),
        ..Prediction::default()
    }
}

/// Step `n` of question `q`'s trace: a call of `tool` with `input`.
pub(crate) fn step(q: &str, n: u32, tool: &str, input: Value) -> TraceStep {
    TraceStep {
        question_id: q.to_owned(),
        step: n,
        tool_name: tool.to_owned(),
        tool_input: input,
        raw_content: "{\"action\": \"x\"}".to_owned(),
        ..TraceStep::default()
    }
}
