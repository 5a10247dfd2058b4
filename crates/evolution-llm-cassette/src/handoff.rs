//! A provider for people without an API key: every request is handed off to be answered
//! elsewhere (by the user's own agent session, or by hand) and read back on the next run.
//!
//! [`Handoff`] answers from `answers.jsonl` in its folder, keyed like a cassette
//! ([`cassette_key`]: the model, the messages and the options). A request it holds no answer
//! for is written to `prompts.md` (to read) and `prompts.json` (to process), and the call
//! never returns: [`Handoff::waiting`] completes once the misses have stopped arriving for a
//! moment (so one round gathers the requests made side by side), and the caller stops its run
//! there as it would on Ctrl-C, at its last consistent point. Once the answers are written, the
//! same run resumes; its requests are made again and answered. A request that changed since
//! an earlier round is said to have changed, and how (as a replay explains a miss).
//!
//! Answers are untrusted input: each line must be `{"key": "<64 hex>", "reply": "<text>"}`,
//! at most [`MAX_REPLY_BYTES`] of reply; a bad line is an error naming its line.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider, LlmResponse};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::entry::{Entry, cassette_key};

/// The answers file, written by whoever answers the prompts.
pub const ANSWERS_FILE: &str = "answers.jsonl";
/// The prompts waiting for an answer, to read.
pub const PROMPTS_FILE: &str = "prompts.md";
/// The same prompts, to process: a JSON array of `{key, tag, model, options, messages}`.
pub const PROMPTS_JSON_FILE: &str = "prompts.json";
/// Every request handed off so far, one cassette line each (to say what changed later).
pub const REQUESTS_FILE: &str = "requests.jsonl";

/// Largest reply read from the answers file.
pub const MAX_REPLY_BYTES: usize = 1024 * 1024;
/// Largest answers file read.
const MAX_ANSWERS_BYTES: u64 = 256 * 1024 * 1024;
/// How long misses must stop arriving before a round is complete.
const QUIET: Duration = Duration::from_millis(300);

/// Why a handoff folder could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandoffError {
    /// The folder or one of its files could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A line of the answers file is not an answer.
    #[error("{path}:{line}: {reason}")]
    BadAnswer {
        /// The answers file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// One line of the answers file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    key: String,
    reply: String,
}

/// A request waiting for its answer, as `prompts.json` lists it.
#[derive(Debug, Clone, Serialize)]
struct Waiting {
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
    model: String,
    options: ChatOptions,
    messages: Vec<ChatMessage>,
    /// How it differs from the closest request of an earlier round, when one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed: Option<String>,
}

/// The files of a handoff folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffFiles {
    /// The prompts to read ([`PROMPTS_FILE`]).
    pub prompts: PathBuf,
    /// The prompts to process ([`PROMPTS_JSON_FILE`]).
    pub prompts_json: PathBuf,
    /// Where the answers go ([`ANSWERS_FILE`]).
    pub answers: PathBuf,
}

/// The handoff provider of one folder.
#[derive(Debug)]
pub struct Handoff {
    dir: PathBuf,
    model: String,
    answers: HashMap<String, String>,
    known: Mutex<std::collections::HashSet<String>>,
    waiting: Mutex<BTreeMap<usize, Waiting>>,
    miss: Arc<Notify>,
}

impl Handoff {
    /// The provider of folder `dir` for `model`, with the answers written there so far. Nothing
    /// is written until a request is handed off (the folder is made then).
    ///
    /// # Errors
    /// An answers file that cannot be read or holds a bad line.
    pub fn open(dir: &Path, model: &str) -> Result<Self, HandoffError> {
        let answers = read_answers(&dir.join(ANSWERS_FILE))?;
        let known = read_known(&dir.join(REQUESTS_FILE));
        Ok(Handoff {
            dir: dir.to_path_buf(),
            model: model.to_owned(),
            answers,
            known: Mutex::new(known),
            waiting: Mutex::new(BTreeMap::new()),
            miss: Arc::new(Notify::new()),
        })
    }

