//! The handoff provider: answered requests come from the answers file, a request without an
//! answer is written to the prompt files and never returns, a round completes once the misses
//! stop, and a request that changed since an earlier round says how.

use std::time::Duration;

use evolution_llm_cassette::{Handoff, cassette_key};
use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
use serde_json::Value;

#[tokio::test]
async fn unanswered_requests_are_handed_off_and_answered_ones_replied() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("handoff");
    let asked = [ChatMessage::user("Summarize the failures.")];
    let options = ChatOptions::default().with_tag("reflect.skill");
    let handoff = Handoff::open(&folder, "m").unwrap();
    assert!(
        !folder.exists(),
        "nothing is written before a request is handed off"
    );

    // The call never returns; the round completes once no other miss follows.
    let call = tokio::time::timeout(Duration::from_millis(200), handoff.chat(&asked, &options));
    assert!(call.await.is_err(), "an unanswered call must not return");
    tokio::time::timeout(Duration::from_secs(5), handoff.waiting())
        .await
        .expect("the round completes");
    assert_eq!(handoff.waiting_count(), 1);
    let waiting: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(folder.join("prompts.json")).unwrap())
            .unwrap();
    let key = cassette_key("m", &asked, &options);
    assert_eq!(waiting[0]["key"], key.as_str());
    assert_eq!(waiting[0]["tag"], "reflect.skill");
    let prompts = std::fs::read_to_string(folder.join("prompts.md")).unwrap();
    assert!(prompts.contains("Summarize the failures."), "{prompts}");

    // Answered: the next run's call replies with the answer.
    std::fs::write(
        folder.join("answers.jsonl"),
        format!(
            "{}\n",
            serde_json::json!({"key": key, "reply": "Two misreadings."})
        ),
    )
    .unwrap();
    let next = Handoff::open(&folder, "m").unwrap();
    next.clear_prompts().unwrap();
    assert!(!folder.join("prompts.md").exists());
    let reply = next.chat(&asked, &options).await.unwrap();
    assert_eq!(reply.content, "Two misreadings.");
    assert_eq!(next.waiting_count(), 0);

    // The same purpose, asked differently: handed off, saying what changed.
    let changed = [ChatMessage::user("Summarize the failures, briefly.")];
    let call = tokio::time::timeout(Duration::from_millis(200), next.chat(&changed, &options));
    assert!(call.await.is_err());
    let waiting: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(folder.join("prompts.json")).unwrap())
            .unwrap();
    let changed_note = waiting[0]["changed"].as_str().unwrap_or_default();
    assert!(
        changed_note.contains("reflect.skill") && changed_note.contains("message 1 of 1"),
        "{waiting:?}"
    );
}
