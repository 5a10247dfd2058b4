//! The read port: typed records back, unknown fields intact, in log order, filtered by question.

use evolution_types::{RunLog, RunLogError};
use serde_json::json;

use crate::{fresh_log, prediction, step};

#[tokio::test]
async fn predictions_round_trip_with_extra_fields_in_insertion_order() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({"model": "m"})).await.unwrap();
    let written = vec![
        prediction("q2", true),
        prediction("q1", false),
        prediction("q3", true),
    ];
    assert_eq!(
        log.insert_predictions("r1", written.clone()).await.unwrap(),
        3
    );

    let read = log.get_predictions("r1", None).await.unwrap();
    let expected: Vec<_> = written
        .into_iter()
        .map(|mut p| {
            p.run_id = "r1".into();
            p
        })
        .collect();
    assert_eq!(read, expected);
    assert_eq!(read[0].extra["judge"], json!({"model": "m", "score": 0.75}));
}

#[tokio::test]
async fn traces_come_back_by_question_then_step() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let written = vec![
        step("q2", 2),
        step("q1", 2),
        step("q2", 1),
        step("q1", 1),
        step("q1", 10),
    ];
    log.insert_traces("r1", written).await.unwrap();
    let read = log.get_traces("r1", None).await.unwrap();
    let order: Vec<_> = read
        .iter()
        .map(|t| (t.question_id.as_str(), t.step))
        .collect();
    assert_eq!(
        order,
        [("q1", 1), ("q1", 2), ("q1", 10), ("q2", 1), ("q2", 2)]
    );
    assert!(read.iter().all(|t| t.run_id == "r1"));
    assert_eq!(read[2].extra["latency_ms"], json!(100));
    assert_eq!(read[2].tool_input, json!({"node": "L1_10"}));
    assert_eq!(read[2].tool_output, "第一段 output ✓");
}

#[tokio::test]
async fn question_filter_selects_only_those_questions() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    log.insert_predictions(
        "r1",
        (0..50)
            .map(|i| prediction(&format!("q{i}"), i % 2 == 0))
            .collect(),
    )
    .await
    .unwrap();
    log.insert_traces(
        "r1",
        (0..50)
            .flat_map(|i| [step(&format!("q{i}"), 1), step(&format!("q{i}"), 2)])
            .collect(),
    )
    .await
    .unwrap();

    let wanted = vec!["q7".to_owned(), "q3".to_owned(), "missing".to_owned()];
    let preds = log.get_predictions("r1", Some(&wanted)).await.unwrap();
    let ids: Vec<_> = preds.iter().map(|p| p.question_id.as_str()).collect();
    assert_eq!(ids, ["q3", "q7"]);
    let traces = log.get_traces("r1", Some(&wanted)).await.unwrap();
    assert_eq!(traces.len(), 4);
    assert!(
        traces
            .iter()
            .all(|t| t.question_id == "q3" || t.question_id == "q7")
    );

    // An empty filter selects nothing; a huge one (past SQLite's parameter limit) works.
    assert!(
        log.get_predictions("r1", Some(&[]))
            .await
            .unwrap()
            .is_empty()
    );
    let huge: Vec<String> = (0..40_000).map(|i| format!("q{i}")).collect();
    assert_eq!(
        log.get_predictions("r1", Some(&huge)).await.unwrap().len(),
        50
    );
}

#[tokio::test]
async fn runs_are_kept_apart() {
    let (_dir, log) = fresh_log();
    log.create_run("a", json!({})).await.unwrap();
    log.create_run("b", json!({})).await.unwrap();
    log.insert_predictions("a", vec![prediction("q1", true)])
        .await
        .unwrap();
    log.insert_predictions("b", vec![prediction("q1", false), prediction("q2", true)])
        .await
        .unwrap();
    assert_eq!(log.get_predictions("a", None).await.unwrap().len(), 1);
    assert_eq!(log.get_predictions("b", None).await.unwrap().len(), 2);
    assert!(log.get_traces("a", None).await.unwrap().is_empty());
}

#[tokio::test]
async fn unknown_run_is_run_not_found_through_the_port() {
    let (_dir, log) = fresh_log();
    let port: &dyn RunLog = &log;
    assert_eq!(
        port.get_predictions("nope", None).await,
        Err(RunLogError::RunNotFound {
            run_id: "nope".into()
        })
    );
    assert_eq!(
        port.get_traces("nope", Some(&["q".to_owned()])).await,
        Err(RunLogError::RunNotFound {
            run_id: "nope".into()
        })
    );
}

#[tokio::test]
async fn a_damaged_record_is_reported_as_corrupt() {
    let (dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    log.insert_predictions("r1", vec![prediction("q1", true)])
        .await
        .unwrap();
    let raw = rusqlite::Connection::open(dir.path().join("runs.sqlite")).unwrap();
    raw.execute("UPDATE predictions SET record = '{\"no question\": 1}'", [])
        .unwrap();
    assert!(matches!(
        log.get_predictions("r1", None).await,
        Err(RunLogError::Corrupt { run_id, .. }) if run_id == "r1"
    ));
}

#[test]
fn works_without_a_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let log = evolution_runlog_sqlite::SqliteRunLog::open(dir.path().join("x.sqlite")).unwrap();
    // Outside a tokio runtime the work runs inline, so a trivial executor suffices.
    let fut = async {
        log.create_run("r", json!({})).await.unwrap();
        log.insert_traces("r", vec![step("q", 1)]).await.unwrap();
        log.get_traces("r", None).await.unwrap()
    };
    let traces = block_on(fut);
    assert_eq!(traces.len(), 1);
}

/// Polls a future to completion on this thread, outside any tokio runtime.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}
