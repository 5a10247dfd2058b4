use evolution_testkit::{MemoryRunLog, fixtures};
use evolution_types::{RunLog, RunLogError};

fn log() -> MemoryRunLog {
    let log = MemoryRunLog::new();
    log.insert_predictions([
        fixtures::prediction("r1", "q2", "t", true),
        fixtures::prediction("r1", "q1", "t", false),
        fixtures::prediction("r2", "q1", "t", true),
    ]);
    log.insert_traces([
        fixtures::trace_step("r1", "q2", 2, "view_node", "b"),
        fixtures::trace_step("r1", "q1", 1, "view_node", "c"),
        fixtures::trace_step("r1", "q2", 1, "search_similar", "a"),
    ]);
    log
}

#[tokio::test]
async fn filters_by_run_and_question() {
    let log = log();
    let all = log.get_predictions("r1", None).await.unwrap();
    assert_eq!(
        all.iter()
            .map(|p| p.question_id.as_str())
            .collect::<Vec<_>>(),
        ["q2", "q1"]
    );
    let some = log
        .get_predictions("r1", Some(&["q1".to_owned()]))
        .await
        .unwrap();
    assert_eq!(some.len(), 1);
    assert!(!some[0].correct);
}

#[tokio::test]
async fn traces_are_ordered_by_question_then_step() {
    let steps = log().get_traces("r1", None).await.unwrap();
    let order: Vec<_> = steps
        .iter()
        .map(|t| (t.question_id.as_str(), t.step))
        .collect();
    assert_eq!(order, [("q2", 1), ("q2", 2), ("q1", 1)]);
}

#[tokio::test]
async fn unknown_runs_and_injected_failures_are_errors() {
    let log = log();
    assert_eq!(
        log.get_traces("nope", None).await.unwrap_err(),
        RunLogError::RunNotFound {
            run_id: "nope".into()
        }
    );
    log.fail_with(RunLogError::Backend {
        message: "down".into(),
    });
    assert!(matches!(
        log.get_predictions("r1", None).await,
        Err(RunLogError::Backend { .. })
    ));
}
