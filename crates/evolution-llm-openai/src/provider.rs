//! The HTTP provider: one call = attempts under a deadline, retried by policy.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use tokio::sync::Semaphore;
use tokio::time::{Instant, timeout_at};

use crate::config::{ApiKey, ConfigError, OpenAiConfig};
use crate::errors::{error_chain, redacted_error, retry_after, send_error, with_message};
use crate::sse::SseDecoder;
use crate::wire::{self, Chunk, Completion, Usage};

/// The `provider` field of every response.
pub const PROVIDER_NAME: &str = "openai-compatible";

/// Largest response body accepted; a larger one is an error, never cut short.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// An [`LlmProvider`] over an OpenAI-compatible `/chat/completions` endpoint.
///
/// Each call runs attempts under one overall deadline (`timeouts.total_ms`, or
/// the call's own `ChatOptions::timeout`); each attempt has its own limits on
/// connecting, on the first response byte, on silence inside the body and on
/// its whole length. Transient failures (429, 5xx, timeouts, dropped or refused
/// connections, 408) are retried with capped exponential backoff and jitter, a
/// 429 waiting what its `Retry-After` asks; permanent ones (401, 403, 400, 404,
/// 422) and unusable replies return at once with the server's message.
///
/// Billing: a failure after the request went out without a complete reply (a
/// timeout waiting for the answer, a connection dropped mid-reply) may have
/// been processed and billed. Such attempts are retried only when
/// [`RetryPolicy::retry_possibly_billed`](crate::RetryPolicy) is on (the
/// default); the final error's `possibly_billed()` is then true, and a call
/// that succeeds after one logs a warning naming the call. A 5xx or 429 answer
/// counts as not billed (the server says it did not serve the request); an
/// unusable 200 reply counts as billed, and so does a call its deadline cut
/// off while an attempt was in flight (conservatively, even mid-connect).
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: reqwest::Url,
    api_key: Option<ApiKey>,
    client: reqwest::Client,
    permits: Semaphore,
    calls: AtomicU64,
    /// Where the key came from, named (never shown) when the server refuses it.
    key_source: KeySource,
}

/// Where a provider's API key came from.
#[derive(Debug, Clone)]
enum KeySource {
    /// The environment variable of this name.
    Env(String),
    /// The program passed it ([`OpenAiProvider::with_api_key`]).
    Given,
    /// No key: no `Authorization` header is sent.
    None,
}

impl KeySource {
    /// What a refused call (401, 403) adds to its message.
    fn note(&self) -> String {
        match self {
            KeySource::Env(var) => {
                format!("the API key sent was read from the environment variable {var}")
            }
            KeySource::Given => "the API key sent was the one the program passed".to_owned(),
            KeySource::None => "no API key was sent: set api_key_env to the environment \
                                variable that holds one"
                .to_owned(),
        }
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("endpoint", &self.endpoint.as_str())
            .field("model", &self.config.model)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Builds a provider, reading the API key from the variable `api_key_env` names.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        let (api_key, source) = match &config.api_key_env {
            Some(var) => (
                Some(ApiKey::new(std::env::var(var).map_err(|_| {
                    ConfigError::MissingApiKey { var: var.clone() }
                })?)),
                KeySource::Env(var.clone()),
            ),
            None => (None, KeySource::None),
        };
        Self::build(config, api_key, source)
    }

    /// Builds a provider with a key the caller already holds (from a secret
    /// store, say); `api_key_env` is ignored.
    pub fn with_api_key(
        config: OpenAiConfig,
        api_key: impl Into<String>,
    ) -> Result<Self, ConfigError> {
        Self::build(config, Some(ApiKey::new(api_key.into())), KeySource::Given)
    }

