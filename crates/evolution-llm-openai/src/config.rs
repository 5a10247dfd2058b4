//! The provider's configuration, shaped for a TOML file.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Everything an [`OpenAiProvider`](crate::OpenAiProvider) needs, deserializable from TOML or JSON.
///
/// Only `base_url` and `model` are required; every other field has a default.
/// The API key itself never appears here: `api_key_env` names the environment
/// variable that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Base URL of the API, up to and including the version segment
    /// (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`). `/chat/completions` is appended.
    pub base_url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Name of the environment variable holding the API key; `None` sends no
    /// `Authorization` header (local servers).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Time limits.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Most requests in flight at once through this provider.
    #[serde(default = "default_max_concurrency")]
    pub max_concurrency: usize,
    /// When and how often to retry.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Temperature used when a call does not set one.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Token limit used when a call does not set one.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Ask for a JSON object reply on every call, whatever the call's options say.
    #[serde(default)]
    pub json_mode: bool,
    /// Whether the server understands `response_format: {"type": "json_schema"}`;
    /// when false a schema falls back to plain JSON mode.
    #[serde(default = "default_true")]
    pub supports_json_schema: bool,
    /// Stream the reply (server-sent events); needed for time-to-first-token figures.
    #[serde(default)]
    pub stream: bool,
    /// Accept a reply the server cut off at the token limit instead of failing
    /// with a content error.
    #[serde(default)]
    pub allow_truncated: bool,
}

impl OpenAiConfig {
    /// A configuration with every default, for `base_url` and `model`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            timeouts: Timeouts::default(),
            max_concurrency: default_max_concurrency(),
            retry: RetryPolicy::default(),
            temperature: None,
            max_tokens: None,
            json_mode: false,
            supports_json_schema: true,
            stream: false,
            allow_truncated: false,
        }
    }
}

impl OpenAiConfig {
    /// Refuses a value that no call could use as meant: a temperature that is not a number
    /// from 0 to 2 (NaN would be sent as 0), a `max_tokens` or `max_concurrency` of 0, a time
    /// limit of 0 ms (every call would time out at once), a retry growth factor below 1.
    ///
    /// # Errors
    /// The key's dotted path in the table (`timeouts.total_ms`) and what the value must be.
    pub fn check_ranges(&self) -> Result<(), (&'static str, String)> {
        let out = |key: &'static str, problem: String| Err((key, problem));
        if let Some(t) = self.temperature
            && !(t.is_finite() && (0.0..=2.0).contains(&t))
        {
            return out(
                "temperature",
                format!("must be a number from 0 to 2, got {t}"),
            );
        }
        if self.max_tokens == Some(0) {
            return out("max_tokens", "must be at least 1, got 0".to_owned());
        }
        if self.max_concurrency == 0 {
            return out("max_concurrency", "must be at least 1, got 0".to_owned());
        }
        let t = &self.timeouts;
        for (key, ms) in [
            ("timeouts.connect_ms", t.connect_ms),
            ("timeouts.first_byte_ms", t.first_byte_ms),
            ("timeouts.idle_ms", t.idle_ms),
            ("timeouts.attempt_ms", t.attempt_ms),
            ("timeouts.total_ms", t.total_ms),
        ] {
            if ms == 0 {
                return out(key, "must be at least 1 (milliseconds), got 0".to_owned());
            }
        }
        let factor = self.retry.factor;
        if !(factor.is_finite() && factor >= 1.0) {
            return out(
                "retry.factor",
                format!("must be a finite number of at least 1, got {factor}"),
            );
        }
        Ok(())
    }
}

fn default_max_concurrency() -> usize {
    8
}

fn default_true() -> bool {
    true
}

/// Time limits of a call, in milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// Limit on opening the TCP (and TLS) connection.
    pub connect_ms: u64,
    /// Limit from sending a request to receiving the response headers.
    pub first_byte_ms: u64,
    /// Limit on the silence between two pieces of a response body.
    pub idle_ms: u64,
    /// Limit on one attempt, from sending to the end of the body.
    pub attempt_ms: u64,
    /// Limit on the whole call, retries and backoff included. A call's
    /// `ChatOptions::timeout` overrides it.
    pub total_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect_ms: 10_000,
            first_byte_ms: 60_000,
            idle_ms: 60_000,
            attempt_ms: 300_000,
            total_ms: 600_000,
        }
    }
}

impl Timeouts {
    pub(crate) fn connect(&self) -> Duration {
        Duration::from_millis(self.connect_ms)
    }
    pub(crate) fn first_byte(&self) -> Duration {
        Duration::from_millis(self.first_byte_ms)
    }
    pub(crate) fn idle(&self) -> Duration {
        Duration::from_millis(self.idle_ms)
    }
    pub(crate) fn attempt(&self) -> Duration {
        Duration::from_millis(self.attempt_ms)
    }
    pub(crate) fn total(&self) -> Duration {
        Duration::from_millis(self.total_ms)
    }
}

