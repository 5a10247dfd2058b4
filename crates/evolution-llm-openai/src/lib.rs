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
//! deterministically.

mod config;
mod provider;
mod replay;
mod sse;
mod wire;

pub use crate::config::{ConfigError, OpenAiConfig, RetryPolicy, Timeouts};
pub use crate::provider::{OpenAiProvider, PROVIDER_NAME};
pub use crate::replay::{CassetteError, CassetteMode, Recorder, cassette_key};
