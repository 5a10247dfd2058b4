//! A scripted `LlmProvider`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};

/// One request the scripted provider received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// 0-based order of arrival.
    pub index: usize,
    /// The messages sent.
    pub messages: Vec<ChatMessage>,
    /// The options sent.
    pub options: ChatOptions,
}

impl RecordedRequest {
    /// The content of the last user message (empty when there is none).
    pub fn last_user(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == evolution_types::ChatRole::User)
            .map_or("", |m| m.content.as_str())
    }

    /// Every message's content joined with blank lines: handy for `contains` checks.
    pub fn full_text(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

type Responder = dyn Fn(&RecordedRequest) -> Result<LlmResponse, LlmError> + Send + Sync;

struct State {
    queue: VecDeque<Result<LlmResponse, LlmError>>,
    fallback: Option<Arc<Responder>>,
    requests: Vec<RecordedRequest>,
}

/// An [`LlmProvider`] that answers from a script.
///
/// Replies are taken from a queue first; when the queue is empty the
/// responder closure answers (if one is set), otherwise the call fails with
/// an [`LlmErrorKind::Other`] error naming the call. Every request is
/// recorded before it is answered.
pub struct ScriptedLlm {
    state: Mutex<State>,
    latency: Duration,
    model: String,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl Default for ScriptedLlm {
    fn default() -> Self {
        ScriptedLlm::new()
    }
}

impl std::fmt::Debug for ScriptedLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("ScriptedLlm")
            .field("queued", &state.queue.len())
            .field("requests", &state.requests.len())
            .field("latency", &self.latency)
            .field("model", &self.model)
            .finish()
    }
}

impl ScriptedLlm {
    /// A provider with an empty script: every call fails until replies are queued.
    pub fn new() -> Self {
        ScriptedLlm {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                fallback: None,
                requests: Vec::new(),
            }),
            latency: Duration::ZERO,
            model: "scripted-model".to_owned(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        }
    }

    /// A provider that answers with `replies`, in order.
    pub fn with_replies<I, S>(replies: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let llm = ScriptedLlm::new();
        for reply in replies {
            llm.push_reply(reply);
        }
        llm
    }

    /// A provider that answers every call with `responder(request)`.
    pub fn from_fn<F>(responder: F) -> Self
    where
        F: Fn(&RecordedRequest) -> Result<String, LlmError> + Send + Sync + 'static,
    {
        let llm = ScriptedLlm::new();
        llm.set_responder(responder);
        llm
    }

    /// Sets the closure that answers once the queue is empty.
    pub fn set_responder<F>(&self, responder: F)
    where
        F: Fn(&RecordedRequest) -> Result<String, LlmError> + Send + Sync + 'static,
    {
        let model = self.model.clone();
        let responder: Arc<Responder> = Arc::new(move |request| {
            responder(request).map(|text| response(&model, text, request.index))
        });
        self.lock().fallback = Some(responder);
    }

    /// Adds a delay to every call (simulated with `tokio::time::sleep`).
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Sets the model name reported in responses.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Queues a reply text.
    pub fn push_reply(&self, text: impl Into<String>) {
        let text = text.into();
        let mut state = self.lock();
        let index = state.requests.len() + state.queue.len();
        state
            .queue
            .push_back(Ok(response(&self.model, text, index)));
    }

    /// Queues a full response (to script token counts, thinking, ...).
    pub fn push_response(&self, response: LlmResponse) {
        self.lock().queue.push_back(Ok(response));
    }

    /// Queues an error.
    pub fn push_error(&self, error: LlmError) {
        self.lock().queue.push_back(Err(error));
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// Number of calls received so far.
    pub fn call_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Queued replies not yet consumed.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    /// The largest number of calls that were in progress at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another test thread panicked; the state is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn answer(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let mut state = self.lock();
        let request = RecordedRequest {
            index: state.requests.len(),
            messages: messages.to_vec(),
            options: options.clone(),
        };
        state.requests.push(request.clone());
        if let Some(next) = state.queue.pop_front() {
            return next;
        }
        match state.fallback.clone() {
            Some(responder) => {
                drop(state);
                responder(&request)
            }
            None => Err(LlmError::new(
                LlmErrorKind::Other,
                format!("scripted provider has no reply for call #{}", request.index),
            )),
        }
    }
}

fn response(model: &str, content: String, index: usize) -> LlmResponse {
    LlmResponse {
        completion_tokens: content.split_whitespace().count() as u64,
        content,
        model: model.to_owned(),
        provider: "scripted".to_owned(),
        call_id: format!("scripted-{index}"),
        ..LlmResponse::default()
    }
}

struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl LlmProvider for ScriptedLlm {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let _guard = InFlight(&self.in_flight);
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let started = tokio::time::Instant::now();
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let mut result = self.answer(messages, options);
        if let Ok(response) = &mut result {
            let elapsed = started.elapsed().as_millis();
            response.latency_ms = u64::try_from(elapsed).unwrap_or(u64::MAX);
        }
        result
    }
}
