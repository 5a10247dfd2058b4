//! The write side: runs, all-or-none inserts, duplicates and run-id checks.

use evolution_runlog_sqlite::SqliteRunLogError;
use evolution_types::RunLog;
use serde_json::json;

use crate::{fresh_log, prediction, step};

#[tokio::test]
async fn runs_carry_their_metadata_and_ids_are_unique() {
    let (_dir, log) = fresh_log();
    let meta =
        json!({"model": "deepseek", "dataset": {"name": "dev", "n": 200}, "版本": "v000003"});
    log.create_run("r1", meta.clone()).await.unwrap();
    log.create_run("r2", json!(null)).await.unwrap();
    assert_eq!(log.run_metadata("r1").await.unwrap(), meta);
    assert!(matches!(
        log.create_run("r1", json!({})).await,
        Err(SqliteRunLogError::RunExists { run_id }) if run_id == "r1"
    ));
    // The failed create did not touch the stored metadata.
    assert_eq!(log.run_metadata("r1").await.unwrap(), meta);
    let runs = log.runs().await.unwrap();
    let ids: Vec<_> = runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["r1", "r2"]);
    assert!(matches!(
        log.run_metadata("r9").await,
        Err(SqliteRunLogError::RunNotFound { .. })
    ));
}

#[tokio::test]
async fn insert_into_unknown_run_is_refused() {
    let (_dir, log) = fresh_log();
    assert!(matches!(
        log.insert_predictions("ghost", vec![prediction("q1", true)]).await,
        Err(SqliteRunLogError::RunNotFound { run_id }) if run_id == "ghost"
    ));
    assert!(matches!(
        log.insert_traces("ghost", vec![step("q1", 1)]).await,
        Err(SqliteRunLogError::RunNotFound { .. })
    ));
}

#[tokio::test]
async fn a_duplicate_fails_the_whole_batch() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let batch = vec![
        prediction("q1", true),
        prediction("q2", true),
        prediction("q1", false),
    ];
    assert!(matches!(
        log.insert_predictions("r1", batch).await,
        Err(SqliteRunLogError::Duplicate { what, .. }) if what.contains("\"q1\"")
    ));
    assert!(log.get_predictions("r1", None).await.unwrap().is_empty());

    let steps = vec![step("q1", 1), step("q1", 2), step("q1", 2)];
    assert!(matches!(
        log.insert_traces("r1", steps).await,
        Err(SqliteRunLogError::Duplicate { what, .. }) if what.contains("step 2")
    ));
    assert!(log.get_traces("r1", None).await.unwrap().is_empty());

    // A later batch duplicating a stored row is refused too; the stored row stays.
    log.insert_traces("r1", vec![step("q1", 1)]).await.unwrap();
    assert!(
        log.insert_traces("r1", vec![step("q1", 2), step("q1", 1)])
            .await
            .is_err()
    );
    assert_eq!(log.get_traces("r1", None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn records_naming_another_run_are_refused() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let mut foreign = prediction("q1", true);
    foreign.run_id = "r2".into();
    assert!(matches!(
        log.insert_predictions("r1", vec![prediction("q0", true), foreign]).await,
        Err(SqliteRunLogError::RunMismatch { expected, found }) if expected == "r1" && found == "r2"
    ));
    let mut own = step("q1", 1);
    own.run_id = "r1".into();
    assert_eq!(log.insert_traces("r1", vec![own]).await.unwrap(), 1);
    assert!(log.get_predictions("r1", None).await.unwrap().is_empty());
}

#[tokio::test]
async fn data_survives_reopening_the_file() {
    let (dir, log) = fresh_log();
    log.create_run("r1", json!({"k": 1})).await.unwrap();
    log.insert_predictions("r1", vec![prediction("q1", true)])
        .await
        .unwrap();
    drop(log);
    let reopened =
        evolution_runlog_sqlite::SqliteRunLog::open(dir.path().join("runs.sqlite")).unwrap();
    assert_eq!(reopened.get_predictions("r1", None).await.unwrap().len(), 1);
    assert_eq!(reopened.run_metadata("r1").await.unwrap(), json!({"k": 1}));
}

#[tokio::test]
async fn replace_outcomes_creates_the_run_and_replaces_a_question_whole() {
    let (_dir, log) = fresh_log();
    log.replace_outcomes(
        "r",
        vec![prediction("q1", false), prediction("q2", true)],
        vec![step("q1", 1), step("q1", 2), step("q2", 1)],
    )
    .await
    .unwrap();
    // q1 again: its prediction and every old step are replaced, q2 untouched.
    let n = log
        .replace_outcomes("r", vec![prediction("q1", true)], vec![step("q1", 1)])
        .await
        .unwrap();
    assert_eq!(n, 1);
    let preds = log.get_predictions("r", None).await.unwrap();
    assert_eq!(preds.len(), 2);
    assert!(preds.iter().all(|p| p.correct));
    let q1: Vec<_> = log
        .get_traces("r", Some(&["q1".to_owned()]))
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.step)
        .collect();
    assert_eq!(q1, [1]);
    assert_eq!(
        log.get_traces("r", Some(&["q2".to_owned()]))
            .await
            .unwrap()
            .len(),
        1
    );
    // A record of another run refuses the whole batch.
    let mut foreign = prediction("q3", true);
    foreign.run_id = "other".into();
    assert!(matches!(
        log.replace_outcomes("r", vec![prediction("q1", false), foreign], vec![])
            .await,
        Err(SqliteRunLogError::RunMismatch { .. })
    ));
    let after = log
        .get_predictions("r", Some(&["q1".to_owned()]))
        .await
        .unwrap();
    assert!(
        after.iter().all(|p| p.correct),
        "nothing of a refused batch is kept"
    );
}
