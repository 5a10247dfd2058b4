//! Record/replay: any provider behind a JSONL cassette keyed by request hash.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

/// How a [`Recorder`] uses its cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CassetteMode {
    /// Call the provider for every request and write a fresh cassette (an
    /// existing file is replaced).
    Record,
    /// Answer only from the cassette; a request it does not hold is an error.
    /// The provider is never called.
    Replay,
    /// Answer from the cassette where it holds the request, otherwise call the
    /// provider and append the answer.
    RecordIfMissing,
}

/// What went wrong with a cassette.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read, created or written.
    #[error("cassette {path}: {source}")]
    Io {
        /// The cassette file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line is not a cassette entry.
    #[error("cassette {path}, line {line}: {source}")]
    Parse {
        /// The cassette file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A line's stored key does not match its request (the file was edited, or
    /// written by an incompatible version).
    #[error(
        "cassette {path}, line {line}: stored key {stored} does not match the request's key {computed}"
    )]
    KeyMismatch {
        /// The cassette file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The key on the line.
        stored: String,
        /// The key its request hashes to.
        computed: String,
    },
    /// Replay found no recording of the request.
    #[error("cassette miss: no recording of this request (key {key}{})", tag_note(.tag))]
    Miss {
        /// The request's key.
        key: String,
        /// The request's tag, for finding the caller.
        tag: Option<String>,
    },
}

fn tag_note(tag: &Option<String>) -> String {
    tag.as_ref()
        .map(|t| format!(", tag {t:?}"))
        .unwrap_or_default()
}

/// One line of a cassette.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    key: String,
    model: String,
    messages: Vec<ChatMessage>,
    options: ChatOptions,
    response: LlmResponse,
}

