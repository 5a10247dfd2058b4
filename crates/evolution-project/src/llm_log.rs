//! Every LLM call as one `tracing` line: its tag, how long it took, whether
//! a recording answered, and, when it failed, why — for a reply the provider
//! could not use (empty, cut off), its reason; for a reply that is not the
//! JSON object a call asked for, how it begins. Printed
//! only with `-v` (see `verbose.rs`); without a subscriber the lines cost
//! next to nothing.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use evolution_evolve::parse_llm_json;
use evolution_types::{
    ChatMessage, ChatOptions, LlmError, LlmErrorClass, LlmProvider, LlmResponse,
};

use crate::render::terminal_safe;

/// Characters of an unusable reply shown in its line.
const OPENING_CHARS: usize = 80;

/// Whether the call asked for a JSON reply.
fn asks_json(options: &ChatOptions) -> bool {
    options.json_mode || options.json_schema.is_some()
}

/// The first [`OPENING_CHARS`] characters of `text`, `…` marking a cut.
fn opening(text: &str) -> String {
    let mut out: String = text.chars().take(OPENING_CHARS).collect();
    if text.chars().nth(OPENING_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// A provider whose calls are logged.
pub(crate) struct LoggedLlm {
    inner: Arc<dyn LlmProvider>,
}

impl LoggedLlm {
    /// Logs the calls made through `inner`.
    pub(crate) fn new(inner: Arc<dyn LlmProvider>) -> Self {
        LoggedLlm { inner }
    }
}

#[async_trait]
impl LlmProvider for LoggedLlm {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let start = Instant::now();
        let result = self.inner.chat(messages, options).await;
        let latency_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        let tag = terminal_safe(options.tag.as_deref().unwrap_or("untagged")).into_owned();
        match &result {
            Ok(reply) if asks_json(options) && parse_llm_json(&reply.content).is_none() => {
                tracing::warn!(
                    "LLM call {tag}: {latency_ms} ms, reply is not a JSON object as asked (the \
                     caller may repair it or ask again); it begins {:?}",
                    terminal_safe(&opening(&reply.content))
                );
            }
            Ok(reply) => tracing::info!(
                "LLM call {tag}: {latency_ms} ms, {} prompt + {} completion tokens{}",
                reply.prompt_tokens,
                reply.completion_tokens,
                if reply.cache_hit {
                    ", answered from a recording"
                } else {
                    ""
                }
            ),
            Err(e) if e.class() == LlmErrorClass::Content => tracing::warn!(
                "LLM call {tag}: {latency_ms} ms, reply unusable ({:?}): {}",
                e.kind(),
                terminal_safe(e.message())
            ),
            Err(e) => tracing::warn!(
                "LLM call {tag}: {latency_ms} ms, failed ({:?}): {}",
                e.kind(),
                terminal_safe(e.message())
            ),
        }
        result
    }
}
