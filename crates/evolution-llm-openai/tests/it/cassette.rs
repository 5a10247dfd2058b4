//! Record/replay round trips through a JSONL cassette.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use evolution_llm_cassette::{CassetteError, CassetteMode, Recorder, cassette_key};
use evolution_llm_openai::OpenAiProvider;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};

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

/// The cassette at `path` in `mode`, over a provider of `server`'s model `test-model`.
async fn live(server: &TestServer, path: &Path, mode: CassetteMode) -> Recorder<OpenAiProvider> {
    let llm = provider(fast_config(&server.base_url()));
    Recorder::open(llm, path, mode, "test-model")
        .await
        .expect("open")
}

/// The cassette at `path` replayed for `model`, over a provider it must never call.
async fn replaying(path: &Path, model: &str) -> Recorder<OpenAiProvider> {
    Recorder::open(dead_provider(), path, CassetteMode::Replay, model)
        .await
        .expect("open")
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

    let recorder = live(&server, &path, CassetteMode::Record).await;
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

    let replay = replaying(&path, "test-model").await;
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
        Err(CassetteError::Miss { key, tag, .. }) => {
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
    let other_model = replaying(&path, "other-model").await;
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
    let rec = live(&server, &path, CassetteMode::RecordIfMissing).await;
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

    let rec = live(&server, &path, CassetteMode::RecordIfMissing).await;
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

    let replay = replaying(&path, "test-model").await;
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
    let rec = live(&server, &path, CassetteMode::Record).await;
    for _ in 0..3 {
        rec.chat(&question(), &ChatOptions::default())
            .await
            .expect("live");
    }
    let replay = replaying(&path, "test-model").await;
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
    let rec = live(&server, &path, CassetteMode::Record).await;
    let err = rec
        .chat(&question(), &ChatOptions::default())
        .await
        .expect_err("401");
    assert_eq!(err.kind(), LlmErrorKind::Auth);
    drop(rec);
    // No call succeeded, so no cassette was written.
    assert!(!path.exists());
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

/// A provider that answers `echo: <last message>` and counts its calls.
#[derive(Debug, Default)]
struct Counting {
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl LlmProvider for Counting {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        _options: &ChatOptions,
    ) -> Result<evolution_types::LlmResponse, evolution_types::LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let last = messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(evolution_types::LlmResponse {
            content: format!("echo: {last}"),
            model: "m".into(),
            provider: "counting".into(),
            ..evolution_types::LlmResponse::default()
        })
    }
}

fn ask(text: &str) -> Vec<ChatMessage> {
    vec![ChatMessage::user(text)]
}

/// Asks `text` through `llm` with the default options.
async fn say(llm: &impl LlmProvider, text: &str) -> Result<LlmResponse, LlmError> {
    llm.chat(&ask(text), &ChatOptions::default()).await
}

/// The cassette at `path` over `inner`, recording what it does not hold.
async fn journal<P: LlmProvider>(inner: P, path: &Path) -> Recorder<P> {
    Recorder::open(inner, path, CassetteMode::RecordIfMissing, "m")
        .await
        .expect("open")
}

/// Records the answers to `texts` in the cassette at `path`, from a fresh counting provider.
async fn record(path: &Path, texts: &[&str]) {
    let rec = journal(Counting::default(), path).await;
    for text in texts {
        say(&rec, text).await.expect("live");
    }
}

/// Replays the answer to each of `texts` from the cassette at `path`: each must be there.
async fn replays(path: &Path, texts: &[&str]) {
    let replay = Recorder::open(Counting::default(), path, CassetteMode::Replay, "m")
        .await
        .expect("replay");
    for text in texts {
        say(&replay, text).await.expect("recorded");
    }
}

#[tokio::test]
async fn each_finished_call_is_on_disk_before_its_answer_returns() {
    let path = temp_cassette("durable");
    let rec = journal(Counting::default(), &path).await;
    for (n, text) in ["a", "b", "c"].into_iter().enumerate() {
        say(&rec, text).await.expect("live");
        let on_disk = std::fs::read_to_string(&path).expect("read");
        assert_eq!(on_disk.lines().count(), n + 1, "{on_disk}");
        assert!(on_disk.ends_with('\n'));
    }
}

#[tokio::test]
async fn a_torn_last_line_is_dropped_and_the_journal_goes_on() {
    let path = temp_cassette("torn");
    record(&path, &["a", "b", "c"]).await;
    // A kill in the middle of the third write: its line is cut short.
    let text = std::fs::read_to_string(&path).expect("read");
    let third_start = text
        .match_indices('\n')
        .nth(1)
        .map(|(i, _)| i + 1)
        .expect("3 lines");
    let torn = &text.as_bytes()[..third_start + 25];
    std::fs::write(&path, torn).expect("write torn");

    // Replay refuses it, naming the cut line, and leaves the file as it is.
    let replay = Recorder::open(Counting::default(), &path, CassetteMode::Replay, "m").await;
    assert!(
        matches!(replay, Err(CassetteError::TornLine { line: 3, .. })),
        "{replay:?}"
    );
    assert_eq!(std::fs::read(&path).expect("read"), torn);

    let inner = Counting::default();
    let rec = journal(&inner, &path).await;
    for text in ["a", "b"] {
        let reply = say(&rec, text).await.expect("hit");
        assert!(reply.cache_hit);
        assert_eq!(reply.content, format!("echo: {text}"));
    }
    assert_eq!(inner.calls.load(Ordering::SeqCst), 0);
    let again = say(&rec, "c").await.expect("asked again");
    assert!(!again.cache_hit);
    assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    drop(rec);

    // The torn bytes are gone: the file is whole lines again.
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.lines().count(), 3);
    replays(&path, &["a", "b", "c"]).await;
}

#[tokio::test]
async fn a_whole_last_line_without_its_newline_is_kept() {
    let path = temp_cassette("unterminated");
    record(&path, &["a"]).await;
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.trim_end_matches('\n')).expect("write");

    let inner = Counting::default();
    let rec = journal(&inner, &path).await;
    assert!(say(&rec, "a").await.expect("hit").cache_hit);
    say(&rec, "b").await.expect("live");
    assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    drop(rec);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.lines().count(), 2, "{text}");
    replays(&path, &["a", "b"]).await;
}

#[tokio::test]
async fn a_bad_line_before_the_last_is_still_an_error() {
    let path = temp_cassette("bad-middle");
    record(&path, &["a"]).await;
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, format!("{{\"key\": \n{text}")).expect("write");
    let r = Recorder::open(
        Counting::default(),
        &path,
        CassetteMode::RecordIfMissing,
        "m",
    )
    .await;
    assert!(
        matches!(r, Err(CassetteError::Parse { line: 1, .. })),
        "{r:?}"
    );
}

#[tokio::test]
async fn identical_requests_in_flight_at_once_reach_the_provider_once() {
    let path = temp_cassette("single-flight");
    let inner = Counting::default();
    let rec = journal(&inner, &path).await;
    let opts = ChatOptions::default();
    let (same, other) = (ask("same"), ask("other"));
    let (x, y, z) = tokio::join!(
        rec.chat(&same, &opts),
        rec.chat(&same, &opts),
        rec.chat(&other, &opts),
    );
    let (x, y, z) = (x.expect("x"), y.expect("y"), z.expect("z"));
    assert_eq!(x.content, "echo: same");
    assert_eq!(y.content, "echo: same");
    assert_eq!(z.content, "echo: other");
    assert_eq!(u8::from(x.cache_hit) + u8::from(y.cache_hit), 1);
    assert_eq!(inner.calls.load(Ordering::SeqCst), 2);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.lines().count(), 2);
}
