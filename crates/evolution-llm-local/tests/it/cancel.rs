use std::time::Duration;

use evolution_types::{ChatMessage, ChatOptions, LlmErrorKind, LlmProvider};
use serde_json::json;

use crate::support::model;

/// Options that force a long generation: a JSON string of at least 300 characters (larger bounds make each grammar step slow).
fn long_generation() -> ChatOptions {
    ChatOptions::default()
        .with_json_schema(json!({"type": "string", "minLength": 300}))
        .with_max_tokens(2000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_stops_generation_and_frees_the_slot() {
    let llm = model(1).await;
    let messages = [ChatMessage::user("Write a long essay about rivers.")];
    let options = long_generation();
    // Boxed, so that `drop` below really drops the future (a `pin!`ned one lives to scope end).
    let mut call = Box::pin(llm.chat(&messages, &options));
    // Let generation start and run for a while, then drop the future.
    let started = tokio::time::timeout(Duration::from_millis(800), &mut call).await;
    assert!(started.is_err(), "the long generation finished early");
    assert_eq!(
        llm.available_slots(),
        0,
        "the generation holds the only slot"
    );
    drop(call);
    // The slot comes back long before a 300-character generation could have finished.
    let freed = tokio::time::timeout(Duration::from_secs(10), async {
        while llm.available_slots() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(freed.is_ok(), "the slot was not freed after cancellation");
    // And the next call gets it.
    let reply = llm
        .chat(
            &[ChatMessage::user("Say hello.")],
            &ChatOptions::default().with_max_tokens(10),
        )
        .await
        .expect("after cancel");
    assert!(!reply.content.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_limit_stops_a_generation() {
    let llm = model(1).await;
    let options = ChatOptions {
        timeout: Some(Duration::from_millis(300)),
        ..long_generation()
    };
    let err = llm
        .chat(&[ChatMessage::user("Write a long essay.")], &options)
        .await
        .expect_err("timeout");
    assert_eq!(err.kind(), LlmErrorKind::Timeout, "{err}");
    assert_eq!(llm.available_slots(), 1);
}
