//! Diagnosis and evolution results stored as JSON per run.

use evolution_runlog_sqlite::SqliteRunLogError;
use evolution_types::{DiagnosisResult, EvolutionResult};
use serde_json::json;

use crate::fresh_log;

#[tokio::test]
async fn diagnosis_results_round_trip_in_order() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let first = DiagnosisResult {
        run_id: "r1".into(),
        ..DiagnosisResult::default()
    };
    let mut second = first.clone();
    second.n_questions = 7;
    log.store_diagnosis(&first).await.unwrap();
    log.store_diagnosis(&second).await.unwrap();
    assert_eq!(log.diagnoses("r1").await.unwrap(), [first, second]);
}

#[tokio::test]
async fn evolution_results_round_trip() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let result = EvolutionResult {
        run_id: "r1".into(),
        source_version: "v000002".into(),
        ..EvolutionResult::default()
    };
    log.store_evolution(&result).await.unwrap();
    assert_eq!(log.evolutions("r1").await.unwrap(), [result]);
    assert!(log.diagnoses("r1").await.unwrap().is_empty());
}

#[tokio::test]
async fn results_of_an_unknown_run_are_refused() {
    let (_dir, log) = fresh_log();
    let orphan = DiagnosisResult {
        run_id: "ghost".into(),
        ..DiagnosisResult::default()
    };
    assert!(matches!(
        log.store_diagnosis(&orphan).await,
        Err(SqliteRunLogError::RunNotFound { .. })
    ));
    assert!(matches!(
        log.evolutions("ghost").await,
        Err(SqliteRunLogError::RunNotFound { .. })
    ));
}
