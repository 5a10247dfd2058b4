//! An [`LlmProvider`](evolution_types::LlmProvider) over the OpenAI-compatible
//! chat-completions HTTP API (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp's
//! server).
//!
//! Key design choice: a thin `reqwest` client that reads the wire format
//! itself — tolerant of what each server adds or leaves out (DeepSeek's
//! `reasoning_content`, missing usage, a stream without `[DONE]`) — under one
//! deadline per call that no retry, backoff or `Retry-After` can stretch.
//! Failures are classified once, into the port's transient / permanent /
//! content classes, and every error says how many attempts ran and whether a
//! request may have been billed.
//!
//! The API key never leaves the provider: a server that echoes it (an
//! error quoting the `Authorization` header, say) has every occurrence
//! replaced by [`REDACTED`] in the error message or reply the provider
//! returns, and so in every log line, run log and file made from them.
//!
//! To record a run and replay it offline, wrap the provider in the
//! `evolution-llm-cassette` crate's `Recorder`.
//!
//! ```no_run
//! use evolution_llm_openai::{OpenAiConfig, OpenAiProvider};
//! use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = OpenAiConfig::new("https://api.deepseek.com/v1", "deepseek-chat");
//! config.api_key_env = Some("DEEPSEEK_API_KEY".into());
//! config.stream = true;
//! let llm = OpenAiProvider::new(config)?;
//! let reply = llm
//!     .chat(&[ChatMessage::user("Say hi")], &ChatOptions::default().with_tag("demo"))
//!     .await?;
//! println!("{} ({} ms to first token)", reply.content, reply.ttft_ms.unwrap_or(0));
//! # Ok(())
//! # }
//! ```

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod config;
mod errors;
mod provider;
mod sse;
mod wire;

pub use crate::config::{
    ConfigError, OPENAI_API_KEY_VAR, OpenAiConfig, REDACTED, RetryPolicy, Timeouts,
    usual_api_key_vars,
};
pub use crate::errors::error_chain;
pub use crate::provider::{OpenAiProvider, PROVIDER_NAME};
