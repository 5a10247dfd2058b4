//! Record/replay round trips through a JSONL cassette.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use evolution_llm_openai::{CassetteError, CassetteMode, OpenAiProvider, Recorder, cassette_key};
use evolution_types::{ChatMessage, ChatOptions, LlmErrorKind, LlmProvider};

use crate::server::{Step, TestServer, completion};
use crate::{fast_config, provider, question};

/// A fresh path under the system temp dir, unique per test.
fn temp_cassette(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "evolution-llm-openai-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("cassette.jsonl")
}

/// A provider whose every call would fail: replay must never reach it.
fn dead_provider() -> OpenAiProvider {
    let mut config = fast_config("http://127.0.0.1:9/v1");
    config.retry.max_retries = 0;
    provider(config)
}

#[tokio::test]
async fn record_then_replay_offline() {
    let path = temp_cassette("round-trip");
    let server = TestServer::start(vec![
        Step::ok(completion("four")),
        Step::ok(completion("five")),
    ])
    .await;
    let other = vec![ChatMessage::user("2+3?")];
    let opts = ChatOptions::default()
        .with_temperature(0.0)
        .with_tag("first");

    let recorder = Recorder::open(
        provider(fast_config(&server.base_url())),
        &path,
        CassetteMode::Record,
        "test-model",
    )
    .await
    .expect("open");
    let a = recorder.chat(&question(), &opts).await.expect("live");
    let b = recorder
        .chat(&other, &ChatOptions::default())
        .await
        .expect("live");
    assert!(!a.cache_hit && !b.cache_hit);
    assert_eq!(server.count(), 2);
    let text = std::fs::read_to_string(&path).expect("cassette");
    assert_eq!(text.lines().count(), 2);
    assert!(!text.contains("sk-test-secret"));

    let replay = Recorder::open(dead_provider(), &path, CassetteMode::Replay, "test-model")
        .await
        .expect("open");
    // A different tag and timeout do not change the key.
    let opts2 = ChatOptions {
        timeout: Some(std::time::Duration::from_secs(1)),
        ..ChatOptions::default()
            .with_temperature(0.0)
            .with_tag("second")
    };
    for _ in 0..2 {
        let ra = replay.chat(&question(), &opts2).await.expect("replayed");
        let rb = replay
            .chat(&other, &ChatOptions::default())
            .await
            .expect("replayed");
        assert!(ra.cache_hit && rb.cache_hit);
        assert_eq!(ra, type_cache_hit(a.clone()));
        assert_eq!(rb, type_cache_hit(b.clone()));
    }
    assert_eq!(server.count(), 2, "replay never calls the provider");

    // A request the cassette does not hold is a typed miss, through both APIs.
    let new = vec![ChatMessage::user("never asked")];
    match replay.replay(&new, &ChatOptions::default().with_tag("judge")) {
        Err(CassetteError::Miss { key, tag }) => {
            assert_eq!(
                key,
                cassette_key("test-model", &new, &ChatOptions::default())
            );
            assert_eq!(tag.as_deref(), Some("judge"));
        }
        other => panic!("expected a miss, got {other:?}"),
    }
    let err = replay
        .chat(&new, &ChatOptions::default())
        .await
        .expect_err("miss");
    assert_eq!(err.kind(), LlmErrorKind::Other);
    assert!(err.message().starts_with("cassette miss"), "{err}");
    // The model is part of the key.
    let other_model = Recorder::open(dead_provider(), &path, CassetteMode::Replay, "other-model")
        .await
        .expect("open");
    assert!(matches!(
        other_model.replay(&question(), &opts),
        Err(CassetteError::Miss { .. })
    ));
}

fn type_cache_hit(mut r: evolution_types::LlmResponse) -> evolution_types::LlmResponse {
    r.cache_hit = true;
    r
}

