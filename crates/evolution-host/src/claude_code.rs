//! Claude Code: `claude -p --output-format stream-json --verbose`, the question on stdin.
//!
//! Its stream is one JSON object per line: `system` (the session's start), `assistant`
//! (a model message: `text` and `tool_use` blocks), `user` (the `tool_result` blocks of the
//! calls), and one `result` (`result` text, `is_error`, `subtype`, `total_cost_usd`,
//! `usage`, `num_turns`).

use serde_json::Value;

use crate::HostSettings;
use crate::events::HostStream;
use crate::events::{MAX_FIELD_CHARS, Outcome, Step, cap, content_text, copy_numbers};

/// Where Claude Code reads project skills, relative to its working folder.
pub(crate) const SKILLS_ROOT: &str = ".claude/skills";

/// The project instructions file Claude Code reads.
pub(crate) const INSTRUCTIONS: &str = "CLAUDE.md";

/// The arguments of one headless run (the prompt goes on stdin), `isolation`'s flags after
/// the output's.
pub(crate) fn arguments(args: &HostSettings, isolation: &[String]) -> Vec<String> {
    let mut out: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"]
        .map(str::to_owned)
        .to_vec();
    out.extend(isolation.iter().cloned());
    if let Some(model) = &args.model {
        out.push("--model".into());
        out.push(model.clone());
    }
    if let Some(mode) = &args.permission_mode {
        out.push("--permission-mode".into());
        out.push(mode.clone());
    }
    if !args.allowed_tools.is_empty() {
        out.push("--allowedTools".into());
        out.push(args.allowed_tools.join(","));
    }
    if !args.disallowed_tools.is_empty() {
        out.push("--disallowedTools".into());
        out.push(args.disallowed_tools.join(","));
    }
    out.extend(args.extra_args.iter().cloned());
    out
}

/// Claude Code's events, read into an [`Outcome`].
#[derive(Debug, Default)]
pub(crate) struct ClaudeStream {
    outcome: Outcome,
    /// The model's text since its last tool call.
    text: String,
    /// Whether the `result` event arrived.
    finished: bool,
}

impl HostStream for ClaudeStream {
    fn event(&mut self, event: &Value) {
        match event.get("type").and_then(Value::as_str) {
            Some("assistant") => self.assistant(event),
            Some("user") => self.tool_results(event),
            Some("result") => self.result(event),
            Some("system") if event.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.init(event);
            }
            _ => {}
        }
    }

    fn finish(mut self, exit: &str) -> Outcome {
        if !self.finished {
            self.outcome.error = Some(format!("claude ended without a result ({exit})"));
            if !self.text.trim().is_empty() {
                self.outcome.prediction = Some(self.text);
            }
        }
        self.outcome
    }
}

/// Most names kept of one list of the init event.
const MAX_INIT_NAMES: usize = 200;

impl ClaudeStream {
    /// The session's start: the skills, MCP servers and plugins the host loaded, kept as
    /// `host_skills`, `host_mcp_servers` and `host_plugins` (names, capped).
    fn init(&mut self, event: &Value) {
        for (key, field) in [
            ("skills", "host_skills"),
            ("mcp_servers", "host_mcp_servers"),
            ("plugins", "host_plugins"),
        ] {
            let Some(items) = event.get(key).and_then(Value::as_array) else {
                continue;
            };
            let names: Vec<Value> = items
                .iter()
                .filter_map(|item| {
                    item.as_str()
                        .or_else(|| item.get("name").and_then(Value::as_str))
                })
                .take(MAX_INIT_NAMES)
                .map(|name| cap(name, 200).into())
                .collect();
            self.outcome.extra.insert(field.into(), names.into());
        }
    }

    fn assistant(&mut self, event: &Value) {
        let Some(blocks) = event.pointer("/message/content").and_then(Value::as_array) else {
            return;
        };
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        if !self.text.is_empty() {
                            self.text.push('\n');
                        }
                        self.text.push_str(&cap(text, MAX_FIELD_CHARS));
                        self.text = cap(&self.text, MAX_FIELD_CHARS);
                    }
                }
                Some("tool_use") => {
                    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
                    self.outcome.record(Step {
                        id: cap(text("id"), 200),
                        tool_name: text("name").to_owned(),
                        tool_input: block.get("input").cloned().unwrap_or(Value::Null),
                        thought: std::mem::take(&mut self.text),
                        ..Step::default()
                    });
                }
                _ => {}
            }
        }
    }

    fn tool_results(&mut self, event: &Value) {
        let Some(blocks) = event.pointer("/message/content").and_then(Value::as_array) else {
            return;
        };
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Some(step) = self.outcome.step_mut(id) {
                step.tool_output = content_text(block.get("content").unwrap_or(&Value::Null));
                step.is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
                step.finished = true;
            }
        }
    }

    fn result(&mut self, event: &Value) {
        self.finished = true;
        let text = event
            .get("result")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("");
        let failed = event.get("is_error").and_then(Value::as_bool) == Some(true)
            || (!subtype.is_empty() && subtype != "success");
        if failed {
            let detail = text.clone().unwrap_or_default();
            self.outcome.error = Some(format!("claude reported {subtype:?}: {detail}"));
        }
        self.outcome.prediction = text;
        let extra = &mut self.outcome.extra;
        copy_numbers(event, &["total_cost_usd"], "", extra);
        copy_numbers(event, &["num_turns", "duration_ms"], "host_", extra);
        if let Some(usage) = event.get("usage") {
            copy_numbers(
                usage,
                &[
                    "input_tokens",
                    "output_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ],
                "",
                extra,
            );
        }
        if let Some(id) = event.get("session_id").and_then(Value::as_str) {
            extra.insert("host_session_id".into(), cap(id, 200).into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Outcome {
        let mut stream = ClaudeStream::default();
        for line in lines {
            stream.event(&serde_json::from_str(line).unwrap());
        }
        stream.finish("exit status 0")
    }

    #[test]
    fn tool_calls_become_steps_and_the_result_the_answer() {
        let outcome = read(&[
            r#"{"type":"system","subtype":"init","skills":["answering","doctor"],"mcp_servers":[],"plugins":[{"name":"p","path":"builtin"}]}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"echo hi"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"hi\u0007"}],"is_error":false}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/x"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"no such file","is_error":true}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"yes","total_cost_usd":0.01,"num_turns":3,"usage":{"input_tokens":10,"output_tokens":2}}"#,
        ]);
        assert_eq!(outcome.steps.len(), 2);
        assert_eq!(outcome.steps[0].tool_name, "Bash");
        assert_eq!(outcome.steps[0].thought, "Let me check.");
        assert_eq!(outcome.steps[0].tool_output, "hi\u{7}");
        assert!(outcome.steps[1].is_error);
        assert_eq!(outcome.prediction.as_deref(), Some("yes"));
        assert!(outcome.error.is_none());
        assert_eq!(outcome.extra["total_cost_usd"], 0.01);
        assert_eq!(outcome.extra["input_tokens"], 10);
        assert_eq!(
            outcome.extra["host_skills"],
            serde_json::json!(["answering", "doctor"])
        );
        assert_eq!(outcome.extra["host_mcp_servers"], serde_json::json!([]));
        assert_eq!(outcome.extra["host_plugins"], serde_json::json!(["p"]));
    }

    #[test]
    fn an_error_result_or_no_result_is_an_error() {
        let failed =
            read(&[r#"{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}"#]);
        assert!(failed.error.unwrap().contains("error_max_turns"));
        let cut = read(&[
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"half"}]}}"#,
        ]);
        assert!(cut.error.unwrap().contains("without a result"));
    }
}
