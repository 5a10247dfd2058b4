use std::sync::Arc;
use std::time::Duration;

use evolution_testkit::ScriptedLlm;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};

fn user(text: &str) -> [ChatMessage; 2] {
    [ChatMessage::system("sys"), ChatMessage::user(text)]
}

#[tokio::test]
async fn answers_in_queue_order_and_records_requests() {
    let llm = ScriptedLlm::with_replies(["one", "two"]);
    let opts = ChatOptions::json().with_tag("t");
    assert_eq!(llm.chat(&user("a"), &opts).await.unwrap().content, "one");
    assert_eq!(
        llm.chat(&user("b"), &ChatOptions::default())
            .await
            .unwrap()
            .content,
        "two"
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].last_user(), "a");
    assert_eq!(requests[0].options, opts);
    assert_eq!(requests[1].index, 1);
    assert!(requests[1].full_text().contains("sys\n\nb"));
    assert_eq!(llm.remaining(), 0);
}

#[tokio::test]
async fn exhausted_script_is_an_error_not_a_panic() {
    let llm = ScriptedLlm::with_replies(["only"]);
    llm.chat(&user("a"), &ChatOptions::default()).await.unwrap();
    let err = llm
        .chat(&user("b"), &ChatOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), LlmErrorKind::Other);
    assert!(err.message().contains("#1"), "{}", err.message());
    assert_eq!(llm.call_count(), 2);
}

#[tokio::test]
async fn injected_errors_and_full_responses_come_back_in_order() {
    let llm = ScriptedLlm::new();
    llm.push_error(LlmError::new(LlmErrorKind::RateLimited, "429").with_status(429));
    llm.push_response(LlmResponse {
        content: "x".into(),
        thinking: "hmm".into(),
        ..Default::default()
    });
    let err = llm
        .chat(&user("a"), &ChatOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_transient());
    let ok = llm.chat(&user("a"), &ChatOptions::default()).await.unwrap();
    assert_eq!(ok.thinking, "hmm");
}

#[tokio::test]
async fn responder_answers_from_the_request_after_the_queue() {
    let llm = ScriptedLlm::with_replies(["queued"]);
    llm.set_responder(|req| {
        if req.last_user().contains("fail") {
            Err(LlmError::new(LlmErrorKind::ServerError, "boom"))
        } else {
            Ok(format!("echo {}", req.last_user()))
        }
    });
    assert_eq!(
        llm.chat(&user("x"), &ChatOptions::default())
            .await
            .unwrap()
            .content,
        "queued"
    );
    assert_eq!(
        llm.chat(&user("y"), &ChatOptions::default())
            .await
            .unwrap()
            .content,
        "echo y"
    );
    assert!(
        llm.chat(&user("fail"), &ChatOptions::default())
            .await
            .is_err()
    );
}

#[tokio::test(start_paused = true)]
async fn latency_is_simulated_and_concurrency_observed() {
    let llm = Arc::new(
        ScriptedLlm::from_fn(|req| Ok(req.last_user().to_owned()))
            .with_latency(Duration::from_millis(20)),
    );
    let started = tokio::time::Instant::now();
    let calls: Vec<_> = (0..4)
        .map(|i| {
            let llm = Arc::clone(&llm);
            tokio::spawn(async move {
                llm.chat(&user(&i.to_string()), &ChatOptions::default())
                    .await
            })
        })
        .collect();
    for call in calls {
        let reply = call.await.unwrap().unwrap();
        assert_eq!(reply.latency_ms, 20);
    }
    assert_eq!(started.elapsed(), Duration::from_millis(20));
    assert_eq!(llm.max_in_flight(), 4);
}