#[tokio::test]
async fn record_if_missing_calls_only_for_new_requests() {
    let path = temp_cassette("if-missing");
    let server = TestServer::start(vec![
        Step::ok(completion("one")),
        Step::ok(completion("two")),
    ])
    .await;
    let live = || provider(fast_config(&server.base_url()));

    let rec = Recorder::open(live(), &path, CassetteMode::RecordIfMissing, "test-model")
        .await
        .expect("open");
    let first = rec
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("live");
    assert!(!first.cache_hit);
    let again = rec
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("replayed");
    assert!(again.cache_hit);
    assert_eq!(again.content, "one");
    assert_eq!(server.count(), 1);
    drop(rec);

    let rec = Recorder::open(live(), &path, CassetteMode::RecordIfMissing, "test-model")
        .await
        .expect("reopen");
    assert_eq!(
        rec.chat(&question(), &ChatOptions::default())
            .await
            .expect("hit")
            .content,
        "one"
    );
    let other = vec![ChatMessage::user("other")];
    assert_eq!(
        rec.chat(&other, &ChatOptions::default())
            .await
            .expect("live")
            .content,
        "two"
    );
    assert_eq!(server.count(), 2);
    drop(rec);

    let replay = Recorder::open(dead_provider(), &path, CassetteMode::Replay, "test-model")
        .await
        .expect("open");
    assert_eq!(
        replay
            .chat(&other, &ChatOptions::default())
            .await
            .expect("hit")
            .content,
        "two"
    );
}

#[tokio::test]
async fn repeated_requests_replay_in_recorded_order() {
    let path = temp_cassette("order");
    let server = TestServer::start(vec![
        Step::ok(completion("a")),
        Step::ok(completion("b")),
        Step::ok(completion("c")),
    ])
    .await;
    let rec = Recorder::open(
        provider(fast_config(&server.base_url())),
        &path,
        CassetteMode::Record,
        "test-model",
    )
    .await
    .expect("open");
    for _ in 0..3 {
        rec.chat(&question(), &ChatOptions::default())
            .await
            .expect("live");
    }
    let replay = Recorder::open(dead_provider(), &path, CassetteMode::Replay, "test-model")
        .await
        .expect("open");
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(
            replay
                .chat(&question(), &ChatOptions::default())
                .await
                .expect("hit")
                .content,
        );
    }
    assert_eq!(seen, ["a", "b", "c", "c"]);
}

#[tokio::test]
async fn failed_calls_are_not_recorded() {
    let path = temp_cassette("failures");
    let server = TestServer::start(vec![Step::status(401, r#"{"error":{"message":"no"}}"#)]).await;
    let rec = Recorder::open(
        provider(fast_config(&server.base_url())),
        &path,
        CassetteMode::Record,
        "test-model",
    )
    .await
    .expect("open");
    let err = rec
        .chat(&question(), &ChatOptions::default())
        .await
        .expect_err("401");
    assert_eq!(err.kind(), LlmErrorKind::Auth);
    assert_eq!(std::fs::read_to_string(&path).expect("file"), "");
}

#[tokio::test]
async fn bad_cassettes_are_typed_errors() {
    let missing = temp_cassette("missing");
    let r = Recorder::open(dead_provider(), &missing, CassetteMode::Replay, "m").await;
    assert!(matches!(r, Err(CassetteError::Io { .. })), "{r:?}");

    let corrupt = temp_cassette("corrupt");
    std::fs::write(&corrupt, "{\"key\": 1}\n").expect("write");
    let r = Recorder::open(dead_provider(), &corrupt, CassetteMode::Replay, "m").await;
    assert!(
        matches!(r, Err(CassetteError::Parse { line: 1, .. })),
        "{r:?}"
    );

    // A well-formed line whose request was edited after recording.
    let edited = temp_cassette("edited");
    let server = TestServer::start(vec![Step::ok(completion("x"))]).await;
    let rec = Recorder::open(
        provider(fast_config(&server.base_url())),
        &edited,
        CassetteMode::Record,
        "m",
    )
    .await
    .expect("open");
    rec.chat(&question(), &ChatOptions::default())
        .await
        .expect("live");
    let text = std::fs::read_to_string(&edited)
        .expect("read")
        .replace("2+2?", "2+5?");
    std::fs::write(&edited, text).expect("write");
    let r = Recorder::open(dead_provider(), &edited, CassetteMode::Replay, "m").await;
    assert!(
        matches!(r, Err(CassetteError::KeyMismatch { line: 1, .. })),
        "{r:?}"
    );
}
