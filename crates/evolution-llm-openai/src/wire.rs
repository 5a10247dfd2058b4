//! The chat-completions wire format: request bodies, replies, stream chunks, error bodies.

use evolution_types::{ChatMessage, ChatOptions, ChatRole, LlmError, LlmErrorKind};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::OpenAiConfig;

/// Longest server error message kept verbatim; longer ones are cut with a note saying so.
const MAX_SERVER_MESSAGE: usize = 4000;

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
}

fn role_name(role: ChatRole) -> &'static str {
    match role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
    }
}

/// The JSON body of one chat-completions request.
pub(crate) fn request_body(
    config: &OpenAiConfig,
    messages: &[ChatMessage],
    options: &ChatOptions,
    stream: bool,
) -> Value {
    let wire: Vec<WireMessage<'_>> = messages
        .iter()
        .map(|m| WireMessage {
            role: role_name(m.role),
            content: &m.content,
        })
        .collect();
    let mut body = serde_json::Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("messages".into(), json!(wire));
    if let Some(t) = options.temperature.or(config.temperature) {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = options.max_tokens.or(config.max_tokens) {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(seed) = options.seed {
        body.insert("seed".into(), json!(seed));
    }
    if !options.stop.is_empty() {
        body.insert("stop".into(), json!(options.stop));
    }
    match (&options.json_schema, config.supports_json_schema) {
        (Some(schema), true) => {
            let name = schema
                .get("title")
                .and_then(Value::as_str)
                .filter(|t| {
                    !t.is_empty()
                        && t.len() <= 64
                        && t.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                })
                .unwrap_or("response");
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema}}),
            );
        }
        (Some(_), false) => {
            body.insert("response_format".into(), json!({"type": "json_object"}));
        }
        (None, _) if options.json_mode || config.json_mode => {
            body.insert("response_format".into(), json!({"type": "json_object"}));
        }
        (None, _) => {}
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// Token counts as the server reports them.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
    #[serde(default)]
    pub(crate) completion_tokens: u64,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ReplyMessage {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) reasoning_content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub(crate) message: ReplyMessage,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// A non-streamed reply.
#[derive(Debug, Deserialize)]
pub(crate) struct Completion {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) model: Option<String>,
    pub(crate) choices: Vec<Choice>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) reasoning_content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub(crate) delta: Delta,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// One streamed chunk.
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// The error message and code in a server's error body, in the shapes OpenAI,
/// DeepSeek, vLLM, Ollama and llama.cpp use; the raw text when it is not JSON.
pub(crate) fn server_message(body: &[u8]) -> (String, Option<String>) {
    let text = String::from_utf8_lossy(body);
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let (message, code) = match parsed.as_ref().map(error_fields) {
        Some((Some(m), code)) => (m, code),
        Some((None, code)) => (text.trim().to_owned(), code),
        None => (text.trim().to_owned(), None),
    };
    (bounded(message), code)
}

