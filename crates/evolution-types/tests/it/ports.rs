use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use evolution_types::{
    ChatMessage, ChatOptions, LlmError, LlmErrorClass, LlmErrorKind, LlmProvider, LlmResponse,
};

struct Echo;

#[async_trait]
impl LlmProvider for Echo {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        _: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let last = messages
            .last()
            .ok_or_else(|| LlmError::new(LlmErrorKind::BadRequest, "no messages"))?;
        Ok(LlmResponse {
            content: last.content.clone(),
            ..LlmResponse::default()
        })
    }
}

#[tokio::test]
async fn provider_is_object_safe_and_shareable() {
    let shared: Arc<dyn LlmProvider> = Arc::new(Echo);
    let by_ref: &dyn LlmProvider = &*shared;
    let reply = by_ref
        .chat(&[ChatMessage::user("hi")], &ChatOptions::default())
        .await
        .unwrap();
    assert_eq!(reply.content, "hi");
    let err = shared.chat(&[], &ChatOptions::default()).await.unwrap_err();
    assert_eq!(err.kind(), LlmErrorKind::BadRequest);
    assert!(err.is_permanent());
}

#[test]
fn error_classes_tell_transient_permanent_and_content_apart() {
    let cases = [
        (LlmErrorKind::Timeout, LlmErrorClass::Transient),
        (LlmErrorKind::RateLimited, LlmErrorClass::Transient),
        (LlmErrorKind::ServerError, LlmErrorClass::Transient),
        (LlmErrorKind::Connection, LlmErrorClass::Transient),
        (LlmErrorKind::Auth, LlmErrorClass::Permanent),
        (LlmErrorKind::BadRequest, LlmErrorClass::Permanent),
        (LlmErrorKind::ModelNotFound, LlmErrorClass::Permanent),
        (LlmErrorKind::InvalidResponse, LlmErrorClass::Content),
        (LlmErrorKind::EmptyContent, LlmErrorClass::Content),
    ];
    for (kind, class) in cases {
        assert_eq!(LlmError::new(kind, "x").class(), class, "{kind:?}");
    }
}

#[test]
fn error_display_names_status_attempts_and_billing() {
    let err = LlmError::new(LlmErrorKind::RateLimited, "slow down")
        .with_status(429)
        .with_attempts(4)
        .with_retry_after(Duration::from_secs(2))
        .with_possibly_billed(true);
    assert_eq!(
        err.to_string(),
        "RateLimited (HTTP 429): slow down after 4 attempts (the request may have been billed)"
    );
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
}

#[test]
fn options_builders_and_serialization() {
    let opts = ChatOptions::default()
        .with_temperature(0.0)
        .with_json_schema(serde_json::json!({"type": "object"}));
    assert!(opts.json_mode);
    let v = serde_json::to_value(&opts).unwrap();
    assert_eq!(v["json_mode"], true);
    assert!(v.get("tag").is_none());
    let back: ChatOptions = serde_json::from_value(v).unwrap();
    assert_eq!(back, opts);
}
