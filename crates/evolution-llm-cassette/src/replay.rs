//! Record/replay: any provider behind a JSONL cassette keyed by request hash.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider, LlmResponse};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;

use crate::entry::{Entry, cassette_key, keyed_options};

/// How a [`Recorder`] uses its cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CassetteMode {
    /// Call the provider for every request and write a fresh cassette. The
    /// recording goes to a temporary file beside the cassette, which replaces
    /// an existing cassette only once a call has succeeded: a run whose calls
    /// all fail leaves the old recordings untouched.
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
    /// Replay found a last line cut short (a recording killed mid-write). Replay
    /// refuses such a cassette rather than drop the call silently: recording again
    /// with record-if-missing keeps every whole line and repairs the end.
    #[error(
        "cassette {path}, line {line}: the last line is cut short (the recording was interrupted); record it again or remove that line"
    )]
    TornLine {
        /// The cassette file.
        path: PathBuf,
        /// 1-based number of the cut line.
        line: usize,
    },
    /// Replay found no recording of the request.
    #[error("cassette miss: no recording of this request (key {key}{}){}", tag_note(.tag), changed_note(.changed))]
    Miss {
        /// The request's key.
        key: String,
        /// The request's tag, for finding the caller.
        tag: Option<String>,
        /// How the request differs from the closest recording (the same
        /// tag's first): the model, the options, or where a message's text
        /// changed. `None` when not worked out.
        changed: Option<String>,
    },
    /// The file a recording would replace is not a regular file (a folder,
    /// a pipe, a device): found when the cassette is opened, before any call.
    #[error("cassette {path}: cannot record here: {reason}")]
    NotAFile {
        /// The cassette path.
        path: PathBuf,
        /// What is there instead.
        reason: String,
    },
}

fn tag_note(tag: &Option<String>) -> String {
    tag.as_ref()
        .map(|t| format!(", tag {t:?}"))
        .unwrap_or_default()
}