/// The cassette key of a request: the SHA-256 (hex) of the model, the messages
/// and the options, serialized canonically. `tag` and `timeout` are left out:
/// they do not change what the model is asked.
pub fn cassette_key(model: &str, messages: &[ChatMessage], options: &ChatOptions) -> String {
    let request = serde_json::json!({
        "v": 1,
        "model": model,
        "messages": messages,
        "options": keyed_options(options),
    });
    let digest = Sha256::digest(canonical(request).to_string().as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

fn keyed_options(options: &ChatOptions) -> ChatOptions {
    ChatOptions {
        tag: None,
        timeout: None,
        ..options.clone()
    }
}

/// The value with every object's keys sorted, so that key order never changes a hash.
fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut pairs: Vec<(String, Value)> = map.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().map(|(k, v)| (k, canonical(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

#[derive(Debug, Default)]
struct Recorded {
    responses: Vec<LlmResponse>,
    served: usize,
}

/// Wraps a provider with a JSONL cassette, for offline, deterministic runs.
///
/// Identical requests (same key) recorded several times are replayed in the
/// order they were recorded; once they run out the last one repeats. Replayed
/// responses have `cache_hit = true`. Failed calls are not recorded.
#[derive(Debug)]
pub struct Recorder<P> {
    inner: P,
    model: String,
    mode: CassetteMode,
    path: PathBuf,
    recorded: std::sync::Mutex<HashMap<String, Recorded>>,
    file: tokio::sync::Mutex<Option<tokio::fs::File>>,
}

impl<P: LlmProvider> Recorder<P> {
    /// Opens the cassette at `path` for `mode`. `model` is the model name the
    /// inner provider is configured with; it is part of every key.
    pub async fn open(
        inner: P,
        path: impl AsRef<Path>,
        mode: CassetteMode,
        model: impl Into<String>,
    ) -> Result<Self, CassetteError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| CassetteError::Io {
            path: path.clone(),
            source,
        };
        let mut recorded = HashMap::new();
        let file = match mode {
            CassetteMode::Record => Some(tokio::fs::File::create(&path).await.map_err(io)?),
            CassetteMode::Replay => {
                load(&path, &mut recorded).await?;
                None
            }
            CassetteMode::RecordIfMissing => {
                match tokio::fs::metadata(&path).await {
                    Ok(_) => load(&path, &mut recorded).await?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(e)),
                }
                let file = tokio::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .await
                    .map_err(io)?;
                Some(file)
            }
        };
        Ok(Recorder {
            inner,
            model: model.into(),
            mode,
            path,
            recorded: std::sync::Mutex::new(recorded),
            file: tokio::sync::Mutex::new(file),
        })
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The mode the cassette was opened in.
    pub fn mode(&self) -> CassetteMode {
        self.mode
    }

    /// The cassette file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded answer to a request, or [`CassetteError::Miss`].
    pub fn replay(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, CassetteError> {
        let key = cassette_key(&self.model, messages, options);
        self.take(&key).ok_or_else(|| CassetteError::Miss {
            key,
            tag: options.tag.clone(),
        })
    }

    fn take(&self, key: &str) -> Option<LlmResponse> {
        let mut recorded = self
            .recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = recorded.get_mut(key)?;
        let index = entry.served.min(entry.responses.len().checked_sub(1)?);
        entry.served = entry.served.saturating_add(1);
        let mut response = entry.responses.get(index)?.clone();
        response.cache_hit = true;
        Some(response)
    }

    async fn record(
        &self,
        key: String,
        messages: &[ChatMessage],
        options: &ChatOptions,
        response: &LlmResponse,
    ) -> Result<(), CassetteError> {
        let entry = Entry {
            key,
            model: self.model.clone(),
            messages: messages.to_vec(),
            options: keyed_options(options),
            response: response.clone(),
        };
        let mut line = serde_json::to_string(&entry).map_err(|e| CassetteError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push('\n');
        let io = |source| CassetteError::Io {
            path: self.path.clone(),
            source,
        };
        let mut file = self.file.lock().await;
        if let Some(file) = file.as_mut() {
            // One write per line, so a crash leaves whole lines behind.
            file.write_all(line.as_bytes()).await.map_err(io)?;
            file.flush().await.map_err(io)?;
        }
        drop(file);
        if self.mode == CassetteMode::RecordIfMissing {
            let mut recorded = self
                .recorded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let slot = recorded.entry(entry.key).or_default();
            slot.responses.push(entry.response);
            // This call consumed the fresh recording.
            slot.served = slot.responses.len();
        }
        Ok(())
    }
}

async fn load(path: &Path, recorded: &mut HashMap<String, Recorded>) -> Result<(), CassetteError> {
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|source| CassetteError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    for (index, line) in text.lines().enumerate() {
        let line_no = index.saturating_add(1);
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(line).map_err(|source| CassetteError::Parse {
            path: path.to_path_buf(),
            line: line_no,
            source,
        })?;
        let computed = cassette_key(&entry.model, &entry.messages, &entry.options);
        if computed != entry.key {
            return Err(CassetteError::KeyMismatch {
                path: path.to_path_buf(),
                line: line_no,
                stored: entry.key,
                computed,
            });
        }
        recorded
            .entry(entry.key)
            .or_default()
            .responses
            .push(entry.response);
    }
    Ok(())
}

#[async_trait]
impl<P: LlmProvider> LlmProvider for Recorder<P> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let key = cassette_key(&self.model, messages, options);
        if self.mode != CassetteMode::Record
            && let Some(response) = self.take(&key)
        {
            return Ok(response);
        }
        if self.mode == CassetteMode::Replay {
            let miss = CassetteError::Miss {
                key,
                tag: options.tag.clone(),
            };
            return Err(LlmError::new(LlmErrorKind::Other, miss.to_string()));
        }
        let response = self.inner.chat(messages, options).await?;
        self.record(key, messages, options, &response)
            .await
            .map_err(|e| {
                LlmError::new(
                    LlmErrorKind::Other,
                    format!("the call succeeded but was not recorded: {e}"),
                )
                .with_possibly_billed(true)
            })?;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ignores_tag_timeout_and_key_order() {
        let msgs = [ChatMessage::user("q")];
        let base = ChatOptions::default().with_temperature(0.2);
        let k = cassette_key("m", &msgs, &base);
        assert_eq!(k.len(), 64);
        let tagged = base.clone().with_tag("judge.span");
        let timed = ChatOptions {
            timeout: Some(std::time::Duration::from_secs(3)),
            ..base.clone()
        };
        assert_eq!(cassette_key("m", &msgs, &tagged), k);
        assert_eq!(cassette_key("m", &msgs, &timed), k);
        assert_ne!(cassette_key("m2", &msgs, &base), k);
        assert_ne!(cassette_key("m", &[ChatMessage::user("q2")], &base), k);
        assert_ne!(
            cassette_key("m", &msgs, &base.clone().with_temperature(0.3)),
            k
        );
        let a = ChatOptions::default().with_json_schema(serde_json::json!({"a": 1, "b": 2}));
        let b = ChatOptions::default().with_json_schema(serde_json::json!({"b": 2, "a": 1}));
        assert_eq!(cassette_key("m", &msgs, &a), cassette_key("m", &msgs, &b));
    }
}
