use std::collections::BTreeMap;

use evolution_harness::{
    AgentReply, AgentRunner, EventLog, EventSink, HarnessEvent, InProcessRunner, NoEvents,
    RunRecorder, VersionedStore, Workspace,
};
use evolution_testkit::fixtures::question;
use evolution_testkit::{MemoryRunLog, MemoryVersionedStore};
use evolution_types::{GeneratedQuestion, RunLog, RunLogError, StoreError};

fn docs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn versioned_store_advances_rolls_back_and_keeps_history() {
    let store = MemoryVersionedStore::new(docs(&[("a.md", "one"), ("b.md", "bee")]));
    assert_eq!(store.current_version().unwrap(), "v1");
    let v2 = store
        .advance(&docs(&[("a.md", "two")]), "accept: E=25")
        .unwrap();
    assert_eq!(v2, "v2");
    assert_eq!(
        store.documents("v2").unwrap(),
        docs(&[("a.md", "two"), ("b.md", "bee")])
    );
    assert_eq!(store.documents("v1").unwrap()["a.md"], "one");
    store.rollback("v1").unwrap();
    assert_eq!(store.current_version().unwrap(), "v1");
    let v3 = store.advance(&docs(&[("c.md", "new")]), "another").unwrap();
    let history = store.history().unwrap();
    let names: Vec<_> = history
        .iter()
        .map(|h| (h.version.as_str(), h.parent.as_deref()))
        .collect();
    assert_eq!(
        names,
        [("v1", None), ("v2", Some("v1")), ("v3", Some("v1"))]
    );
    assert_eq!(history[1].message, "accept: E=25");
    // v3 was derived from the rolled-back-to v1, not from v2.
    assert_eq!(
        store.documents(&v3).unwrap(),
        docs(&[("a.md", "one"), ("b.md", "bee"), ("c.md", "new")])
    );
    assert!(matches!(
        store.rollback("v9"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.advance(&docs(&[("../x", "y")]), "bad"),
        Err(StoreError::InvalidName { .. })
    ));
    assert_eq!(store.history().unwrap().len(), 3);
}

#[tokio::test]
async fn recorder_writes_what_the_run_log_reads_and_replaces_reruns() {
    let agent = |_: &Workspace, q: &GeneratedQuestion| {
        Ok(AgentReply {
            prediction: q.question_id.clone(),
            steps: vec![
                serde_json::json!({"tool_name": "t"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ],
            ..AgentReply::default()
        })
    };
    let runner = InProcessRunner::new(agent);
    let qs = vec![question("q1", "t", "v"), question("q2", "t", "v")];
    let out = runner
        .run("run_gate_1", &Workspace::new("v1"), &qs)
        .await
        .unwrap();
    let log = MemoryRunLog::new();
    log.record(&out).await.unwrap();
    log.record(&out[..1]).await.unwrap();
    let preds = log.get_predictions("run_gate_1", None).await.unwrap();
    assert_eq!(preds.len(), 2);
    let only = log
        .get_traces("run_gate_1", Some(&["q2".to_owned()]))
        .await
        .unwrap();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0].question_id, "q2");
    assert_eq!(log.get_traces("run_gate_1", None).await.unwrap().len(), 2);
    assert_eq!(log.run_ids(), ["run_gate_1"]);
    assert!(matches!(
        log.get_predictions("nope", None).await,
        Err(RunLogError::RunNotFound { .. })
    ));
}

#[tokio::test]
async fn event_sinks_receive_typed_events() {
    let event = HarnessEvent::RunStarted {
        run_id: "r".into(),
        estimate: None,
    };
    let log = EventLog::new();
    log.emit(&event);
    NoEvents.emit(&event);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tx.emit(&event);
    assert_eq!(rx.recv().await, Some(event.clone()));
    drop(rx);
    tx.emit(&event); // a closed receiver is not an error
    let seen = std::sync::Mutex::new(0);
    let counter = |_: &HarnessEvent| *seen.lock().unwrap() += 1;
    counter.emit(&event);
    assert_eq!(*seen.lock().unwrap(), 1);
    assert_eq!(log.events(), std::slice::from_ref(&event));
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        serde_json::json!({"event": "run_started", "run_id": "r", "estimate": null})
    );
}
