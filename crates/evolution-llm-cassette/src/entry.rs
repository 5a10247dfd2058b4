//! The cassette's line format: one recorded call per JSON line ([`Entry`]), found again by
//! its key ([`cassette_key`]), a hash of what the model was asked.

use std::fmt::Write as _;

use evolution_types::{ChatMessage, ChatOptions, LlmResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One line of a cassette.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) model: String,
    /// The call's tag, kept to explain a later miss; not part of the key
    /// (cassettes written before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tag: Option<String>,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) options: ChatOptions,
    pub(crate) response: LlmResponse,
}

/// The cassette key of a request: the SHA-256 (hex) of the model, the messages
/// and the options, serialized canonically. `tag` and `timeout` are left out:
/// they do not change what the model is asked.
pub fn cassette_key(model: &str, messages: &[ChatMessage], options: &ChatOptions) -> String {
    let request = serde_json::json!({
        "v": 1,
        "model": model,
        "messages": messages,
        "options": keyed_options(options),
    });
    let digest = Sha256::digest(canonical(request).to_string().as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// The options as a key sees them: without the tag and the timeout.
pub(crate) fn keyed_options(options: &ChatOptions) -> ChatOptions {
    ChatOptions {
        tag: None,
        timeout: None,
        ..options.clone()
    }
}

/// The value with every object's keys sorted, so that key order never changes a hash.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut pairs: Vec<(String, Value)> = map.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().map(|(k, v)| (k, canonical(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ignores_tag_timeout_and_key_order() {
        let msgs = [ChatMessage::user("q")];
        let base = ChatOptions::default().with_temperature(0.2);
        let k = cassette_key("m", &msgs, &base);
        assert_eq!(k.len(), 64);
        let tagged = base.clone().with_tag("judge.span");
        let timed = ChatOptions {
            timeout: Some(std::time::Duration::from_secs(3)),
            ..base.clone()
        };
        assert_eq!(cassette_key("m", &msgs, &tagged), k);
        assert_eq!(cassette_key("m", &msgs, &timed), k);
        assert_ne!(cassette_key("m2", &msgs, &base), k);
        assert_ne!(cassette_key("m", &[ChatMessage::user("q2")], &base), k);
        assert_ne!(
            cassette_key("m", &msgs, &base.clone().with_temperature(0.3)),
            k
        );
        let a = ChatOptions::default().with_json_schema(serde_json::json!({"a": 1, "b": 2}));
        let b = ChatOptions::default().with_json_schema(serde_json::json!({"b": 2, "a": 1}));
        assert_eq!(cassette_key("m", &msgs, &a), cassette_key("m", &msgs, &b));
    }
}