    /// Removes the prompts of an earlier round (answered now, or to be asked again): called
    /// when a run starts.
    ///
    /// # Errors
    /// A prompts file that cannot be removed.
    pub fn clear_prompts(&self) -> Result<(), HandoffError> {
        for stale in [PROMPTS_FILE, PROMPTS_JSON_FILE] {
            let path = self.dir.join(stale);
            if std::fs::symlink_metadata(&path).is_ok() {
                std::fs::remove_file(&path).map_err(|e| HandoffError::Io {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            }
        }
        Ok(())
    }

    /// The folder's files.
    pub fn files(&self) -> HandoffFiles {
        HandoffFiles {
            prompts: self.dir.join(PROMPTS_FILE),
            prompts_json: self.dir.join(PROMPTS_JSON_FILE),
            answers: self.dir.join(ANSWERS_FILE),
        }
    }

    /// Answers read from the answers file.
    pub fn answered(&self) -> usize {
        self.answers.len()
    }

    /// Requests waiting for an answer in this round.
    pub fn waiting_count(&self) -> usize {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Completes once a request was handed off and no other followed for a moment: the time
    /// to stop the run. Never completes while every request is answered.
    pub async fn waiting(&self) {
        self.miss.notified().await;
        loop {
            match tokio::time::timeout(QUIET, self.miss.notified()).await {
                Ok(()) => continue,
                Err(_) => return,
            }
        }
    }

    /// Records a request without an answer and rewrites the prompt files.
    async fn hand_off(&self, messages: &[ChatMessage], options: &ChatOptions, key: String) {
        if let Err(e) = crate::private::create_dir(&self.dir) {
            tracing::warn!("cannot create {}: {e}", self.dir.display());
            // Nothing is written through a link: the request stays waiting in memory.
            return;
        }
        let requests = self.dir.join(REQUESTS_FILE);
        let first_time = self
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone());
        let changed = if first_time && requests.exists() && options.tag.is_some() {
            crate::miss::explain(&requests, &self.model, messages, options)
                .await
                .filter(|s| s.starts_with("compared with") && s.contains("tag"))
        } else {
            None
        };
        if first_time {
            let entry = Entry {
                key: key.clone(),
                model: self.model.clone(),
                tag: options.tag.clone(),
                messages: messages.to_vec(),
                options: crate::entry::keyed_options(options),
                response: LlmResponse::default(),
            };
            if let Ok(mut line) = serde_json::to_string(&entry) {
                line.push('\n');
                append(&requests, &line);
            }
        }
        let snapshot: Vec<Waiting> = {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            if !waiting.values().any(|w| w.key == key) {
                let number = waiting.len().saturating_add(1);
                waiting.insert(
                    number,
                    Waiting {
                        key,
                        tag: options.tag.clone(),
                        model: self.model.clone(),
                        options: crate::entry::keyed_options(options),
                        messages: messages.to_vec(),
                        changed,
                    },
                );
            }
            waiting.values().cloned().collect()
        };
        write_prompts(&self.dir, &snapshot);
        self.miss.notify_one();
    }
}

#[async_trait]
impl LlmProvider for Handoff {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let key = cassette_key(&self.model, messages, options);
        if let Some(reply) = self.answers.get(&key) {
            return Ok(LlmResponse {
                content: reply.clone(),
                model: self.model.clone(),
                provider: "handoff".to_owned(),
                cache_hit: true,
                call_id: key,
                ..LlmResponse::default()
            });
        }
        self.hand_off(messages, options, key).await;
        // The caller stops its run once the round is complete; this call is dropped then.
        std::future::pending().await
    }
}

/// The requests waiting in the handoff folder `dir` (`prompts.json`), as JSON; empty when
/// none wait.
///
/// # Errors
/// A handoff folder that is a symbolic link, a prompts file that cannot be read or is not
/// the list this module writes.
pub fn waiting_prompts(dir: &Path) -> Result<Vec<serde_json::Value>, HandoffError> {
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(HandoffError::Io {
            path: dir.to_path_buf(),
            message: "is a symbolic link; nothing is read or written through a link".to_owned(),
        });
    }
    let path = dir.join(PROMPTS_JSON_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| HandoffError::Io {
        path: path.clone(),
        message: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| HandoffError::Io {
        path,
        message: format!("not a list of prompts: {e}"),
    })
}

/// Adds the answer `reply` to the waiting request `key` of the handoff folder `dir` (one line
/// appended to `answers.jsonl`, created 0600): the key must be one of the requests waiting,
/// and the reply at most [`MAX_REPLY_BYTES`].
///
/// # Errors
/// A key no request waits under, a reply too long, a handoff folder or answers file that is
/// a link, or an answers file that cannot be written.
pub fn add_answer(dir: &Path, key: &str, reply: &str) -> Result<(), HandoffError> {
    let answers = dir.join(ANSWERS_FILE);
    let refuse = |reason: String| HandoffError::BadAnswer {
        path: answers.clone(),
        line: 0,
        reason,
    };
    if reply.len() > MAX_REPLY_BYTES {
        return Err(refuse(format!(
            "the reply is {} bytes, more than {MAX_REPLY_BYTES}",
            reply.len()
        )));
    }
    let waiting = waiting_prompts(dir)?;
    if !waiting
        .iter()
        .any(|w| w.get("key").and_then(serde_json::Value::as_str) == Some(key))
    {
        return Err(refuse(format!(
            "no request waits under the key {:?} ({} waiting)",
            key.chars().take(80).collect::<String>(),
            waiting.len()
        )));
    }
    if std::fs::symlink_metadata(&answers).is_ok_and(|m| !m.is_file()) {
        return Err(refuse("not a regular file (a link or a folder)".to_owned()));
    }
    let mut line = serde_json::json!({ "key": key, "reply": reply }).to_string();
    line.push('\n');
    use std::io::Write as _;
    crate::private::options()
        .create(true)
        .append(true)
        .open(&answers)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|e| HandoffError::Io {
            path: answers.clone(),
            message: e.to_string(),
        })
}

