//! The host as the optimizer's model: an [`LlmProvider`] that answers each request with one
//! headless run of Claude Code (`claude -p --output-format json`) or Codex (`codex exec
//! --json`), so a user with a subscription and no API key can run the loop unattended.
//!
//! Each call runs in a rollout folder of its own ([`crate::isolation`]: no user plugins, MCP
//! servers or skills, no session kept, the process marked as a rollout), empty but for the
//! request's reply schema. Claude Code gets no tools at all (`--tools ""`), the system
//! messages as its system prompt and the schema through `--json-schema` (its answer then comes
//! as `structured_output`); Codex runs read-only in the empty folder with the schema through
//! `--output-schema`. A reply that should be JSON and is not an object holding the schema's
//! required fields — read leniently, as every judge reply is — is asked for once more; a
//! second such reply is a failed call quoting the host's words (escaped, capped). Tokens come
//! from the host's own usage report (`result` for Claude Code, `turn.completed` for Codex).

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use evolution_types::{
    ChatMessage, ChatOptions, ChatRole, LlmError, LlmErrorKind, LlmProvider, LlmResponse,
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

use crate::events::cap;
use crate::isolation::Rollout;
use crate::{Host, HostSettings};

/// Largest output of one host run read (its events or its result).
const MAX_OUTPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Longest piece of the host's words quoted in an error.
const MAX_QUOTE_CHARS: usize = 600;

/// The file the reply schema is written to in the rollout folder.
const SCHEMA_FILE: &str = "reply-schema.json";

/// The file the system messages are written to in the rollout folder (Claude Code).
const SYSTEM_FILE: &str = "system-prompt.md";

/// What is added to the prompt when the first reply was not the JSON asked for.
const RETRY_NOTE: &str = "Your previous reply was not the JSON object asked for. Reply with \
                          only that JSON object, no other text.";

/// Claude Code or Codex answering chat requests.
#[derive(Debug)]
pub struct HostLlm {
    settings: HostSettings,
    timeout: Duration,
    permits: Semaphore,
    /// Variables set for the host on top of this process's environment.
    env: Vec<(String, OsString)>,
}

impl HostLlm {
    /// A provider running `settings`' host, each call within `timeout`, at most `concurrency`
    /// at a time (at least one).
    pub fn new(settings: HostSettings, timeout: Duration, concurrency: usize) -> Self {
        Self {
            settings,
            timeout,
            permits: Semaphore::new(concurrency.max(1)),
            env: Vec::new(),
        }
    }

    /// The same provider with `env` set for the host on top of this process's environment
    /// (they are also where the rollout finds `HOME` and the host's configuration home).
    pub fn with_env(mut self, env: impl IntoIterator<Item = (String, OsString)>) -> Self {
        self.env.extend(env);
        self
    }

    /// A variable as the host sees it: set by [`Self::with_env`], else this process's.
    fn var(&self, name: &str) -> Option<OsString> {
        match self.env.iter().rev().find(|(key, _)| key == name) {
            Some((_, value)) => Some(value.clone()).filter(|v| !v.is_empty()),
            None => crate::isolation::process_vars(name),
        }
    }
}

/// One run of the host: its answer and what it reported using.
#[derive(Debug, Default)]
struct Reply {
    /// The answer's text.
    text: String,
    /// The answer as a JSON value, when the host checked it against the schema.
    structured: Option<Value>,
    /// Input tokens, cached ones included.
    prompt_tokens: u64,
    /// Output tokens.
    completion_tokens: u64,
    /// What the host says the run cost, in US dollars.
    cost_usd: Option<f64>,
    /// The model the host reports.
    model: Option<String>,
}

#[async_trait]
impl LlmProvider for HostLlm {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| LlmError::new(LlmErrorKind::Cancelled, "the provider is shut down"))?;
        let started = Instant::now();
        let timeout = options.timeout.unwrap_or(self.timeout);
        let wants_json = options.json_mode || options.json_schema.is_some();
        let (system, prompt) = split(messages);
        let mut reply = self
            .run(&system, &prompt, options.json_schema.as_ref(), timeout)
            .await?;
        let mut attempts = 1;
        let mut used = (reply.prompt_tokens, reply.completion_tokens);
        let mut cost_usd = reply.cost_usd;
        if wants_json && json_reply(&reply, options.json_schema.as_ref()).is_none() {
            let again = format!("{prompt}\n\n{RETRY_NOTE}");
            reply = self
                .run(&system, &again, options.json_schema.as_ref(), timeout)
                .await
                .map_err(|e| e.with_attempts(2).with_possibly_billed(true))?;
            attempts = 2;
            used = (
                used.0 + reply.prompt_tokens,
                used.1 + reply.completion_tokens,
            );
            cost_usd = match (cost_usd, reply.cost_usd) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        let content = if wants_json {
            match json_reply(&reply, options.json_schema.as_ref()) {
                Some(value) => value.to_string(),
                None => {
                    return Err(LlmError::new(
                        LlmErrorKind::InvalidResponse,
                        format!(
                            "{} replied {attempts} time(s) without the JSON object asked for; \
                             it said: {}",
                            self.settings.host.name(),
                            quote(&reply.text)
                        ),
                    )
                    .with_attempts(attempts)
                    .with_possibly_billed(true));
                }
            }
        } else {
            reply.text
        };
        if content.trim().is_empty() {
            return Err(LlmError::new(
                LlmErrorKind::EmptyContent,
                format!("{} gave an empty answer", self.settings.host.name()),
            )
            .with_possibly_billed(true));
        }
        Ok(LlmResponse {
            content,
            model: reply
                .model
                .or_else(|| self.settings.model.clone())
                .unwrap_or_else(|| "default".to_owned()),
            provider: self.settings.host.name().to_owned(),
            prompt_tokens: used.0,
            completion_tokens: used.1,
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            cost_usd,
            ..LlmResponse::default()
        })
    }
}