/// Which failures are retried, how often, and how long to wait in between.
///
/// Waits grow exponentially from `initial_backoff_ms` by `factor` up to
/// `max_backoff_ms`, each with random jitter; a 429 waits what its
/// `Retry-After` asks (capped at `max_retry_after_ms`). No wait ever runs past
/// the call's overall deadline: when it would, the call fails at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// First wait.
    pub initial_backoff_ms: u64,
    /// Largest wait computed by the backoff.
    pub max_backoff_ms: u64,
    /// Growth factor of the wait.
    pub factor: f32,
    /// Largest `Retry-After` honoured; a longer request is waited this long.
    pub max_retry_after_ms: u64,
    /// Retry failures after which the server may already have processed (and
    /// billed) the request: a timeout or dropped connection after the request
    /// was sent. When false such a failure is returned at once; either way the
    /// final error reports `possibly_billed`.
    pub retry_possibly_billed: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff_ms: 500,
            max_backoff_ms: 20_000,
            factor: 2.0,
            max_retry_after_ms: 60_000,
            retry_possibly_billed: true,
        }
    }
}

/// Providers whose servers are known by their host, with the environment
/// variable their own tools read the key from.
const PROVIDER_KEY_VARS: [(&str, &str); 5] = [
    ("deepseek.com", "DEEPSEEK_API_KEY"),
    ("openrouter.ai", "OPENROUTER_API_KEY"),
    ("groq.com", "GROQ_API_KEY"),
    ("mistral.ai", "MISTRAL_API_KEY"),
    ("together.xyz", "TOGETHER_API_KEY"),
];

/// The variable most OpenAI-compatible clients read the key from.
pub const OPENAI_API_KEY_VAR: &str = "OPENAI_API_KEY";

/// The environment variables the key of the server at `base_url` is usually
/// kept in, to look at when no `api_key_env` is configured, most specific
/// first: the provider's own variable when the host is a known provider's
/// (`api.deepseek.com` → `DEEPSEEK_API_KEY`; also OpenRouter, Groq, Mistral
/// and Together), then [`OPENAI_API_KEY_VAR`].
pub fn usual_api_key_vars(base_url: &str) -> Vec<&'static str> {
    let host = reqwest::Url::parse(base_url.trim())
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
        .unwrap_or_default();
    let mut vars: Vec<&'static str> = PROVIDER_KEY_VARS
        .iter()
        .filter(|(domain, _)| {
            host == *domain
                || host
                    .strip_suffix(domain)
                    .is_some_and(|rest| rest.ends_with('.'))
        })
        .map(|(_, var)| *var)
        .collect();
    vars.push(OPENAI_API_KEY_VAR);
    vars
}

/// An API key read from the environment. Its `Debug` never shows the key.
#[derive(Clone)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    pub(crate) fn new(key: String) -> Self {
        ApiKey(key)
    }
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `<redacted>`
    /// (borrowed when there is none). Keys shorter than
    /// [`MIN_REDACTED_KEY_CHARS`] are left alone: replacing a short string
    /// would mangle ordinary text, and such a key guards nothing.
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.0.chars().count() < MIN_REDACTED_KEY_CHARS || !text.contains(self.0.as_str()) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(text.replace(self.0.as_str(), REDACTED))
    }
}

/// What stands in for the API key wherever a server echoed it.
pub const REDACTED: &str = "<redacted>";

/// Keys this short are not looked for in replies and messages.
pub(crate) const MIN_REDACTED_KEY_CHARS: usize = 8;

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Why a provider could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `api_key_env` names a variable that is not set (or not valid Unicode).
    #[error("environment variable {var} (api_key_env) is not set")]
    MissingApiKey {
        /// The variable's name.
        var: String,
    },
    /// `base_url` is not an absolute http(s) URL.
    #[error("base_url {url:?} is not an absolute http or https URL: {reason}")]
    BadBaseUrl {
        /// The configured value.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value is out of range.
    #[error("invalid configuration: {0}")]
    Invalid(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

#[cfg(test)]
mod range_tests {
    use super::*;

    #[test]
    fn out_of_range_values_name_their_key() {
        let ok = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
        assert_eq!(ok.check_ranges(), Ok(()));
        let key_of = |config: OpenAiConfig| config.check_ranges().unwrap_err().0;
        for t in [f32::NAN, f32::INFINITY, -0.5, 2.5] {
            let mut c = ok.clone();
            c.temperature = Some(t);
            assert_eq!(key_of(c), "temperature", "{t}");
        }
        let mut c = ok.clone();
        c.temperature = Some(0.0);
        assert_eq!(c.check_ranges(), Ok(()));
        let mut c = ok.clone();
        c.max_tokens = Some(0);
        assert_eq!(key_of(c), "max_tokens");
        let mut c = ok.clone();
        c.max_concurrency = 0;
        assert_eq!(key_of(c), "max_concurrency");
        let mut c = ok.clone();
        c.timeouts.total_ms = 0;
        assert_eq!(key_of(c), "timeouts.total_ms");
        let mut c = ok.clone();
        c.timeouts.connect_ms = 0;
        assert_eq!(key_of(c), "timeouts.connect_ms");
        let mut c = ok;
        c.retry.factor = f32::NAN;
        assert_eq!(key_of(c), "retry.factor");
    }
}
