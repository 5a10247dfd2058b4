//! Attaching the kernel's reply schemas to requests, for providers that decode under them.
//!
//! The kernel's requests carry a tag (`evolve.skill`, `judge.span`, …) but no schema, so that
//! a provider which cannot honour one (DeepSeek rejects `response_format: json_schema`) and
//! recorded cassettes keep working. [`WithReplySchemas`] wraps a provider that *can* — the
//! embedded local model samples under a grammar built from the schema, an OpenAI-compatible
//! server with structured outputs — and adds the schema the kernel documents for each tag.

use std::collections::BTreeMap;

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider, LlmResponse};
use serde_json::Value;

/// The JSON Schema the kernel documents for the reply to a request tagged `tag`: an
/// evolve call ([`evolution_evolve::reply_schema`]) or a judge
/// ([`evolution_diagnose::reply_schema`]). `None` for any other tag.
pub fn kernel_reply_schema(tag: &str) -> Option<Value> {
    evolution_evolve::reply_schema(tag).or_else(|| evolution_diagnose::reply_schema(tag))
}

/// A provider that adds a schema to every request that has none of its own: the one
/// registered for its tag with [`with_schema`](Self::with_schema), else
/// [`kernel_reply_schema`]. Requests without a known tag pass unchanged.
#[derive(Debug, Clone)]
pub struct WithReplySchemas<P> {
    inner: P,
    extra: BTreeMap<String, Value>,
}

impl<P> WithReplySchemas<P> {
    /// Wraps `inner`, with the kernel's schemas only.
    pub fn new(inner: P) -> Self {
        WithReplySchemas {
            inner,
            extra: BTreeMap::new(),
        }
    }

    /// The same wrapper, also attaching `schema` to requests tagged `tag` (an application's
    /// own JSON calls); it takes precedence over a kernel schema of the same tag.
    pub fn with_schema(mut self, tag: impl Into<String>, schema: Value) -> Self {
        self.extra.insert(tag.into(), schema);
        self
    }

    /// The schema a request tagged `tag` gets, if any.
    pub fn schema_for(&self, tag: &str) -> Option<Value> {
        self.extra
            .get(tag)
            .cloned()
            .or_else(|| kernel_reply_schema(tag))
    }

    /// The wrapped provider.
    pub fn into_inner(self) -> P {
        self.inner
    }
}

#[async_trait]
impl<P: LlmProvider> LlmProvider for WithReplySchemas<P> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let schema = match (&options.json_schema, &options.tag) {
            (None, Some(tag)) => self.schema_for(tag),
            _ => None,
        };
        match schema {
            Some(schema) => {
                let options = options.clone().with_json_schema(schema);
                self.inner.chat(messages, &options).await
            }
            None => self.inner.chat(messages, options).await,
        }
    }
}
