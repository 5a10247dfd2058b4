//! The LLM port: one chat call, with a response that says what it cost.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// The caller.
    User,
    /// The model.
    Assistant,
}

/// One message of a chat.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: ChatRole,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::System,
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::User,
            content: content.into(),
        }
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: ChatRole::Assistant,
            content: content.into(),
        }
    }
}

/// Per-call options. `Default` leaves every choice to the provider.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Most tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Ask for a JSON object reply.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json_mode: bool,
    /// JSON Schema the reply must follow (implies JSON mode where supported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<serde_json::Value>,
    /// Sampling seed, for providers that honour one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Overall time limit of the call, overriding the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// A label for logs and recordings (for example `judge.span`); never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

impl ChatOptions {
    /// Options asking for a JSON object reply.
    pub fn json() -> Self {
        ChatOptions {
            json_mode: true,
            ..ChatOptions::default()
        }
    }
    /// The same options with a temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }
    /// The same options with a token limit.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
    /// The same options with a JSON schema (and JSON mode on).
    pub fn with_json_schema(mut self, schema: serde_json::Value) -> Self {
        self.json_mode = true;
        self.json_schema = Some(schema);
        self
    }
    /// The same options with a log label.
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }
}

/// A provider's reply and what it cost.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LlmResponse {
    /// The reply text.
    pub content: String,
    /// Reasoning text the server returned separately (empty when none).
    #[serde(default)]
    pub thinking: String,
    /// The model that answered.
    pub model: String,
    /// The provider that answered (`openai`, `local`, `scripted`, ...).
    pub provider: String,
    /// Prompt tokens billed.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens billed.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Wall time of the call, retries included.
    #[serde(default)]
    pub latency_ms: u64,
    /// Time to the first token, when streaming.
    #[serde(default)]
    pub ttft_ms: Option<u64>,
    /// Largest gap between two tokens, when streaming.
    #[serde(default)]
    pub max_inter_token_ms: Option<u64>,
    /// True when the reply came from a cache or a recording.
    #[serde(default)]
    pub cache_hit: bool,
    /// Unique id of the call.
    #[serde(default)]
    pub call_id: String,
    /// What the provider itself says the call cost, in US dollars (Claude Code's
    /// `total_cost_usd`); `None` when it says nothing, as most do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The three ways a call can fail, which decide what a caller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LlmErrorClass {
    /// Worth retrying later: timeouts, rate limits, 5xx, dropped connections.
    Transient,
    /// Retrying will not help: bad credentials, bad request, unknown model.
    Permanent,
    /// The call went through but the reply is unusable (malformed, empty, cut off).
    Content,
}

/// What went wrong in an LLM call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LlmErrorKind {
    /// No complete answer within the time limit.
    Timeout,
    /// The server asked us to slow down (429).
    RateLimited,
    /// The server failed (5xx).
    ServerError,
    /// The connection failed or dropped.
    Connection,
    /// Credentials missing or refused (401, 403).
    Auth,
    /// The request was rejected as invalid (400, 422).
    BadRequest,
    /// The model does not exist on the server (404).
    ModelNotFound,
    /// The reply could not be decoded or had no choices.
    InvalidResponse,
    /// The reply is empty.
    EmptyContent,
    /// The call was cancelled by the caller.
    Cancelled,
    /// Anything else; permanent.
    Other,
}

impl LlmErrorKind {
    /// The class that decides whether to retry.
    pub fn class(self) -> LlmErrorClass {
        match self {
            LlmErrorKind::Timeout
            | LlmErrorKind::RateLimited
            | LlmErrorKind::ServerError
            | LlmErrorKind::Connection => LlmErrorClass::Transient,
            LlmErrorKind::InvalidResponse | LlmErrorKind::EmptyContent => LlmErrorClass::Content,
            LlmErrorKind::Auth
            | LlmErrorKind::BadRequest
            | LlmErrorKind::ModelNotFound
            | LlmErrorKind::Cancelled
            | LlmErrorKind::Other => LlmErrorClass::Permanent,
        }
    }
}

/// An LLM call failure: its kind plus what the caller needs to act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}{status}: {message}{attempts}{billed}",
    status = self.status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(),
    attempts = if self.attempts > 1 { format!(" after {} attempts", self.attempts) } else { String::new() },
    billed = if self.possibly_billed { " (the request may have been billed)" } else { "" })]
pub struct LlmError {
    kind: LlmErrorKind,
    message: String,
    status: Option<u16>,
    retry_after: Option<Duration>,
    attempts: u32,
    possibly_billed: bool,
}

impl LlmError {
    /// An error of `kind` with a message, one attempt, nothing else known.
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
            attempts: 1,
            possibly_billed: false,
        }
    }
    /// The same error with the HTTP status that caused it.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
    /// The same error with the server's requested wait.
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }
    /// The same error after `attempts` tries.
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }
    /// The same error, marked as possibly billed (a request may have reached the model).
    pub fn with_possibly_billed(mut self, possibly_billed: bool) -> Self {
        self.possibly_billed = possibly_billed;
        self
    }
    /// What went wrong.
    pub fn kind(&self) -> LlmErrorKind {
        self.kind
    }
    /// Transient, permanent or content.
    pub fn class(&self) -> LlmErrorClass {
        self.kind.class()
    }
    /// True for errors worth retrying.
    pub fn is_transient(&self) -> bool {
        self.class() == LlmErrorClass::Transient
    }
    /// True for errors retrying cannot fix.
    pub fn is_permanent(&self) -> bool {
        self.class() == LlmErrorClass::Permanent
    }
    /// True for unusable replies.
    pub fn is_content(&self) -> bool {
        self.class() == LlmErrorClass::Content
    }
    /// The message (the server's, where it sent one).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The HTTP status, where there was one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }
    /// The wait the server asked for, where it asked.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
    /// Attempts made before giving up.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
    /// True when a request may have been processed (and billed) although it failed.
    pub fn possibly_billed(&self) -> bool {
        self.possibly_billed
    }
}

/// A chat-completion provider. Object-safe: the kernel holds `&dyn LlmProvider`.
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// Sends `messages` and returns the reply.
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError>;
}

#[async_trait]
impl<T: LlmProvider + ?Sized> LlmProvider for std::sync::Arc<T> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        (**self).chat(messages, options).await
    }
}

#[async_trait]
impl<T: LlmProvider + ?Sized> LlmProvider for &T {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        (**self).chat(messages, options).await
    }
}
