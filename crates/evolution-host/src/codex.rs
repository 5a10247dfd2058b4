//! Codex: `codex exec --json`, the question on stdin.
//!
//! Its stream is one JSON object per line: `thread.started`, `turn.started`,
//! `item.started` / `item.updated` / `item.completed` (an `item` whose `type` is
//! `agent_message`, `reasoning`, `command_execution`, `file_change`, `mcp_tool_call`,
//! `web_search`, `todo_list` or `error`), then `turn.completed` (with `usage`) or
//! `turn.failed` (with `error`); a top-level `error` reports a failure of the stream.

use serde_json::{Value, json};

use crate::HostSettings;
use crate::events::HostStream;
use crate::events::{MAX_FIELD_CHARS, Outcome, Step, cap, copy_numbers};

/// Where Codex reads a project's skills, relative to its working folder.
pub(crate) const SKILLS_ROOT: &str = ".agents/skills";

/// The project instructions file Codex reads.
pub(crate) const INSTRUCTIONS: &str = "AGENTS.md";

/// The arguments of one headless run (the prompt, `-`, is read from stdin), `isolation`'s
/// flags after the output's.
pub(crate) fn arguments(args: &HostSettings, isolation: &[String]) -> Vec<String> {
    let mut out: Vec<String> = ["exec", "--json", "--skip-git-repo-check"]
        .map(str::to_owned)
        .to_vec();
    out.extend(isolation.iter().cloned());
    if let Some(model) = &args.model {
        out.push("--model".into());
        out.push(model.clone());
    }
    out.push("--sandbox".into());
    out.push(
        args.sandbox
            .clone()
            .unwrap_or_else(|| "read-only".to_owned()),
    );
    out.extend(args.extra_args.iter().cloned());
    out.push("-".into());
    out
}

/// Codex's events, read into an [`Outcome`].
#[derive(Debug, Default)]
pub(crate) struct CodexStream {
    outcome: Outcome,
    /// The reasoning since the last tool call.
    thought: String,
    /// The last message of the agent.
    answer: Option<String>,
    /// Whether the turn completed.
    completed: bool,
    /// The last error the stream reported.
    last_error: Option<String>,
}

impl HostStream for CodexStream {
    fn event(&mut self, event: &Value) {
        let message = |v: &Value, pointer: &str| {
            v.pointer(pointer)
                .and_then(Value::as_str)
                .map(|m| cap(m, MAX_FIELD_CHARS))
        };
        match event.get("type").and_then(Value::as_str) {
            Some("item.started" | "item.updated" | "item.completed") => {
                if let Some(item) = event.get("item") {
                    let done = event.get("type").and_then(Value::as_str) == Some("item.completed");
                    self.item(item, done);
                }
            }
            Some("turn.completed") => {
                self.completed = true;
                if let Some(usage) = event.get("usage") {
                    copy_numbers(
                        usage,
                        &[
                            "input_tokens",
                            "cached_input_tokens",
                            "output_tokens",
                            "reasoning_output_tokens",
                        ],
                        "",
                        &mut self.outcome.extra,
                    );
                }
            }
            Some("turn.failed") => {
                self.outcome.error = Some(
                    message(event, "/error/message")
                        .unwrap_or_else(|| "codex reported a failed turn".to_owned()),
                );
            }
            Some("error") => self.last_error = message(event, "/message"),
            Some("thread.started") => {
                if let Some(id) = message(event, "/thread_id") {
                    self.outcome
                        .extra
                        .insert("host_session_id".into(), cap(&id, 200).into());
                }
            }
            _ => {}
        }
    }

    fn finish(mut self, exit: &str) -> Outcome {
        self.outcome.prediction = self.answer;
        if self.outcome.error.is_none() && !self.completed {
            let why = self
                .last_error
                .unwrap_or_else(|| "no error reported".to_owned());
            self.outcome.error = Some(format!(
                "codex ended without finishing its turn ({exit}): {why}"
            ));
        }
        self.outcome
    }
}