/// An answer of the handoff folder with the request it answers, for checking that its reply
/// is what the request asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnsweredRequest {
    /// The request's key.
    pub key: String,
    /// The line of `answers.jsonl` holding the answer (the last one for its key).
    pub line: usize,
    /// The request's tag (what it was for), when it had one.
    pub tag: Option<String>,
    /// Whether the request asked for JSON (JSON mode or a schema).
    pub wants_json: bool,
    /// The reply.
    pub reply: String,
}

/// The answers of the handoff folder `dir` whose requests it handed off (`requests.jsonl`),
/// in the order of the answers file; answers to requests it does not know are left out.
///
/// # Errors
/// As [`Handoff::open`]: an answers file that cannot be read or holds a bad line.
pub fn answered_requests(dir: &Path) -> Result<Vec<AnsweredRequest>, HandoffError> {
    let path = dir.join(ANSWERS_FILE);
    let answers = read_answers(&path)?;
    let mut lines: HashMap<String, usize> = HashMap::new();
    if let Ok(text) = std::fs::read_to_string(&path) {
        for (index, line) in text.lines().enumerate() {
            if let Ok(answer) = serde_json::from_str::<Answer>(line) {
                lines.insert(answer.key.to_ascii_lowercase(), index.saturating_add(1));
            }
        }
    }
    let requests = std::fs::read_to_string(dir.join(REQUESTS_FILE)).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let mut answered: Vec<AnsweredRequest> = requests
        .lines()
        .filter_map(|line| serde_json::from_str::<Entry>(line).ok())
        .filter_map(|entry| {
            let reply = answers.get(&entry.key)?;
            let line = *lines.get(&entry.key)?;
            seen.insert(entry.key.clone()).then(|| AnsweredRequest {
                wants_json: entry.options.json_mode || entry.options.json_schema.is_some(),
                key: entry.key,
                line,
                tag: entry.tag,
                reply: reply.clone(),
            })
        })
        .collect();
    answered.sort_by_key(|a| a.line);
    Ok(answered)
}

