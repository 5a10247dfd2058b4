//! The adapter wiring: the on-disk store as a `VersionedStore`, the SQLite
//! log as a `RunRecorder`, the checkpoint file.

use std::collections::BTreeMap;

use evolution_harness::{
    CheckpointError, InProcessRunner, LoopState, QuestionOutcome, RunRecorder, VersionedStore,
    Workspace,
};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::FsStore;
use evolution_store_fs::{FileCheckpoint, FsVersionedStore};
use evolution_testkit::fixtures::question;
use evolution_types::{RunLog, StoreError};

fn store(dir: &std::path::Path) -> FsVersionedStore {
    let fs = FsStore::init(dir.join("s"), [("a.md", "one\n")], "initial").unwrap();
    FsVersionedStore::new(fs)
}

#[test]
fn the_fs_store_advances_rolls_back_and_lists_written_versions() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let v1 = store.current_version().unwrap();
    let v2 = store
        .advance(
            &BTreeMap::from([("b.md".to_owned(), "two\n".to_owned())]),
            "add b",
        )
        .unwrap();
    assert_eq!(store.current_version().unwrap(), v2);
    let docs = store.documents(&v2).unwrap();
    assert_eq!(docs.keys().collect::<Vec<_>>(), ["a.md", "b.md"]);
    assert_eq!(store.documents(&v1).unwrap().len(), 1);
    store.rollback(&v1).unwrap();
    assert_eq!(store.current_version().unwrap(), v1);
    // The history lists versions written, not pointer moves.
    let history = store.history().unwrap();
    let rows: Vec<_> = history
        .iter()
        .map(|h| (h.version.as_str(), h.parent.as_deref(), h.message.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            (v1.as_str(), None, "initial"),
            (v2.as_str(), Some(v1.as_str()), "add b")
        ]
    );
    assert!(matches!(
        store.documents("v9"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.documents("not-a-version"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.rollback("v000009"),
        Err(StoreError::NotFound { .. })
    ));
    let bad = BTreeMap::from([("../x.md".to_owned(), "x".to_owned())]);
    assert!(store.advance(&bad, "escape").is_err());
    assert_eq!(
        store.current_version().unwrap(),
        v1,
        "a refused advance changed nothing"
    );
}

#[test]
fn the_checkpoint_file_round_trips_and_refuses_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loop.json");
    let checkpoint = FileCheckpoint::new(&path);
    assert_eq!(LoopState::load(&checkpoint).unwrap(), None);
    let state: LoopState = serde_json::from_value(serde_json::json!({
        "epoch": 1, "train_version": "v000002", "proposals": null, "judged": 0,
        "gatekeeper": serde_json::to_value(evolution_harness::Gatekeeper::new(
            evolution_harness::ValidationConfig::default())).unwrap(),
        "records": [], "probations": [], "rejected": [], "train_accuracy": [0.5],
        "edit_history": [["a.md"]], "stale_epochs": 0, "initial_version": "v000001",
        "stopped": null
    }))
    .unwrap();
    state.save(&checkpoint).unwrap();
    assert_eq!(LoopState::load(&checkpoint).unwrap(), Some(state.clone()));
    std::fs::write(&path, "{ torn").unwrap();
    assert!(matches!(
        LoopState::load(&checkpoint),
        Err(CheckpointError::Corrupt { .. })
    ));
    std::fs::write(&path, "{\"epoch\": \"one\"}").unwrap();
    let foreign = LoopState::load(&checkpoint).unwrap_err();
    assert!(
        foreign.to_string().contains("not a loop state"),
        "{foreign}"
    );
    let missing_dir = FileCheckpoint::new(dir.path().join("no/such/dir/loop.json"));
    assert!(matches!(
        state.save(&missing_dir),
        Err(CheckpointError::Backend { .. })
    ));
}

#[tokio::test]
async fn the_sqlite_log_records_outcomes_and_a_rerun_replaces_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = SqliteRunLog::open(dir.path().join("runs.sqlite")).unwrap();
    let questions = vec![question("q1", "a", "v"), question("q2", "a", "v")];
    let ws = Workspace::new("v1");
    let wrong = InProcessRunner::new(|_: &Workspace, _: &_| {
        Ok(evolution_harness::AgentReply {
            prediction: "wrong".into(),
            ..Default::default()
        })
    });
    let outcomes: Vec<QuestionOutcome> =
        evolution_harness::AgentRunner::run(&wrong, "r", &ws, &questions)
            .await
            .unwrap();
    log.record(&outcomes).await.unwrap();
    let stored = log.get_predictions("r", None).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|p| !p.correct));
    // Recording a question again replaces it.
    let right = InProcessRunner::new(|_: &Workspace, q: &evolution_types::GeneratedQuestion| {
        Ok(evolution_harness::AgentReply {
            prediction: q.answer.clone(),
            ..Default::default()
        })
    });
    let again = evolution_harness::AgentRunner::run(&right, "r", &ws, &questions[..1])
        .await
        .unwrap();
    log.record(&again).await.unwrap();
    let stored = log.get_predictions("r", None).await.unwrap();
    let mut flags: Vec<_> = stored
        .iter()
        .map(|p| (p.question_id.as_str(), p.correct))
        .collect();
    flags.sort_unstable();
    assert_eq!(flags, [("q1", true), ("q2", false)]);
}