fn error_fields(v: &Value) -> (Option<String>, Option<String>) {
    let err = v.get("error").unwrap_or(v);
    if let Some(s) = err.as_str() {
        return (Some(s.to_owned()), None);
    }
    let message = err
        .get("message")
        .or_else(|| err.get("detail"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let code = err
        .get("code")
        .or_else(|| err.get("type"))
        .and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
    (message, code)
}

/// Cuts an over-long message at a character boundary and says how much was cut.
fn bounded(message: String) -> String {
    if message.len() <= MAX_SERVER_MESSAGE {
        return message;
    }
    let mut end = MAX_SERVER_MESSAGE;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let cut = message.len() - end;
    format!("{}… ({cut} more bytes not shown)", &message[..end])
}

/// The error for an unsuccessful HTTP status, before retry bookkeeping.
pub(crate) fn status_error(status: u16, body: &[u8]) -> LlmError {
    let (message, code) = server_message(body);
    let message = if message.is_empty() {
        format!("HTTP status {status} with an empty body")
    } else {
        message
    };
    let code_is = |c: &str| code.as_deref() == Some(c);
    let kind = match status {
        401 | 403 => LlmErrorKind::Auth,
        404 => LlmErrorKind::ModelNotFound,
        408 => LlmErrorKind::Timeout,
        // A quota exhausted is not a rate limit: waiting will not refill it.
        429 if code_is("insufficient_quota") => LlmErrorKind::Other,
        429 => LlmErrorKind::RateLimited,
        400 | 422 | 413 if code_is("model_not_found") => LlmErrorKind::ModelNotFound,
        400 | 413 | 422 => LlmErrorKind::BadRequest,
        500..=599 => LlmErrorKind::ServerError,
        _ => LlmErrorKind::Other,
    };
    LlmError::new(kind, message).with_status(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_status(status: u16, body: &str, kind: LlmErrorKind, message: &str) {
        let err = status_error(status, body.as_bytes());
        assert_eq!(err.kind(), kind, "{status} {body}");
        assert_eq!(err.message(), message, "{status} {body}");
        assert_eq!(err.status(), Some(status));
    }

    #[test]
    fn status_errors_keep_the_server_message() {
        check_status(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
            LlmErrorKind::Auth,
            "Incorrect API key provided",
        );
        check_status(
            404,
            r#"{"error":{"message":"The model `x` does not exist","code":"model_not_found"}}"#,
            LlmErrorKind::ModelNotFound,
            "The model `x` does not exist",
        );
        check_status(
            400,
            r#"{"error":{"message":"model 'y' not found","code":"model_not_found"}}"#,
            LlmErrorKind::ModelNotFound,
            "model 'y' not found",
        );
        check_status(
            400,
            r#"{"error":"llama.cpp style"}"#,
            LlmErrorKind::BadRequest,
            "llama.cpp style",
        );
        check_status(
            422,
            r#"{"detail":"vllm style"}"#,
            LlmErrorKind::BadRequest,
            "vllm style",
        );
        check_status(
            502,
            "<html>bad gateway</html>",
            LlmErrorKind::ServerError,
            "<html>bad gateway</html>",
        );
        check_status(
            429,
            r#"{"error":{"message":"quota","code":"insufficient_quota"}}"#,
            LlmErrorKind::Other,
            "quota",
        );
        check_status(
            429,
            "",
            LlmErrorKind::RateLimited,
            "HTTP status 429 with an empty body",
        );
        check_status(418, "teapot", LlmErrorKind::Other, "teapot");
    }

    #[test]
    fn long_messages_are_cut_with_a_note() {
        let long = "é".repeat(5000);
        let (m, _) = server_message(long.as_bytes());
        assert!(m.ends_with("more bytes not shown)"), "{m}");
        assert!(m.len() < long.len());
    }

    #[test]
    fn request_body_merges_config_and_options() {
        let mut config = OpenAiConfig::new("http://x/v1", "m");
        config.temperature = Some(0.5);
        config.max_tokens = Some(100);
        let msgs = [ChatMessage::system("s"), ChatMessage::user("u")];
        let body = request_body(
            &config,
            &msgs,
            &ChatOptions::default().with_max_tokens(7),
            true,
        );
        assert_eq!(
            body,
            json!({"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],
                   "temperature":0.5,"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}})
        );
        let body = request_body(&config, &msgs, &ChatOptions::json(), false);
        assert_eq!(body["response_format"], json!({"type":"json_object"}));
        assert!(body.get("stream").is_none());
        let schema = json!({"title":"Verdict","type":"object"});
        let body = request_body(
            &config,
            &msgs,
            &ChatOptions::default().with_json_schema(schema.clone()),
            false,
        );
        assert_eq!(
            body["response_format"],
            json!({"type":"json_schema","json_schema":{"name":"Verdict","schema":schema}})
        );
        config.supports_json_schema = false;
        let body = request_body(
            &config,
            &msgs,
            &ChatOptions::default().with_json_schema(schema),
            false,
        );
        assert_eq!(body["response_format"], json!({"type":"json_object"}));
        let opts = ChatOptions {
            seed: Some(3),
            stop: vec!["END".into()],
            tag: Some("never sent".into()),
            ..ChatOptions::default()
        };
        let body = request_body(&config, &msgs, &opts, false);
        assert_eq!(body["seed"], json!(3));
        assert_eq!(body["stop"], json!(["END"]));
        assert!(!body.to_string().contains("never sent"));
    }
}
