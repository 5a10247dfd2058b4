//! The `local` provider: the embedded GGUF model (evolution-llm-local), configured by
//! `[llm.local]`, with the kernel's reply schemas attached so its JSON replies always parse.
//!
//! ```toml
//! [llm.local]
//! model = "models/other.gguf"   # default: the model `skill-evolve fetch-model` downloads
//! threads = 2                   # compute threads per generation
//! slots = 1                     # generations at once
//! context_tokens = 8192         # prompt plus reply
//! max_tokens = 768              # reply budget when a request sets none
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use evolution_harness::WithReplySchemas;
use evolution_llm_local::{LocalConfig, LocalLlm, LocalLlmError};
use evolution_types::LlmProvider;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{bad_at, bad_option};

/// The `[llm.local]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LocalSection {
    model: Option<PathBuf>,
    threads: Option<u32>,
    slots: Option<usize>,
    context_tokens: Option<u32>,
    max_tokens: Option<u32>,
}

/// The default context window: SmolLM2 was trained on 8192 tokens, and the kernel's evolve
/// prompts (skill text plus cases) often exceed llama.cpp's usual 4096.
const DEFAULT_CONTEXT: u32 = 8192;
/// The default reply budget: room for a few edits, short enough for a small model to finish.
const DEFAULT_MAX_TOKENS: u32 = 768;

/// Loads the local model described by `table` (read from `config_path`; a relative `model`
/// is relative to that file's folder). Returns the provider, its one-line description and
/// the model's name.
pub async fn local_provider(
    table: &toml::Table,
    config_path: Option<&Path>,
) -> anyhow::Result<(Arc<dyn LlmProvider>, String, String)> {
    let section: LocalSection =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                let problem = format!("[llm.local]: {}", e.message());
                match config_path {
                    Some(path) => bad_at(path, None, problem),
                    None => bad_option(problem),
                }
            })?;
    let mut config = match &section.model {
        Some(model) => {
            let base = config_path.and_then(Path::parent).unwrap_or(Path::new(""));
            LocalConfig::new(base.join(model))
        }
        None => LocalConfig::default_model().map_err(load_error)?,
    };
    config.context_tokens = section.context_tokens.unwrap_or(DEFAULT_CONTEXT);
    config.default_max_tokens = section.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if let Some(threads) = section.threads {
        config = config.with_threads(threads);
    }
    if let Some(slots) = section.slots {
        config = config.with_slots(slots);
    }
    let threads = config.threads_per_slot;
    let llm = tokio::task::spawn_blocking(move || LocalLlm::load(config))
        .await
        .map_err(|e| anyhow::anyhow!("the model loading thread failed: {e}"))?
        .map_err(load_error)?;
    let description = format!(
        "local {} ({threads} threads, JSON replies under the kernel's schemas)",
        llm.model_name()
    );
    let model = llm.model_name().to_owned();
    let mut provider = WithReplySchemas::new(llm);
    for (tag, schema) in own_reply_schemas() {
        provider = provider.with_schema(tag, schema);
    }
    Ok((Arc::new(provider), description, model))
}

/// The schemas of `evolve`'s own JSON calls (made by `evolution_evolve::reflect`): a
/// reflection replies like the kernel's skill evolve call, with its edits first and at least
/// one of them (a small model held to a grammar otherwise spends its reply on notes and
/// proposes nothing; the meta-reflection and the confirmation still judge what it proposes);
/// the meta-reflection lists which failure modes the candidate addresses.
fn own_reply_schemas() -> Vec<(&'static str, Value)> {
    let reflect = reflect_schema();
    let id = json!({"type": "string", "maxLength": 120});
    let meta = json!({
        "type": "object",
        "properties": {
            "addressed": {"type": "array", "items": id, "maxItems": 32},
            "unaddressed": {
                "type": "array",
                "maxItems": 32,
                "items": {
                    "type": "object",
                    "properties": {"id": id, "why": {"type": "string", "maxLength": 300}},
                    "required": ["id", "why"],
                },
            },
            "summary": {"type": "string", "maxLength": 400},
        },
        "required": ["addressed", "unaddressed", "summary"],
    });
    vec![
        ("skill_evolve.reflect", reflect),
        ("skill_evolve.meta_reflect", meta),
    ]
}

/// The kernel's `evolve.skill` reply schema, reordered so that `edits` comes first and holds
/// at least one edit.
fn reflect_schema() -> Value {
    let Some(mut schema) = evolution_evolve::reply_schema("evolve.skill") else {
        return Value::Bool(true);
    };
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        let mut reordered = serde_json::Map::new();
        if let Some(mut edits) = properties.remove("edits") {
            if let Some(edits) = edits.as_object_mut() {
                edits.insert("minItems".to_owned(), json!(1));
            }
            reordered.insert("edits".to_owned(), edits);
        }
        reordered.append(properties);
        *properties = reordered;
    }
    schema
}

/// Every load failure is a bad input (exit 2): a missing or corrupt model file, a bad setting
/// (The message names the model file and, when it is missing or corrupt, the command that
/// downloads it.)
fn load_error(e: LocalLlmError) -> anyhow::Error {
    bad_option(e.to_string())
}