fn changed_note(changed: &Option<String>) -> String {
    changed
        .as_ref()
        .map(|c| format!("; {c}"))
        .unwrap_or_default()
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
///
/// Every recorded call is appended as one line, flushed and synced to disk
/// before its answer is returned, so a process killed at any point loses at
/// most the call in flight. Identical requests made at the same time in
/// [`CassetteMode::RecordIfMissing`] reach the provider once: the others
/// wait and get the recorded answer. In [`CassetteMode::RecordIfMissing`] the
/// cassette is therefore a journal a resumed run can answer from: reopening
/// it drops a torn last line (a write the kill cut short) and replays every
/// finished call without asking the provider again.
#[derive(Debug)]
pub struct Recorder<P> {
    inner: P,
    model: String,
    mode: CassetteMode,
    path: PathBuf,
    recorded: std::sync::Mutex<HashMap<String, Recorded>>,
    file: tokio::sync::Mutex<Sink>,
    /// One lock per request key in flight (`RecordIfMissing`), so identical
    /// concurrent requests reach the provider once.
    in_flight: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Where recorded calls are written.
#[derive(Debug, Default)]
struct Sink {
    /// The open file, if the mode records.
    file: Option<tokio::fs::File>,
    /// In [`CassetteMode::Record`] until the first call is recorded: the
    /// temporary file `file` writes to, renamed onto the cassette then.
    pending: Option<PathBuf>,
}

/// The temporary file a [`CassetteMode::Record`] cassette is written to
/// until its first call succeeds: hidden, beside `path`, named by process.
fn pending_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "cassette".into(), |n| n.to_string_lossy());
    path.with_file_name(format!(".{name}.{}.recording", std::process::id()))
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
        let sink = match mode {
            CassetteMode::Record => {
                check_record_target(&path).await?;
                let pending = pending_path(&path);
                // Named by the cassette, not the hidden temporary file: the
                // user chose the cassette's place.
                let file = tokio::fs::File::create(&pending).await.map_err(io)?;
                Sink {
                    file: Some(file),
                    pending: Some(pending),
                }
            }
            CassetteMode::Replay => {
                if let Tail::Torn { line, .. } = load(&path, &mut recorded).await? {
                    return Err(CassetteError::TornLine { path, line });
                }
                Sink::default()
            }
            CassetteMode::RecordIfMissing => {
                let tail = match tokio::fs::metadata(&path).await {
                    Ok(_) => Some(load(&path, &mut recorded).await?),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(io(e)),
                };
                // Owner-only, and never through a link: the journal of a run folder holds
                // every prompt and reply of the run.
                let mut options = crate::private::options();
                options.create(true).append(true);
                let mut file = tokio::fs::OpenOptions::from(options)
                    .open(&path)
                    .await
                    .map_err(io)?;
                match tail {
                    Some(Tail::Torn { keep, .. }) => {
                        tracing::warn!(
                            cassette = %path.display(),
                            "dropping a torn last line (a write cut short by a crash)"
                        );
                        file.set_len(keep).await.map_err(io)?;
                        file.sync_data().await.map_err(io)?;
                    }
                    Some(Tail::Unterminated) => {
                        file.write_all(b"\n").await.map_err(io)?;
                        file.flush().await.map_err(io)?;
                        file.sync_data().await.map_err(io)?;
                    }
                    Some(Tail::Clean) | None => {}
                }
                Sink {
                    file: Some(file),
                    pending: None,
                }
            }
        };
        Ok(Recorder {
            inner,
            model: model.into(),
            mode,
            path,
            recorded: std::sync::Mutex::new(recorded),
            file: tokio::sync::Mutex::new(sink),
            in_flight: std::sync::Mutex::new(HashMap::new()),
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

    /// How fast the calls the cassette held when it was opened were answered (their
    /// recorded token counts and times).
    pub fn measured_speed(&self) -> crate::MeasuredSpeed {
        let recorded = self
            .recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut speed = crate::MeasuredSpeed::default();
        for response in recorded.values().flat_map(|r| &r.responses) {
            speed.add(response);
        }
        speed
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
            changed: None,
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
            tag: options.tag.clone(),
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
        let mut sink = self.file.lock().await;
        if let Some(file) = sink.file.as_mut() {
            // One write per line, flushed and synced before the answer is
            // returned: a finished call survives a crash, and a crash in the
            // middle leaves at most a torn last line, which the next open in
            // `RecordIfMissing` drops.
            file.write_all(line.as_bytes()).await.map_err(io)?;
            file.flush().await.map_err(io)?;
            file.sync_data().await.map_err(io)?;
        }
        if let Some(pending) = sink.pending.take() {
            // The first recorded call: the fresh cassette replaces the old
            // one. The open file follows the rename, so later calls append
            // to the cassette itself.
            if let Err(source) = tokio::fs::rename(&pending, &self.path).await {
                sink.pending = Some(pending);
                return Err(io(source));
            }
        }
        drop(sink);
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

impl<P> Drop for Recorder<P> {
    /// Removes the temporary recording of a [`CassetteMode::Record`]
    /// cassette no call succeeded on; the old cassette stays as it was.
    fn drop(&mut self) {
        if let Some(pending) = self.file.get_mut().pending.take() {
            // Best effort: a leftover hidden file is harmless.
            let _ = std::fs::remove_file(pending);
        }
    }
}

/// Refuses a recording target that is there and is not a regular file (a
/// folder, a pipe, a device, a socket): the recording would fail only after
/// its first paid call, or silently replace the special file.
async fn check_record_target(path: &Path) -> Result<(), CassetteError> {
    let reason = match tokio::fs::metadata(path).await {
        Ok(meta) if meta.is_file() => return Ok(()),
        Ok(meta) if meta.is_dir() => "it is a folder; name a file",
        Ok(_) => "it is not a regular file (a pipe, a device or a socket)",
        // Missing (or behind a path that is not a folder): creating the
        // temporary recording beside it reports that.
        Err(_) => return Ok(()),
    };
    Err(CassetteError::NotAFile {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    })
}

/// How a cassette file ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Every line ends with a newline.
    Clean,
    /// The last line is a whole entry without its newline.
    Unterminated,
    /// The last line is a partial entry (a write cut short); the file's
    /// first `keep` bytes are its whole lines.
    Torn {
        /// Length of the whole lines.
        keep: u64,
        /// 1-based number of the cut line.
        line: usize,
    },
}

fn parse_entry(path: &Path, line_no: usize, line: &[u8]) -> Result<Entry, CassetteError> {
    let entry: Entry = serde_json::from_slice(line).map_err(|source| CassetteError::Parse {
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
    Ok(entry)
}

/// Reads every entry of the cassette into `recorded`. A last line without
/// its newline that is not a whole entry is a write cut short by a crash:
/// it is skipped and reported as [`Tail::Torn`]. Any other bad line is an
/// error.
async fn load(
    path: &Path,
    recorded: &mut HashMap<String, Recorded>,
) -> Result<Tail, CassetteError> {
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|source| CassetteError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let mut tail = Tail::Clean;
    let mut offset: usize = 0;
    for (index, piece) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let line_no = index.saturating_add(1);
        let start = offset;
        offset = offset.saturating_add(piece.len());
        let (line, terminated) = match piece.strip_suffix(b"\n") {
            Some(line) => (line, true),
            None => (piece, false),
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let entry = match parse_entry(path, line_no, line) {
            Ok(entry) => entry,
            Err(CassetteError::Parse { .. }) if !terminated => {
                tail = Tail::Torn {
                    keep: u64::try_from(start).unwrap_or(u64::MAX),
                    line: line_no,
                };
                break;
            }
            Err(e) => return Err(e),
        };
        if !terminated {
            tail = Tail::Unterminated;
        }
        recorded
            .entry(entry.key)
            .or_default()
            .responses
            .push(entry.response);
    }
    Ok(tail)
}

#[async_trait]
impl<P: LlmProvider> LlmProvider for Recorder<P> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let key = cassette_key(&self.model, messages, options);
        if self.mode == CassetteMode::RecordIfMissing {
            // Identical requests in flight at once wait for the first: it
            // asks the provider, the others get its recorded answer.
            let slot = {
                let mut in_flight = self
                    .in_flight
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                Arc::clone(in_flight.entry(key.clone()).or_default())
            };
            let guard = slot.lock().await;
            let result = self.answer(key.clone(), messages, options).await;
            drop(guard);
            let mut in_flight = self
                .in_flight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Only the map and this call hold the slot: nobody else waits.
            if Arc::strong_count(&slot) == 2 {
                in_flight.remove(&key);
            }
            return result;
        }
        self.answer(key, messages, options).await
    }
}

impl<P: LlmProvider> Recorder<P> {
    async fn answer(
        &self,
        key: String,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        if self.mode != CassetteMode::Record
            && let Some(response) = self.take(&key)
        {
            return Ok(response);
        }
        if self.mode == CassetteMode::Replay {
            let changed = crate::miss::explain(&self.path, &self.model, messages, options).await;
            let miss = CassetteError::Miss {
                key,
                tag: options.tag.clone(),
                changed,
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
