//! Integration tests of `evolution-llm-openai` through its public API, against
//! a real HTTP server on 127.0.0.1.

mod cassette;
mod config;
mod faults;
mod plain;
mod server;
mod streaming;

use evolution_llm_openai::{OpenAiConfig, OpenAiProvider};
use evolution_types::ChatMessage;

/// A configuration for `base_url` with fast backoff and short timeouts.
pub(crate) fn fast_config(base_url: &str) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(base_url, "test-model");
    c.retry.max_retries = 2;
    c.retry.initial_backoff_ms = 20;
    c.retry.max_backoff_ms = 100;
    c.timeouts.connect_ms = 1_000;
    c.timeouts.first_byte_ms = 2_000;
    c.timeouts.idle_ms = 2_000;
    c.timeouts.attempt_ms = 3_000;
    c.timeouts.total_ms = 5_000;
    c
}

/// A provider with a test key.
pub(crate) fn provider(config: OpenAiConfig) -> OpenAiProvider {
    OpenAiProvider::with_api_key(config, "sk-test-secret").expect("valid config")
}

/// The question every test asks.
pub(crate) fn question() -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You answer briefly."),
        ChatMessage::user("2+2?"),
    ]
}