impl HostLlm {
    /// One headless run of the host in a fresh rollout folder.
    async fn run(
        &self,
        system: &str,
        prompt: &str,
        schema: Option<&Value>,
        timeout: Duration,
    ) -> Result<Reply, LlmError> {
        let host = self.settings.host;
        let vars = |name: &str| self.var(name);
        let rollout = Rollout::in_root_of(host, &vars)
            .map_err(|e| LlmError::new(LlmErrorKind::Other, e.to_string()))?;
        // The optimizer's calls see no skill at all, the bundled ones included.
        if host == crate::Host::ClaudeCode {
            crate::isolation::claude::hide_bundled_skills(rollout.host_home(), &[])
                .map_err(|e| LlmError::new(LlmErrorKind::Other, e.to_string()))?;
        }
        let outcome = self.run_in(&rollout, system, prompt, schema, timeout).await;
        let finished = rollout.finish();
        let reply = outcome?;
        finished.map_err(|e| LlmError::new(LlmErrorKind::Other, e.to_string()))?;
        Ok(reply)
    }

    async fn run_in(
        &self,
        rollout: &Rollout,
        system: &str,
        prompt: &str,
        schema: Option<&Value>,
        timeout: Duration,
    ) -> Result<Reply, LlmError> {
        let host = self.settings.host;
        let work = rollout.work();
        let write = |name: &str, text: &str| {
            std::fs::write(work.join(name), text).map_err(|e| {
                LlmError::new(LlmErrorKind::Other, format!("cannot write {name}: {e}"))
            })
        };
        let mut args: Vec<String> = Vec::new();
        let mut stdin_text = prompt.to_owned();
        match host {
            Host::ClaudeCode => {
                args.extend(["-p", "--output-format", "json", "--tools", ""].map(str::to_owned));
                args.extend(rollout.args().iter().cloned());
                if !system.is_empty() {
                    write(SYSTEM_FILE, system)?;
                    args.extend(["--system-prompt-file".to_owned(), SYSTEM_FILE.to_owned()]);
                }
                if let Some(schema) = schema {
                    args.extend(["--json-schema".to_owned(), schema.to_string()]);
                }
            }
            Host::Codex => {
                args.extend(["exec", "--json", "--skip-git-repo-check"].map(str::to_owned));
                args.extend(rollout.args().iter().cloned());
                args.extend(["--sandbox".to_owned(), "read-only".to_owned()]);
                if let Some(schema) = schema {
                    write(SCHEMA_FILE, &schema.to_string())?;
                    args.extend(["--output-schema".to_owned(), SCHEMA_FILE.to_owned()]);
                }
                if !system.is_empty() {
                    stdin_text = format!("{system}\n\n{prompt}");
                }
            }
        }
        if let Some(model) = &self.settings.model {
            args.extend(["--model".to_owned(), model.clone()]);
        }
        args.extend(self.settings.extra_args.iter().cloned());
        if host == Host::Codex {
            args.push("-".to_owned());
        }
        let output = run_process(
            &self.settings.cli,
            &args,
            (&self.env, rollout),
            &stdin_text,
            timeout,
        )
        .await?;
        match host {
            Host::ClaudeCode => claude_reply(&output),
            Host::Codex => codex_reply(&output),
        }
    }
}