/// The answers of the file at `path` (none when it does not exist), the last per key.
fn read_answers(path: &Path) -> Result<HashMap<String, String>, HandoffError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(HashMap::new());
    };
    let bad = |line: usize, reason: String| HandoffError::BadAnswer {
        path: path.to_path_buf(),
        line,
        reason,
    };
    if !meta.is_file() {
        return Err(bad(0, "not a regular file (a link or a folder)".to_owned()));
    }
    if meta.len() > MAX_ANSWERS_BYTES {
        return Err(bad(
            0,
            format!("{} bytes, more than {MAX_ANSWERS_BYTES}", meta.len()),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| HandoffError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut answers = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let number = index.saturating_add(1);
        if line.trim().is_empty() {
            continue;
        }
        let answer: Answer = serde_json::from_str(line).map_err(|e| {
            bad(
                number,
                format!("not an answer ({{\"key\": …, \"reply\": …}}): {e}"),
            )
        })?;
        if answer.key.len() != 64 || !answer.key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(
                number,
                "the key must be the 64 hexadecimal characters of a prompt's key".to_owned(),
            ));
        }
        if answer.reply.len() > MAX_REPLY_BYTES {
            return Err(bad(
                number,
                format!(
                    "the reply is {} bytes, more than {MAX_REPLY_BYTES}",
                    answer.reply.len()
                ),
            ));
        }
        answers.insert(answer.key.to_ascii_lowercase(), answer.reply);
    }
    Ok(answers)
}

/// The keys of the requests handed off before (an unreadable file knows none).
fn read_known(path: &Path) -> std::collections::HashSet<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return std::collections::HashSet::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Entry>(line).ok())
        .map(|entry| entry.key)
        .collect()
}

/// Appends `line` to `path`; a failure only loses the comparison with later rounds.
fn append(path: &Path, line: &str) {
    use std::io::Write as _;
    let written = crate::private::options()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        tracing::warn!("cannot append to {}: {e}", path.display());
    }
}

/// Writes `prompts.md` and `prompts.json` for the requests `waiting` (each whole or not at
/// all: a temporary file renamed into place).
fn write_prompts(dir: &Path, waiting: &[Waiting]) {
    let json = serde_json::to_string_pretty(waiting).unwrap_or_else(|_| "[]".to_owned());
    for (name, text) in [
        (PROMPTS_FILE, render_prompts(waiting)),
        (PROMPTS_JSON_FILE, json),
    ] {
        let path = dir.join(name);
        let temporary = dir.join(format!(".{name}.tmp"));
        // A fresh temporary file (a stale one, or a link in its place, is removed first),
        // renamed over the old prompts: a link at `path` is replaced, never followed.
        let written = match std::fs::remove_file(&temporary) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => crate::private::options()
                .write(true)
                .create_new(true)
                .open(&temporary)
                .and_then(|mut file| {
                    use std::io::Write as _;
                    file.write_all(text.as_bytes())
                })
                .and_then(|()| std::fs::rename(&temporary, &path)),
        };
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }
}

/// The readable prompts: what to do, then each request with its key.
fn render_prompts(waiting: &[Waiting]) -> String {
    let mut out = format!(
        "# Prompts waiting for an answer\n\n\
         {} request(s) of the model were handed off. Answer each one as the model would, then \
         add one line per answer to `{ANSWERS_FILE}` in this folder:\n\n\
         ```json\n{{\"key\": \"<the request's key>\", \"reply\": \"<the whole reply>\"}}\n```\n\n\
         A request that asks for JSON wants the JSON value alone as its reply. Then run the same \
         command again: it resumes where it stopped. `{PROMPTS_JSON_FILE}` holds the same \
         requests as JSON.\n",
        waiting.len()
    );
    for (index, request) in waiting.iter().enumerate() {
        out.push_str(&format!(
            "\n## Request {} — key `{}`\n\n",
            index.saturating_add(1),
            request.key
        ));
        if let Some(tag) = &request.tag {
            out.push_str(&format!("Purpose: `{}`\n\n", tag.replace('`', "'")));
        }
        if let Some(changed) = &request.changed {
            out.push_str(&format!(
                "An earlier round asked a similar request; {changed}.\n\n"
            ));
        }
        if let Some(schema) = &request.options.json_schema {
            out.push_str(&format!(
                "The reply must be JSON matching this schema:\n\n{}",
                fenced(
                    "json",
                    &serde_json::to_string_pretty(schema).unwrap_or_default()
                )
            ));
        } else if request.options.json_mode {
            out.push_str("The reply must be one JSON value.\n\n");
        }
        for message in &request.messages {
            out.push_str(&format!("### {:?}\n\n", message.role));
            out.push_str(&fenced("text", &message.content));
        }
    }
    out
}

/// `text` in a code fence longer than any run of backticks in it.
fn fenced(info: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2).saturating_add(1));
    format!("{fence}{info}\n{text}\n{fence}\n\n")
}
