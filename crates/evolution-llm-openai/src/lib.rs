//! An [`LlmProvider`](evolution_types::LlmProvider) over the OpenAI-compatible
//! chat-completions HTTP API (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp's
//! server), and a record/replay layer for any provider.
//!
//! Key design choice: a thin `reqwest` client that reads the wire format
//! itself — tolerant of what each server adds or leaves out (DeepSeek's
//! `reasoning_content`, missing usage, a stream without `[DONE]`) — under one
//! deadline per call that no retry, backoff or `Retry-After` can stretch.
//! Failures are classified once, into the port's transient / permanent /
//! content classes, and every error says how many attempts ran and whether a
//! request may have been billed.
//!
//! [`Recorder`] wraps any provider with a JSONL cassette keyed by a SHA-256 of
//! the model, messages and options, so that a run can be replayed offline and
//! deterministically. Each recorded call is synced to disk before it returns;
//! in `RecordIfMissing` mode a torn last line is dropped on reopen and
//! identical concurrent requests reach the provider once, so the cassette also
//! serves as a killed run's journal of finished calls.
//!
//! ```no_run
//! use evolution_llm_openai::{CassetteMode, OpenAiConfig, OpenAiProvider, Recorder};
//! use evolution_types::{ChatMessage, ChatOptions, LlmProvider};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = OpenAiConfig::new("https://api.deepseek.com/v1", "deepseek-chat");
//! config.api_key_env = Some("DEEPSEEK_API_KEY".into());
//! config.stream = true;
//! let llm = OpenAiProvider::new(config)?;
//! let llm = Recorder::open(llm, "run.cassette.jsonl", CassetteMode::RecordIfMissing, "deepseek-chat").await?;
//! let reply = llm
//!     .chat(&[ChatMessage::user("Say hi")], &ChatOptions::default().with_tag("demo"))
//!     .await?;
//! println!("{} ({} ms to first token)", reply.content, reply.ttft_ms.unwrap_or(0));
//! # Ok(())
//! # }
//! ```

mod config;
mod provider;
mod replay;
mod sse;
mod wire;

pub use crate::config::{ConfigError, OpenAiConfig, RetryPolicy, Timeouts};
pub use crate::provider::{OpenAiProvider, PROVIDER_NAME};
pub use crate::replay::{CassetteError, CassetteMode, Recorder, cassette_key};
