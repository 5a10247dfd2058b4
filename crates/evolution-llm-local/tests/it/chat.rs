use evolution_types::{ChatMessage, ChatOptions, LlmProvider};

use crate::support::model;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_chat_answers_and_reports_its_cost() {
    let llm = model(1).await;
    let messages = [
        ChatMessage::system("You are a helpful assistant. Answer briefly."),
        ChatMessage::user("What is the capital of France?"),
    ];
    let reply = llm
        .chat(&messages, &ChatOptions::default().with_max_tokens(40))
        .await
        .expect("chat");
    assert!(reply.content.contains("Paris"), "{:?}", reply.content);
    assert_eq!(reply.provider, "local");
    assert!(!reply.model.is_empty());
    let prompt = llm.render_prompt(&messages).expect("template");
    assert!(
        prompt.contains("<|im_start|>user"),
        "chat template from GGUF: {prompt}"
    );
    assert!(reply.prompt_tokens >= llm.count_tokens(&prompt) as u64);
    assert!(reply.completion_tokens >= 1 && reply.completion_tokens <= 40);
    let ttft = reply.ttft_ms.expect("ttft");
    assert!(ttft <= reply.latency_ms);
    assert!(reply.max_inter_token_ms.expect("gap") <= reply.latency_ms);
    assert!(!reply.call_id.is_empty());
    assert!(!reply.cache_hit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temperature_zero_is_deterministic_and_max_tokens_bounds_the_reply() {
    let llm = model(2).await;
    let messages = [ChatMessage::user("Write a short poem about the sea.")];
    let options = ChatOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(24);
    // Two concurrent calls share the one loaded model.
    let (a, b) = tokio::join!(llm.chat(&messages, &options), llm.chat(&messages, &options));
    let (a, b) = (a.expect("first"), b.expect("second"));
    assert_eq!(a.content, b.content);
    assert_eq!(a.completion_tokens, 24);
    let c = llm.chat(&messages, &options).await.expect("third");
    assert_eq!(a.content, c.content);
    assert_eq!(llm.available_slots(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_sequences_end_the_reply_before_them() {
    let llm = model(1).await;
    let messages = [ChatMessage::user(
        "Count from 1 to 10, separated by commas.",
    )];
    let base = ChatOptions::default().with_max_tokens(40);
    let full = llm.chat(&messages, &base).await.expect("full");
    // Stop at the fourth word of the free reply (greedy decoding repeats it exactly).
    let stop = full
        .content
        .split_whitespace()
        .nth(3)
        .expect("a reply of at least four words")
        .to_owned();
    let stopped = ChatOptions {
        stop: vec![stop.clone()],
        ..base
    };
    let cut = llm.chat(&messages, &stopped).await.expect("cut");
    assert!(!cut.content.contains(&stop), "{:?} / {stop:?}", cut.content);
    assert!(full.content.starts_with(&cut.content));
    assert!(cut.content.len() < full.content.len());
}

/// A named llama.cpp template replaces the file's own: `gemma` formats the same messages with
/// its own turn markers (for a model file that carries no template of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_chat_template_formats_the_prompt_instead_of_the_files() {
    let own = model(1).await;
    let config = own.config().clone().with_chat_template("gemma");
    let named = tokio::task::spawn_blocking(move || evolution_llm_local::LocalLlm::load(config))
        .await
        .expect("load thread")
        .unwrap_or_else(|err| panic!("{err}"));
    let messages = [ChatMessage::user("What is the capital of France?")];
    let prompt = named.render_prompt(&messages).expect("template");
    assert!(prompt.contains("<start_of_turn>user"), "{prompt}");
    assert!(!prompt.contains("<|im_start|>"), "{prompt}");
    assert!(
        own.render_prompt(&messages)
            .expect("template")
            .contains("<|im_start|>user")
    );
}
