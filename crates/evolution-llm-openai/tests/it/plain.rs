//! Happy paths of the non-streaming mode, and what the request carries.

use std::sync::Arc;
use std::time::Duration;

use evolution_llm_openai::{OpenAiProvider, PROVIDER_NAME};
use evolution_types::{ChatOptions, LlmProvider};
use serde_json::json;

use crate::server::{Step, TestServer, completion};
use crate::{fast_config, provider, question};

#[tokio::test]
async fn plain_reply_fills_every_field() {
    let mut body = completion("4");
    body["choices"][0]["message"]["reasoning_content"] = json!("2 plus 2 is 4");
    let server = TestServer::start(vec![Step::ok(body)]).await;
    let mut config = fast_config(&server.base_url());
    config.temperature = Some(0.25);
    config.max_tokens = Some(64);
    let llm = provider(config);

    let r = llm
        .chat(&question(), &ChatOptions::default().with_tag("t"))
        .await
        .expect("reply");
    assert_eq!(r.content, "4");
    assert_eq!(r.thinking, "2 plus 2 is 4");
    assert_eq!(r.model, "server-model");
    assert_eq!(r.provider, PROVIDER_NAME);
    assert_eq!((r.prompt_tokens, r.completion_tokens), (11, 7));
    assert_eq!(r.call_id, "chatcmpl-1");
    assert_eq!((r.ttft_ms, r.max_inter_token_ms), (None, None));
    assert!(!r.cache_hit);
    assert!(r.latency_ms < 5_000);

    let got = server.received();
    assert_eq!(got.len(), 1);
    let req = &got[0];
    assert!(
        req.head.starts_with("POST /v1/chat/completions HTTP/1.1"),
        "{}",
        req.head
    );
    assert!(
        req.head
            .to_ascii_lowercase()
            .contains("authorization: bearer sk-test-secret")
    );
    assert_eq!(
        req.body,
        json!({"model": "test-model",
               "messages": [{"role": "system", "content": "You answer briefly."},
                            {"role": "user", "content": "2+2?"}],
               "temperature": 0.25, "max_tokens": 64})
    );
}

#[tokio::test]
async fn json_mode_and_schema_reach_the_server() {
    let server = TestServer::start(vec![Step::ok(completion("{\"a\":1}"))]).await;
    let llm = provider(fast_config(&server.base_url()));
    llm.chat(&question(), &ChatOptions::json())
        .await
        .expect("reply");
    let schema =
        json!({"title": "Answer", "type": "object", "properties": {"a": {"type": "integer"}}});
    llm.chat(
        &question(),
        &ChatOptions::default().with_json_schema(schema.clone()),
    )
    .await
    .expect("reply");
    let got = server.received();
    assert_eq!(
        got[0].body["response_format"],
        json!({"type": "json_object"})
    );
    assert_eq!(
        got[1].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}})
    );

    let mut config = fast_config(&server.base_url());
    config.json_mode = true;
    provider(config)
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    assert_eq!(
        server.received()[2].body["response_format"],
        json!({"type": "json_object"})
    );
}

#[tokio::test]
async fn missing_id_and_model_fall_back_to_local_values() {
    let body = json!({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]});
    let server = TestServer::start(vec![Step::ok(body)]).await;
    let llm = provider(fast_config(&server.base_url()));
    let a = llm
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    let b = llm
        .chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    assert_eq!(a.model, "test-model");
    assert_eq!((a.prompt_tokens, a.completion_tokens), (0, 0));
    assert!(a.call_id.starts_with("local-"), "{}", a.call_id);
    assert_ne!(a.call_id, b.call_id);
}

#[tokio::test]
async fn no_key_configured_sends_no_authorization() {
    let server = TestServer::start(vec![Step::ok(completion("ok"))]).await;
    let llm = OpenAiProvider::new(fast_config(&server.base_url())).expect("config");
    llm.chat(&question(), &ChatOptions::default())
        .await
        .expect("reply");
    assert!(
        !server.received()[0]
            .head
            .to_ascii_lowercase()
            .contains("authorization")
    );
}

#[tokio::test]
async fn max_concurrency_bounds_requests_in_flight() {
    let server = TestServer::start(vec![
        Step::ok(completion("ok")).delayed(Duration::from_millis(150)),
    ])
    .await;
    let mut config = fast_config(&server.base_url());
    config.max_concurrency = 2;
    let llm = Arc::new(provider(config));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let llm = llm.clone();
        tasks.push(tokio::spawn(async move {
            llm.chat(&question(), &ChatOptions::default()).await
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("reply");
    }
    assert_eq!(server.count(), 6);
    assert_eq!(server.max_in_flight(), 2);
}
