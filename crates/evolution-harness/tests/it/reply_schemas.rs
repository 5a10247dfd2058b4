//! `WithReplySchemas` adds the kernel's reply schema by tag, and only where none is given.

use evolution_harness::{WithReplySchemas, kernel_reply_schema};
use evolution_testkit::ScriptedLlm;
use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
use serde_json::json;

#[tokio::test]
async fn tagged_requests_get_the_kernel_schema_and_others_pass_unchanged() {
    let llm = ScriptedLlm::with_replies(["{}", "{}", "{}", "{}"]);
    let wrapped = WithReplySchemas::new(&llm);
    let messages = [ChatMessage::user("hi")];
    let own = json!({"type": "object", "properties": {"x": {"type": "string"}}});

    for options in [
        ChatOptions::json().with_tag("evolve.skill"),
        ChatOptions::json().with_tag("judge.defect_vs_lapse"),
        ChatOptions::json()
            .with_tag("evolve.skill")
            .with_json_schema(own.clone()),
        ChatOptions::default().with_tag("slow_update"),
    ] {
        wrapped.chat(&messages, &options).await.unwrap();
    }

    let sent: Vec<_> = llm
        .requests()
        .into_iter()
        .map(|r| r.options.json_schema)
        .collect();
    assert_eq!(sent[0], kernel_reply_schema("evolve.skill"));
    assert_eq!(sent[1], kernel_reply_schema("judge.defect_vs_lapse"));
    assert!(sent[0].is_some() && sent[1].is_some() && sent[0] != sent[1]);
    assert_eq!(sent[2], Some(own), "a request's own schema wins");
    assert_eq!(sent[3], None, "a tag without a contract gets no schema");
}

#[test]
fn every_kernel_contract_tag_resolves() {
    for tag in evolution_evolve::REPLY_SCHEMA_TAGS
        .iter()
        .chain(evolution_diagnose::REPLY_SCHEMA_TAGS.iter())
    {
        assert!(kernel_reply_schema(tag).is_some(), "{tag}");
    }
    assert!(kernel_reply_schema("slow_update").is_none());
}

#[tokio::test]
async fn an_application_schema_is_attached_by_its_tag_and_wins_over_the_kernel() {
    let llm = ScriptedLlm::with_replies(["{}", "{}"]);
    let mine = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let wrapped = WithReplySchemas::new(&llm)
        .with_schema("app.check", mine.clone())
        .with_schema("evolve.rank", mine.clone());
    let messages = [ChatMessage::user("hi")];
    for tag in ["app.check", "evolve.rank"] {
        let options = ChatOptions::json().with_tag(tag);
        wrapped.chat(&messages, &options).await.unwrap();
    }
    for request in llm.requests() {
        assert_eq!(request.options.json_schema, Some(mine.clone()));
    }
    assert_eq!(
        wrapped.schema_for("evolve.skill"),
        kernel_reply_schema("evolve.skill")
    );
}