    /// The configuration the provider runs with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn build(
        config: OpenAiConfig,
        api_key: Option<ApiKey>,
        key_source: KeySource,
    ) -> Result<Self, ConfigError> {
        let endpoint = endpoint(&config.base_url)?;
        if config.max_concurrency == 0 || config.max_concurrency > Semaphore::MAX_PERMITS {
            return Err(ConfigError::Invalid(format!(
                "max_concurrency must be between 1 and {}, got {}",
                Semaphore::MAX_PERMITS,
                config.max_concurrency
            )));
        }
        let factor = config.retry.factor;
        if !factor.is_finite() || factor < 1.0 {
            return Err(ConfigError::Invalid(format!(
                "retry.factor must be a finite number >= 1, got {factor}"
            )));
        }
        if let Some(key) = &api_key
            && HeaderValue::from_str(&format!("Bearer {}", key.expose())).is_err()
        {
            return Err(ConfigError::Invalid(
                "the API key contains characters not allowed in an HTTP header".into(),
            ));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect())
            .build()
            .map_err(|e| ConfigError::Client(error_chain(&e)))?;
        Ok(OpenAiProvider {
            permits: Semaphore::new(config.max_concurrency),
            config,
            endpoint,
            api_key,
            client,
            calls: AtomicU64::new(0),
            key_source,
        })
    }

    fn local_call_id(&self) -> String {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        format!("local-{nanos:x}-{:x}-{n}", std::process::id())
    }

    fn backoff(&self) -> ExponentialBuilder {
        let r = &self.config.retry;
        ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(r.initial_backoff_ms))
            .with_max_delay(Duration::from_millis(r.max_backoff_ms))
            .with_factor(r.factor)
            .with_max_times(usize::try_from(r.max_retries).unwrap_or(usize::MAX))
            .with_jitter()
    }

    /// One attempt, with the API key taken out of whatever the server sent back.
    async fn attempt(
        &self,
        body: &[u8],
        deadline: Instant,
        state: &CallState,
    ) -> Result<Reply, LlmError> {
        let result = self.attempt_as_sent(body, deadline, state).await;
        let Some(key) = &self.api_key else {
            return result;
        };
        match result {
            Ok(reply) => Ok(reply.redacted(key)),
            Err(e) => Err(redacted_error(e, key)),
        }
    }

    /// One attempt: send, then read the whole reply, under the attempt's limits.
    async fn attempt_as_sent(
        &self,
        body: &[u8],
        deadline: Instant,
        state: &CallState,
    ) -> Result<Reply, LlmError> {
        let t = &self.config.timeouts;
        let attempt_deadline = earliest(deadline, later(Instant::now(), t.attempt()));
        let _permit = match timeout_at(attempt_deadline, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => {
                return Err(LlmError::new(
                    LlmErrorKind::Cancelled,
                    "the provider was closed",
                ));
            }
            Err(_) => {
                return Err(LlmError::new(
                    LlmErrorKind::Timeout,
                    "timed out waiting for a free request slot (max_concurrency)",
                ));
            }
        };
        state.attempts.fetch_add(1, Ordering::Relaxed);
        state.sending.store(true, Ordering::Relaxed);
        let sent_at = Instant::now();
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key.expose());
        }
        let first_byte_deadline = earliest(attempt_deadline, later(sent_at, t.first_byte()));
        let response = match timeout_at(first_byte_deadline, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(send_error(&e)),
            Err(_) => {
                return Err(LlmError::new(
                    LlmErrorKind::Timeout,
                    format!(
                        "no response within {} ms of sending the request",
                        first_byte_deadline
                            .saturating_duration_since(sent_at)
                            .as_millis()
                    ),
                )
                .with_possibly_billed(true));
            }
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = BodyReader {
            response,
            deadline: attempt_deadline,
            idle: t.idle(),
            read: 0,
        };
        if !(200..300).contains(&status) {
            // The error body is best effort: the status alone decides the kind.
            let bytes = body.read_all().await.unwrap_or_default();
            let mut err = wire::status_error(status, &bytes);
            if let Some(wait) = retry_after(&headers, SystemTime::now()) {
                err = err.with_retry_after(wait);
            }
            return Err(err);
        }
        let is_sse = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if self.config.stream && is_sse {
            read_stream(&mut body, sent_at).await
        } else {
            let bytes = body.read_all().await?;
            parse_completion(&bytes)
        }
    }
}

