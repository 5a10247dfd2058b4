//! Happy paths of the streaming (server-sent events) mode.

use std::time::Duration;

use evolution_llm_openai::PROVIDER_NAME;
use evolution_types::{ChatOptions, LlmErrorKind, LlmProvider};
use serde_json::json;

use crate::server::{Step, TestServer, completion, delta, events, stream_end};
use crate::{fast_config, provider, question};

fn streaming(base_url: &str) -> evolution_llm_openai::OpenAiConfig {
    let mut c = fast_config(base_url);
    c.stream = true;
    c
}

#[tokio::test]
async fn stream_fills_every_field_with_timings() {
    let ms = Duration::from_millis;
    let mut script = vec![
        (ms(120), delta("reasoning_content", "think ")),
        (ms(0), delta("reasoning_content", "hard")),
        (ms(30), delta("content", "The answer")),
        (ms(250), delta("content", " is 4.")),
    ];
    script.extend(stream_end(21, 9).into_iter().map(|e| (ms(0), e)));
    let server = TestServer::start(vec![Step::Sse {
        events: script,
        complete: true,
    }])
    .await;
    let llm = provider(streaming(&server.base_url()));

    let r = llm
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    assert_eq!(r.content, "The answer is 4.");
    assert_eq!(r.thinking, "think hard");
    assert_eq!(r.model, "stream-model");
    assert_eq!(r.provider, PROVIDER_NAME);
    assert_eq!(r.call_id, "chatcmpl-s");
    assert_eq!((r.prompt_tokens, r.completion_tokens), (21, 9));
    let ttft = r.ttft_ms.expect("ttft when streaming");
    let gap = r.max_inter_token_ms.expect("gap when streaming");
    // The server waits 120 ms before the first token and 250 ms before the last.
    assert!((120..5_000).contains(&ttft), "ttft {ttft}");
    assert!((250..5_000).contains(&gap), "gap {gap}");
    assert!(r.latency_ms >= ttft + gap, "{r:?}");
    assert!(!r.cache_hit);

    let body = &server.received()[0].body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn stream_without_done_but_with_finish_reason_is_accepted() {
    let data = vec![
        delta("content", "ok"),
        json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}).to_string(),
    ];
    let server = TestServer::start(vec![Step::Sse {
        events: events(data),
        complete: true,
    }])
    .await;
    let r = provider(streaming(&server.base_url()))
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    assert_eq!(r.content, "ok");
    assert_eq!((r.prompt_tokens, r.completion_tokens), (0, 0));
    assert_eq!(r.max_inter_token_ms, Some(0));
}

#[tokio::test]
async fn a_server_that_ignores_stream_is_read_as_plain() {
    let server = TestServer::start(vec![Step::ok(completion("plain"))]).await;
    let r = provider(streaming(&server.base_url()))
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    assert_eq!(r.content, "plain");
    assert_eq!(r.ttft_ms, None);
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_server_error() {
    let data = vec![
        delta("content", "par"),
        json!({"error": {"message": "overloaded", "type": "server_error"}}).to_string(),
    ];
    let server = TestServer::start(vec![Step::Sse {
        events: events(data),
        complete: true,
    }])
    .await;
    let mut config = streaming(&server.base_url());
    config.retry.max_retries = 0;
    let err = provider(config)
        .chat(&question(), &ChatOptions::default())
        .await
        .expect_err("error event");
    assert_eq!(err.kind(), LlmErrorKind::ServerError);
    assert!(err.message().contains("overloaded"), "{err}");
    assert!(err.possibly_billed());
    assert_eq!((err.attempts(), server.count()), (1, 1));
}