/// The system messages joined, and the rest as one prompt (a single user message as it is;
/// a conversation as its turns, each under its speaker's name).
fn split(messages: &[ChatMessage]) -> (String, String) {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == ChatRole::System)
        .map(|m| m.content.as_str())
        .collect();
    let turns: Vec<&ChatMessage> = messages
        .iter()
        .filter(|m| m.role != ChatRole::System)
        .collect();
    let prompt = match turns.as_slice() {
        [only] if only.role == ChatRole::User => only.content.clone(),
        turns => turns
            .iter()
            .map(|m| {
                let who = if m.role == ChatRole::User {
                    "User"
                } else {
                    "Assistant"
                };
                format!("## {who}\n\n{}", m.content)
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    (system.join("\n\n"), prompt)
}

/// Runs `cli args` in the rollout (its folder, the variables `env` and its own environment)
/// with `input` on stdin and returns its stdout, killed when it outlasts `timeout`.
async fn run_process(
    cli: &Path,
    args: &[String],
    (env, rollout): (&[(String, OsString)], &Rollout),
    input: &str,
    timeout: Duration,
) -> Result<String, LlmError> {
    let mut command = std::process::Command::new(cli);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    rollout.apply(&mut command);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| {
        LlmError::new(
            LlmErrorKind::Other,
            format!("cannot start {}: {e}", cli.display()),
        )
    })?;
    let stdin = child.stdin.take();
    let text = input.to_owned();
    let writer = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(text.as_bytes()).await;
        }
    };
    let stdout = child.stdout.take();
    let reader = async move {
        let mut bytes = Vec::new();
        if let Some(stdout) = stdout {
            let _ = stdout.take(MAX_OUTPUT_BYTES).read_to_end(&mut bytes).await;
        }
        bytes
    };
    let run = async {
        let ((), bytes) = tokio::join!(writer, reader);
        let status = child.wait().await;
        (bytes, status)
    };
    match tokio::time::timeout(timeout, run).await {
        Ok((bytes, Ok(_))) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok((_, Err(e))) => Err(LlmError::new(
            LlmErrorKind::Other,
            format!("waiting for {}: {e}", cli.display()),
        )),
        Err(_) => Err(LlmError::new(
            LlmErrorKind::Timeout,
            format!(
                "{} did not answer within {} s",
                cli.display(),
                timeout.as_secs()
            ),
        )
        .with_possibly_billed(true)),
    }
}

/// Claude Code's one `result` object: its answer, structured output and usage.
fn claude_reply(output: &str) -> Result<Reply, LlmError> {
    let result = output
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(|v| v.get("type").and_then(Value::as_str) == Some("result"))
        .ok_or_else(|| host_failed("claude", "no result", output))?;
    let text = result
        .get("result")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if result.get("is_error").and_then(Value::as_bool) == Some(true) {
        return Err(host_failed("claude", "an error", &text));
    }
    let usage = result.get("usage");
    let number = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let model = result
        .get("modelUsage")
        .and_then(Value::as_object)
        .and_then(|m| m.keys().next().cloned());
    Ok(Reply {
        text,
        structured: result
            .get("structured_output")
            .filter(|v| v.is_object())
            .cloned(),
        prompt_tokens: number("input_tokens")
            + number("cache_creation_input_tokens")
            + number("cache_read_input_tokens"),
        completion_tokens: number("output_tokens"),
        // A cost only when it is one: finite and not negative.
        cost_usd: result
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0),
        model,
    })
}