/// Per-call bookkeeping shared by the attempts.
#[derive(Default)]
struct CallState {
    attempts: AtomicU32,
    possibly_billed: AtomicBool,
    /// An attempt is between sending and its outcome: if the call's deadline
    /// cuts it off now, the server may be processing it.
    sending: AtomicBool,
}

/// What an attempt read, before it becomes an [`LlmResponse`].
#[derive(Debug, Default)]
struct Reply {
    id: Option<String>,
    model: Option<String>,
    content: String,
    thinking: String,
    finish_reason: Option<String>,
    usage: Usage,
    ttft: Option<Duration>,
    max_gap: Option<Duration>,
}

impl Reply {
    /// The reply with every occurrence of `key` in its text replaced.
    fn redacted(self, key: &ApiKey) -> Reply {
        let clean = |text: String| match key.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(clean) => clean,
        };
        Reply {
            id: self.id.map(clean),
            model: self.model.map(clean),
            content: clean(self.content),
            thinking: clean(self.thinking),
            finish_reason: self.finish_reason.map(clean),
            ..self
        }
    }
}

#[async_trait]
impl LlmProvider for OpenAiProvider {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let start = Instant::now();
        let total = options
            .timeout
            .unwrap_or_else(|| self.config.timeouts.total());
        let deadline = later(start, total);
        let body = wire::request_body(&self.config, messages, options, self.config.stream);
        let body = serde_json::to_vec(&body).map_err(|e| {
            LlmError::new(
                LlmErrorKind::Other,
                format!("cannot encode the request: {e}"),
            )
        })?;
        let state = CallState::default();
        let retry_billed = self.config.retry.retry_possibly_billed;
        let max_retry_after = Duration::from_millis(self.config.retry.max_retry_after_ms);
        let tag = options.tag.as_deref().unwrap_or("");

        let attempts = (|| async {
            let result = self.attempt(&body, deadline, &state).await;
            state.sending.store(false, Ordering::Relaxed);
            if let Err(e) = &result
                && e.possibly_billed()
            {
                state.possibly_billed.store(true, Ordering::Relaxed);
            }
            result
        })
        .retry(self.backoff())
        .sleep(tokio::time::sleep)
        .when(|e: &LlmError| e.is_transient() && (retry_billed || !e.possibly_billed()))
        .adjust(|e: &LlmError, backoff: Option<Duration>| {
            let wait = match (backoff, e.retry_after()) {
                (None, _) => return None,
                (Some(_), Some(asked)) => asked.min(max_retry_after),
                (Some(computed), None) => computed,
            };
            // A wait that ends past the deadline would only end in a timeout.
            (later(Instant::now(), wait) < deadline).then_some(wait)
        })
        .notify(|e: &LlmError, wait: Duration| {
            tracing::warn!(
                model = %self.config.model, tag, kind = ?e.kind(), status = ?e.status(),
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "LLM call failed, retrying: {}", e.message()
            );
        });