impl CodexStream {
    fn item(&mut self, item: &Value, done: bool) {
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
        let id = cap(text("id"), 200);
        let (tool_name, tool_input, tool_output, is_error) = match text("type") {
            "agent_message" => {
                if done {
                    self.answer = Some(text("text").to_owned());
                }
                return;
            }
            "reasoning" => {
                if done {
                    self.thought = cap(text("text"), MAX_FIELD_CHARS);
                }
                return;
            }
            "command_execution" => (
                "exec_command".to_owned(),
                json!({"command": text("command")}),
                text("aggregated_output").to_owned(),
                text("status") == "failed"
                    || item
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .is_some_and(|c| c != 0),
            ),
            "file_change" => (
                "apply_patch".to_owned(),
                item.get("changes").cloned().unwrap_or(Value::Null),
                text("status").to_owned(),
                text("status") == "failed",
            ),
            "mcp_tool_call" => {
                let error = item.pointer("/error/message").and_then(Value::as_str);
                let output = match error {
                    Some(error) => error.to_owned(),
                    None => item.get("result").map(Value::to_string).unwrap_or_default(),
                };
                (
                    format!("{}.{}", text("server"), text("tool")),
                    item.get("arguments").cloned().unwrap_or(Value::Null),
                    output,
                    error.is_some() || text("status") == "failed",
                )
            }
            "web_search" => (
                "web_search".to_owned(),
                json!({"query": text("query")}),
                String::new(),
                false,
            ),
            "todo_list" => (
                "update_plan".to_owned(),
                item.get("items").cloned().unwrap_or(Value::Null),
                String::new(),
                false,
            ),
            "error" => {
                // A warning of the host's (the turn goes on); a failure comes as `turn.failed`.
                return;
            }
            _ => return,
        };
        let thought = if done || self.outcome.step_mut(&id).is_none() {
            std::mem::take(&mut self.thought)
        } else {
            String::new()
        };
        let thought = match self.outcome.step_mut(&id) {
            Some(known) if thought.is_empty() => std::mem::take(&mut known.thought),
            _ => thought,
        };
        self.outcome.record(Step {
            id,
            tool_name,
            tool_input,
            tool_output: cap(&tool_output, MAX_FIELD_CHARS),
            is_error,
            finished: done,
            thought,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Outcome {
        let mut stream = CodexStream::default();
        for line in lines {
            stream.event(&serde_json::from_str(line).unwrap());
        }
        stream.finish("exit status 0")
    }

    #[test]
    fn commands_become_steps_and_the_last_message_the_answer() {
        let outcome = read(&[
            r#"{"type":"thread.started","thread_id":"th"}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata not found"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"Read the skill."}}"#,
            r#"{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"cat SKILL.md","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"cat SKILL.md","aggregated_output":"RULE\n","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"yes"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":40,"cached_input_tokens":0,"output_tokens":10}}"#,
        ]);
        assert_eq!(outcome.steps.len(), 1);
        let step = &outcome.steps[0];
        assert_eq!(step.tool_name, "exec_command");
        assert_eq!(step.tool_output, "RULE\n");
        assert_eq!(step.thought, "Read the skill.");
        assert!(step.finished && !step.is_error);
        assert_eq!(outcome.prediction.as_deref(), Some("yes"));
        assert!(outcome.error.is_none());
        assert_eq!(outcome.extra["output_tokens"], 10);
    }

    #[test]
    fn a_failed_or_unfinished_turn_is_an_error() {
        let failed = read(&[r#"{"type":"turn.failed","error":{"message":"quota exceeded"}}"#]);
        assert_eq!(failed.error.as_deref(), Some("quota exceeded"));
        let cut = read(&[r#"{"type":"error","message":"stream disconnected"}"#]);
        assert!(cut.error.unwrap().contains("stream disconnected"));
    }
}