/// Codex's events: the last agent message, the turn's usage, or its failure.
fn codex_reply(output: &str) -> Result<Reply, LlmError> {
    let mut reply = Reply::default();
    let (mut completed, mut error) = (false, None);
    for event in output
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
    {
        match event.get("type").and_then(Value::as_str) {
            Some("item.completed")
                if event.pointer("/item/type").and_then(Value::as_str) == Some("agent_message") =>
            {
                reply.text = event
                    .pointer("/item/text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
            }
            Some("turn.completed") => {
                completed = true;
                let number = |key: &str| {
                    event
                        .pointer(&format!("/usage/{key}"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                };
                reply.prompt_tokens += number("input_tokens");
                reply.completion_tokens += number("output_tokens");
            }
            Some("turn.failed") => {
                error = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            Some("error") => {
                error = event
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            _ => {}
        }
    }
    match (completed, error) {
        (true, _) => Ok(reply),
        (false, Some(error)) => Err(host_failed("codex", "an error", &error)),
        (false, None) => Err(host_failed("codex", "no finished turn", output)),
    }
}

/// A failed run, quoting the host's words.
fn host_failed(program: &str, what: &str, words: &str) -> LlmError {
    let lower = words.to_lowercase();
    let kind = if ["log in", "login", "api key", "auth", "401", "403"]
        .iter()
        .any(|w| lower.contains(w))
    {
        LlmErrorKind::Auth
    } else {
        LlmErrorKind::ServerError
    };
    LlmError::new(
        kind,
        format!("{program} ended with {what}: {}", quote(words)),
    )
    .with_possibly_billed(true)
}

/// The host's words, control characters escaped and cut to [`MAX_QUOTE_CHARS`].
fn quote(words: &str) -> String {
    let escaped: String = words.trim().chars().flat_map(char::escape_debug).collect();
    format!("\"{}\"", cap(&escaped, MAX_QUOTE_CHARS))
}

/// The reply as the JSON object asked for: the host's checked output, else the text read
/// leniently; `None` when it is not an object holding every field the schema requires.
fn json_reply(reply: &Reply, schema: Option<&Value>) -> Option<Value> {
    let value = match &reply.structured {
        Some(value) => value.clone(),
        None => {
            Value::Object(evolution_diagnose::json::extract_json_from_response(&reply.text).ok()?)
        }
    };
    let required = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let object = value.as_object()?;
    for key in required {
        if !object.contains_key(key) {
            return None;
        }
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn system_messages_go_apart_and_a_conversation_keeps_its_turns() {
        let (system, prompt) = split(&[ChatMessage::system("Be brief."), ChatMessage::user("Hi")]);
        assert_eq!((system.as_str(), prompt.as_str()), ("Be brief.", "Hi"));
        let (_, prompt) = split(&[
            ChatMessage::user("a"),
            ChatMessage::assistant("b"),
            ChatMessage::user("c"),
        ]);
        assert_eq!(prompt, "## User\n\na\n\n## Assistant\n\nb\n\n## User\n\nc");
    }

    #[test]
    fn claude_results_give_the_answer_and_the_usage() {
        let out = json!({"type": "result", "is_error": false, "result": "{\"a\":1}",
            "structured_output": {"a": 1}, "total_cost_usd": 0.5,
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 3},
            "modelUsage": {"m": {}}})
        .to_string();
        let reply = claude_reply(&out).unwrap();
        assert_eq!(reply.structured, Some(json!({"a": 1})));
        assert_eq!((reply.prompt_tokens, reply.completion_tokens), (15, 3));
        assert_eq!(reply.model.as_deref(), Some("m"));
        assert_eq!(reply.cost_usd, Some(0.5));
        let unpriced = json!({"type": "result", "result": "x", "total_cost_usd": -1.0});
        assert_eq!(claude_reply(&unpriced.to_string()).unwrap().cost_usd, None);
        let failed =
            json!({"type": "result", "is_error": true, "result": "Invalid API key\u{1b}[0m"})
                .to_string();
        let error = claude_reply(&failed).unwrap_err();
        assert_eq!(error.kind(), LlmErrorKind::Auth);
        assert!(
            error.message().contains("Invalid API key\\u{1b}[0m"),
            "{error}"
        );
        assert!(claude_reply("not json").is_err());
    }

    #[test]
    fn codex_events_give_the_last_message_and_the_usage() {
        let out = [
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "first"}}),
            json!({"type": "item.completed", "item": {"type": "agent_message", "text": "{}"}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 7, "output_tokens": 2}}),
        ]
        .map(|v| v.to_string())
        .join("\n");
        let reply = codex_reply(&out).unwrap();
        assert_eq!(
            (
                reply.text.as_str(),
                reply.prompt_tokens,
                reply.completion_tokens
            ),
            ("{}", 7, 2)
        );
        // Codex reports no cost.
        assert_eq!(reply.cost_usd, None);
        let failed = json!({"type": "turn.failed", "error": {"message": "quota"}}).to_string();
        assert!(
            codex_reply(&failed)
                .unwrap_err()
                .message()
                .contains("\"quota\"")
        );
    }

    #[test]
    fn a_json_reply_needs_an_object_with_the_required_fields() {
        let schema = json!({"type": "object", "required": ["ranking"]});
        let text = |t: &str| Reply {
            text: t.to_owned(),
            ..Reply::default()
        };
        assert!(json_reply(&text("```json\n{\"ranking\": [0]}\n```"), Some(&schema)).is_some());
        assert!(json_reply(&text("{\"other\": 1}"), Some(&schema)).is_none());
        assert!(json_reply(&text("I cannot do that"), None).is_none());
        let checked = Reply {
            structured: Some(json!({"ranking": []})),
            ..Reply::default()
        };
        assert!(json_reply(&checked, Some(&schema)).is_some());
        let long = "x".repeat(5000);
        assert!(quote(&long).chars().count() < MAX_QUOTE_CHARS + 50);
    }
}