        let outcome = match timeout_at(deadline, attempts).await {
            Ok(outcome) => outcome,
            Err(_) => Err(LlmError::new(
                LlmErrorKind::Timeout,
                format!(
                    "no complete reply within the call's limit of {} ms",
                    total.as_millis()
                ),
            )),
        };
        let attempts = state.attempts.load(Ordering::Relaxed);
        let billed = state.possibly_billed.load(Ordering::Relaxed)
            || (outcome.is_err() && state.sending.load(Ordering::Relaxed));
        match outcome {
            Ok(reply) => {
                let call_id = reply
                    .id
                    .clone()
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| self.local_call_id());
                tracing::debug!(
                    model = %self.config.model, tag, call_id, attempts,
                    latency_ms = millis(start.elapsed()),
                    prompt_tokens = reply.usage.prompt_tokens,
                    completion_tokens = reply.usage.completion_tokens,
                    "LLM call done"
                );
                if billed {
                    tracing::warn!(
                        model = %self.config.model, tag, call_id, attempts,
                        "LLM call succeeded after an attempt that may also have been billed"
                    );
                }
                Ok(LlmResponse {
                    content: reply.content,
                    thinking: reply.thinking,
                    model: reply
                        .model
                        .filter(|m| !m.is_empty())
                        .unwrap_or_else(|| self.config.model.clone()),
                    provider: PROVIDER_NAME.to_owned(),
                    prompt_tokens: reply.usage.prompt_tokens,
                    completion_tokens: reply.usage.completion_tokens,
                    latency_ms: millis(start.elapsed()),
                    ttft_ms: reply.ttft.map(millis),
                    max_inter_token_ms: reply.max_gap.map(millis),
                    cache_hit: false,
                    call_id,
                    cost_usd: None,
                })
                .and_then(|r| self.check_reply(r, reply.finish_reason.as_deref(), attempts))
            }
            Err(e) => {
                let billed = billed || e.possibly_billed();
                let e = if e.kind() == LlmErrorKind::Auth {
                    let message = format!("{} ({})", e.message(), self.key_source.note());
                    with_message(e, message)
                } else {
                    e
                };
                Err(e.with_attempts(attempts).with_possibly_billed(billed))
            }
        }
    }
}

impl OpenAiProvider {
    /// Turns an empty or cut-off reply into a content error.
    fn check_reply(
        &self,
        r: LlmResponse,
        finish: Option<&str>,
        attempts: u32,
    ) -> Result<LlmResponse, LlmError> {
        let fail = |kind, message: String| {
            Err(LlmError::new(kind, message)
                .with_attempts(attempts)
                .with_possibly_billed(true))
        };
        match finish {
            Some("length") if !self.config.allow_truncated => fail(
                LlmErrorKind::InvalidResponse,
                format!(
                    "the reply was cut off at the token limit after {} completion tokens (finish_reason \"length\"; \
                     set allow_truncated to accept it)",
                    r.completion_tokens
                ),
            ),
            Some("content_filter") => fail(
                LlmErrorKind::InvalidResponse,
                "the server withheld the reply (finish_reason \"content_filter\")".to_owned(),
            ),
            _ if r.content.is_empty() => fail(
                LlmErrorKind::EmptyContent,
                format!(
                    "the reply has no content (finish_reason {:?}, {} thinking bytes)",
                    finish.unwrap_or("none"),
                    r.thinking.len()
                ),
            ),
            _ => Ok(r),
        }
    }
}

/// Reads a response body piece by piece under the attempt's deadline and idle limit.
struct BodyReader {
    response: reqwest::Response,
    deadline: Instant,
    idle: Duration,
    read: usize,
}

impl BodyReader {
    async fn next(
        &mut self,
    ) -> Result<Option<impl std::ops::Deref<Target = [u8]> + use<>>, LlmError> {
        let limit = earliest(self.deadline, later(Instant::now(), self.idle));
        match timeout_at(limit, self.response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                self.read = self.read.saturating_add(chunk.len());
                if self.read > MAX_BODY_BYTES {
                    return Err(LlmError::new(
                        LlmErrorKind::InvalidResponse,
                        format!("the reply is larger than {MAX_BODY_BYTES} bytes"),
                    )
                    .with_possibly_billed(true));
                }
                Ok(Some(chunk))
            }
            Ok(Ok(None)) => Ok(None),
            Ok(Err(e)) => Err(LlmError::new(
                LlmErrorKind::Connection,
                format!(
                    "the connection broke after {} bytes of the reply: {}",
                    self.read,
                    error_chain(&e)
                ),
            )
            .with_possibly_billed(true)),
            Err(_) => Err(LlmError::new(
                LlmErrorKind::Timeout,
                format!("the reply stalled after {} bytes", self.read),
            )
            .with_possibly_billed(true)),
        }
    }

    async fn read_all(&mut self) -> Result<Vec<u8>, LlmError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.next().await? {
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

fn parse_completion(bytes: &[u8]) -> Result<Reply, LlmError> {
    let completion: Completion = serde_json::from_slice(bytes).map_err(|e| {
        let (message, _) = wire::server_message(bytes);
        LlmError::new(
            LlmErrorKind::InvalidResponse,
            format!("the reply is not a chat completion ({e}): {message}"),
        )
        .with_possibly_billed(true)
    })?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(LlmError::new(
            LlmErrorKind::InvalidResponse,
            "the reply has an empty choices list",
        )
        .with_possibly_billed(true));
    };
    Ok(Reply {
        id: completion.id,
        model: completion.model,
        content: choice.message.content.unwrap_or_default(),
        thinking: choice.message.reasoning_content.unwrap_or_default(),
        finish_reason: choice.finish_reason,
        usage: completion.usage.unwrap_or_default(),
        ttft: None,
        max_gap: None,
    })
}

/// Reads a server-sent-events reply to its `[DONE]`, timing the tokens.
async fn read_stream(body: &mut BodyReader, sent_at: Instant) -> Result<Reply, LlmError> {
    let mut decoder = SseDecoder::default();
    let mut reply = Reply::default();
    let mut last_token: Option<Instant> = None;
    let mut saw_choice = false;
    let not_utf8 = |_| {
        LlmError::new(
            LlmErrorKind::InvalidResponse,
            "the event stream is not UTF-8",
        )
        .with_possibly_billed(true)
    };
    loop {
        match body.next().await? {
            Some(chunk) => {
                let events = decoder.feed(&chunk).map_err(not_utf8)?;
                if stream_events(
                    &events,
                    &mut reply,
                    &mut last_token,
                    &mut saw_choice,
                    sent_at,
                )? {
                    break;
                }
            }
            None => {
                let rest = decoder.finish().map_err(not_utf8)?;
                let done =
                    stream_events(&rest, &mut reply, &mut last_token, &mut saw_choice, sent_at)?;
                // Some servers close the stream after the finish reason without
                // `[DONE]`; a stream with neither was cut short.
                if !done && reply.finish_reason.is_none() {
                    return Err(LlmError::new(
                        LlmErrorKind::Connection,
                        format!(
                            "the event stream ended after {} bytes without [DONE] or a finish reason",
                            body.read
                        ),
                    )
                    .with_possibly_billed(true));
                }
                break;
            }
        }
    }
    if !saw_choice && reply.content.is_empty() {
        return Err(LlmError::new(
            LlmErrorKind::InvalidResponse,
            "the event stream carried no choices",
        )
        .with_possibly_billed(true));
    }
    Ok(reply)
}

/// Applies decoded events to the reply; true once `[DONE]` is seen.
fn stream_events(
    events: &[String],
    reply: &mut Reply,
    last_token: &mut Option<Instant>,
    saw_choice: &mut bool,
    sent_at: Instant,
) -> Result<bool, LlmError> {
    for event in events {
        let event = event.trim();
        if event == "[DONE]" {
            return Ok(true);
        }
        if event.is_empty() {
            continue;
        }
        let chunk: Chunk = serde_json::from_str(event).map_err(|e| {
            LlmError::new(
                LlmErrorKind::InvalidResponse,
                format!("a stream event is not a chat-completion chunk ({e}): {event}"),
            )
            .with_possibly_billed(true)
        })?;
        if let Some(error) = chunk.error {
            let (message, _) = wire::server_message(error.to_string().as_bytes());
            return Err(LlmError::new(
                LlmErrorKind::ServerError,
                format!("the server failed mid-stream: {message}"),
            )
            .with_possibly_billed(true));
        }
        if reply.id.is_none() {
            reply.id = chunk.id.filter(|s| !s.is_empty());
        }
        if reply.model.is_none() {
            reply.model = chunk.model.filter(|s| !s.is_empty());
        }
        if let Some(usage) = chunk.usage {
            reply.usage = usage;
        }
        if let Some(choice) = chunk.choices.into_iter().next() {
            *saw_choice = true;
            let content = choice.delta.content.unwrap_or_default();
            let thinking = choice.delta.reasoning_content.unwrap_or_default();
            if !content.is_empty() || !thinking.is_empty() {
                let now = Instant::now();
                match *last_token {
                    None => reply.ttft = Some(now.saturating_duration_since(sent_at)),
                    Some(previous) => {
                        let gap = now.saturating_duration_since(previous);
                        reply.max_gap = Some(reply.max_gap.map_or(gap, |m| m.max(gap)));
                    }
                }
                if reply.max_gap.is_none() {
                    reply.max_gap = Some(Duration::ZERO);
                }
                *last_token = Some(now);
                reply.content.push_str(&content);
                reply.thinking.push_str(&thinking);
            }
            if choice.finish_reason.is_some() {
                reply.finish_reason = choice.finish_reason;
            }
        }
    }
    Ok(false)
}

fn endpoint(base_url: &str) -> Result<reqwest::Url, ConfigError> {
    let bad = |reason: String| ConfigError::BadBaseUrl {
        url: base_url.to_owned(),
        reason,
    };
    let trimmed = base_url.trim().trim_end_matches('/');
    let full = if trimmed.ends_with("/chat/completions") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/chat/completions")
    };
    let url = reqwest::Url::parse(&full).map_err(|e| bad(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!(
            "scheme {:?} is not http or https",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "credentials belong in api_key_env, not in the URL".into()
        ));
    }
    Ok(url)
}

fn later(t: Instant, d: Duration) -> Instant {
    // A limit too far away to represent is as good as none; a year stands in for it.
    t.checked_add(d)
        .or_else(|| t.checked_add(Duration::from_secs(365 * 24 * 3600)))
        .unwrap_or(t)
}

fn earliest(a: Instant, b: Instant) -> Instant {
    a.min(b)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderMap, RETRY_AFTER};

    use super::*;

    #[test]
    fn endpoints() {
        let ok = |base: &str, expect: &str| {
            assert_eq!(
                endpoint(base).map(|u| u.to_string()).ok().as_deref(),
                Some(expect),
                "{base}"
            );
        };
        ok(
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8080/v1/chat/completions",
        );
        ok(
            "https://api.deepseek.com/v1/",
            "https://api.deepseek.com/v1/chat/completions",
        );
        ok(
            "http://h/v1/chat/completions",
            "http://h/v1/chat/completions",
        );
        assert!(endpoint("ftp://h/v1").is_err());
        assert!(endpoint("not a url").is_err());
        assert!(endpoint("https://user:pw@h/v1").is_err());
    }

    proptest::proptest! {
        #[test]
        fn reply_parsers_never_panic(text in "\\PC{0,200}", bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse_completion(text.as_bytes());
            let _ = parse_completion(&bytes);
            let _ = wire::status_error(500, &bytes);
            let mut reply = Reply::default();
            let (mut last, mut saw) = (None, false);
            let _ = stream_events(std::slice::from_ref(&text), &mut reply, &mut last, &mut saw, Instant::now());
            let mut h = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(&text) {
                h.insert(RETRY_AFTER, v);
            }
            let _ = retry_after(&h, SystemTime::now());
        }

        #[test]
        fn chunk_shaped_events_accumulate_content(parts in proptest::collection::vec("\\PC{0,20}", 1..10)) {
            let events: Vec<String> = parts
                .iter()
                .map(|p| serde_json::json!({"choices": [{"delta": {"content": p}}]}).to_string())
                .collect();
            let mut reply = Reply::default();
            let (mut last, mut saw) = (None, false);
            let done = stream_events(&events, &mut reply, &mut last, &mut saw, Instant::now());
            proptest::prop_assert!(matches!(done, Ok(false)));
            proptest::prop_assert_eq!(reply.content, parts.concat());
        }
    }
}
