//! Codex CLI sessions: the rollout files Codex writes under
//! `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, one JSON object per line,
//! `{"timestamp", "type", "payload"}`.
//!
//! Records read: `session_meta` (id, working folder), `turn_context` (working folder),
//! `response_item` (a `message` from the user or the assistant; `function_call`,
//! `custom_tool_call` and `local_shell_call` with their `*_output`), `event_msg`
//! (`turn_aborted` is an interruption, `exec_command_end` and `patch_apply_end` say whether a
//! call failed; the others repeat what the response items hold), and `compacted`,
//! `world_state` and `token_usage_record` (Codex 0.171's context and usage bookkeeping,
//! nothing of the conversation), which are passed over. Older files
//! without the envelope (the items themselves, one per line, after a first line holding the
//! session's `id`) are read too. Any other record type is skipped and counted.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::limits::Budget;
use crate::outcome::outcome_in_message;
use crate::session::{
    LineError, Role, Session, SourceKind, TextPolicy, ToolCall, Turn, content_text,
    json_object_line, skills_in_paths,
};

/// Response item types that are read or knowingly passed over.
const KNOWN_ITEMS: [&str; 10] = [
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "ghost_snapshot",
    "compaction",
];

/// User messages Codex adds itself (instructions, environment); they are not turns.
const CONTEXT_PREFIXES: [&str; 5] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<user_shell_command>",
    "<turn_aborted>",
];

/// How a tool output starts when the user declined the call.
const REJECTED_OUTPUTS: [&str; 2] = ["exec command rejected by user", "patch rejected by user"];

/// Reads one Codex rollout file line by line.
#[derive(Debug)]
pub struct CodexReader {
    session: Session,
    policy: TextPolicy,
    calls: HashMap<String, usize>,
    found_id: Option<String>,
}

impl CodexReader {
    /// A reader for the session `fallback_id` (used when the file names no session id).
    pub fn new(fallback_id: &str, policy: TextPolicy) -> Self {
        CodexReader {
            session: Session::new(SourceKind::Codex, fallback_id),
            policy,
            calls: HashMap::new(),
            found_id: None,
        }
    }

    /// Reads line `line_no` (1-based). Blank lines are ignored.
    ///
    /// # Errors
    /// [`LineError`] when the line is not a JSON object: the session should be skipped.
    pub fn push_line(&mut self, line_no: usize, line: &str) -> Result<(), LineError> {
        let Some(record) = json_object_line(&mut self.policy.budget, line_no, line)? else {
            return Ok(());
        };
        if let Some(ts) = record.get("timestamp").and_then(Value::as_str) {
            self.session.saw_timestamp(ts);
        }
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        let empty = Value::Object(Map::new());
        let payload = record.get("payload").unwrap_or(&empty);
        match kind {
            "session_meta" => self.meta(payload),
            "turn_context" => {
                if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                    let cwd = self.policy.text(cwd);
                    self.session.saw_project(cwd);
                }
            }
            "response_item" => self.item(payload),
            "event_msg" => self.event(payload),
            "compacted" | "world_state" | "token_usage_record" => {}
            // Older files: the first line is the session's metadata, the others the items.
            "" if record.contains_key("id") && line_no <= 1 => {
                self.meta(&Value::Object(record.clone()));
            }
            "" if record.get("record_type").is_some() => {}
            other if KNOWN_ITEMS.contains(&other) => self.item(&Value::Object(record.clone())),
            _ => self.skip(),
        }
        // A bound crossed by a document embedded in this one skips the session too.
        LineError::check(line_no, &self.policy.budget)
    }

    fn skip(&mut self) {
        self.session.skipped_records = self.session.skipped_records.saturating_add(1);
    }

    fn meta(&mut self, payload: &Value) {
        if let Some(id) = payload.get("id").and_then(Value::as_str)
            && !id.is_empty()
            && self.found_id.is_none()
        {
            self.found_id = Some(self.policy.text(id));
        }
        if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
            let cwd = self.policy.text(cwd);
            self.session.saw_project(cwd);
        }
        if let Some(ts) = payload.get("timestamp").and_then(Value::as_str) {
            self.session.saw_timestamp(ts);
        }
    }

    fn item(&mut self, item: &Value) {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        let call_id = item
            .get("call_id")
            .or_else(|| item.get("id"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match kind {
            "message" => self.message(item),
            "function_call" => {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                // A tool of an MCP server is called by its name within the server's namespace
                // (`namespace: "mcp__orders"`, `name: "lookup"`): named in full, as Claude Code
                // names it (`mcp__orders__lookup`), so it is never taken for a built-in tool.
                let qualified = match item.get("namespace").and_then(Value::as_str) {
                    Some(namespace) if !namespace.is_empty() => format!("{namespace}__{name}"),
                    _ => name.to_owned(),
                };
                let name = qualified.as_str();
                // Arguments are a JSON document in a string; kept as JSON when they parse.
                let input = match item.get("arguments") {
                    Some(Value::String(s)) => self
                        .policy
                        .budget
                        .parse_embedded(s)
                        .unwrap_or_else(|| Value::String(s.clone())),
                    Some(other) => other.clone(),
                    None => Value::Null,
                };
                self.call(call_id, name, input);
            }
            "custom_tool_call" => {
                let name = item.get("name").and_then(Value::as_str).unwrap_or("");
                let input = item.get("input").cloned().unwrap_or(Value::Null);
                self.call(call_id, name, input);
            }
            "local_shell_call" => {
                let input = item.get("action").cloned().unwrap_or(Value::Null);
                self.call(call_id, "local_shell", input);
            }
            "web_search_call" => {
                let input = item.get("action").cloned().unwrap_or(Value::Null);
                self.call(call_id, "web_search", input);
            }
            "function_call_output" | "custom_tool_call_output" => {
                let output = item.get("output").unwrap_or(&Value::Null);
                let (text, failed) = read_output(&mut self.policy.budget, output);
                self.result(&call_id, &text, failed);
            }
            "reasoning" | "ghost_snapshot" | "compaction" => {}
            _ => self.skip(),
        }
    }

    fn message(&mut self, item: &Value) {
        let role = match item.get("role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            // Developer and system messages are instructions, not turns.
            _ => return,
        };
        let text = content_text(item.get("content"));
        let trimmed = text.trim_start();
        if trimmed.is_empty() {
            return;
        }
        if role == Role::User {
            if CONTEXT_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
                return;
            }
            if let Some(outcome) = outcome_in_message(&text) {
                self.session.outcome = Some(outcome);
            }
        }
        let text = self.policy.text(&text);
        self.session.turns.push(Turn {
            role,
            text,
            timestamp: None,
            subagent: None,
        });
    }

    fn call(&mut self, call_id: String, name: &str, input: Value) {
        for text in strings(&input) {
            self.session.skills.extend(skills_in_paths(text));
        }
        let thought = self
            .session
            .turns
            .last()
            .filter(|t| t.role == Role::Assistant)
            .map(|t| t.text.clone())
            .unwrap_or_default();
        let call = ToolCall::started(&mut self.policy, &call_id, name, input, thought, None);
        self.session.tool_calls.push(call);
        self.calls
            .insert(call_id, self.session.tool_calls.len().saturating_sub(1));
    }

    fn result(&mut self, call_id: &str, text: &str, failed: bool) {
        let output = self.policy.text(text);
        // Codex answers a call the user declined with this sentence as the whole output.
        let rejected = REJECTED_OUTPUTS
            .iter()
            .any(|p| text.trim_start().starts_with(p));
        let index = match self.calls.get(call_id) {
            Some(&i) => i,
            None => {
                self.call(call_id.to_owned(), "", Value::Null);
                self.session.tool_calls.len().saturating_sub(1)
            }
        };
        if let Some(call) = self.session.tool_calls.get_mut(index) {
            call.output = Some(output);
            call.is_error = call.is_error || failed || rejected;
            call.rejected = rejected;
        }
    }

    fn event(&mut self, payload: &Value) {
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
        let call_id = payload.get("call_id").and_then(Value::as_str).unwrap_or("");
        let mark_failed = |reader: &mut Self| {
            if let Some(&i) = reader.calls.get(call_id)
                && let Some(call) = reader.session.tool_calls.get_mut(i)
            {
                call.is_error = true;
            }
        };
        match kind {
            "turn_aborted" => {
                self.session.interruptions = self.session.interruptions.saturating_add(1);
            }
            "exec_command_end"
                if payload
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .is_some_and(|code| code != 0) =>
            {
                mark_failed(self);
            }
            "patch_apply_end" if payload.get("success").and_then(Value::as_bool) == Some(false) => {
                mark_failed(self);
            }
            // Every other event repeats what the response items hold (messages, reasoning,
            // token counts) or marks a boundary; they are known and carry nothing new.
            _ => {}
        }
    }

    /// The session read so far.
    pub fn finish(mut self) -> (Session, TextPolicy) {
        if let Some(id) = self.found_id {
            self.session.id = id;
        }
        (self.session, self.policy)
    }
}

/// Every string of a JSON value, depth first.
fn strings(value: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.push(s.as_str()),
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    out
}

/// A tool output's text and whether it reports a failure. Codex writes the output as a string:
/// a JSON document `{"output": …, "metadata": {"exit_code": …}}`, or text starting
/// `Exit code: N`; some versions write an object `{"content": …, "success": false}`.
fn read_output(budget: &mut Budget, output: &Value) -> (String, bool) {
    match output {
        Value::String(s) => {
            if let Some(Value::Object(doc)) = budget.parse_embedded(s)
                && (doc.contains_key("output") || doc.contains_key("metadata"))
            {
                let text = doc
                    .get("output")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let code = doc
                    .get("metadata")
                    .and_then(|m| m.get("exit_code"))
                    .and_then(Value::as_i64);
                return (text, code.is_some_and(|c| c != 0));
            }
            let code = s
                .lines()
                .find_map(|l| l.trim().strip_prefix("Exit code:"))
                .and_then(|c| c.trim().parse::<i64>().ok());
            (s.clone(), code.is_some_and(|c| c != 0))
        }
        Value::Object(doc) => {
            let text = match doc.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => Value::Object(doc.clone()).to_string(),
            };
            (
                text,
                doc.get("success").and_then(Value::as_bool) == Some(false),
            )
        }
        Value::Null => (String::new(), false),
        other => (other.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_yields_turns_calls_errors_and_interruptions() {
        let lines = [
            r#"{"timestamp":"2026-03-01T10:00:00Z","type":"session_meta","payload":{"id":"abc","cwd":"/w/p"}}"#,
            r#"{"timestamp":"2026-03-01T10:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}"#,
            r#"{"timestamp":"2026-03-01T10:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests"}]}}"#,
            r#"{"timestamp":"2026-03-01T10:00:03Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat skills/lint/SKILL.md\"]}","call_id":"c1"}}"#,
            r#"{"timestamp":"2026-03-01T10:00:04Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"no such file\",\"metadata\":{\"exit_code\":1}}"}}"#,
            r#"{"timestamp":"2026-03-01T10:00:05Z","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}"#,
            r#"{"timestamp":"2026-03-01T10:00:06Z","type":"mystery","payload":{}}"#,
            r#"{"timestamp":"2026-03-01T10:00:07Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}"#,
        ];
        let mut r = CodexReader::new("file-stem", TextPolicy::default());
        for (i, l) in lines.iter().enumerate() {
            r.push_line(i + 1, l).unwrap();
        }
        let s = r.finish().0;
        assert_eq!(s.id, "abc");
        assert_eq!(s.projects, ["/w/p"]);
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.tool_calls.len(), 1);
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("no such file"));
        assert_eq!(s.interruptions, 1);
        assert_eq!(s.skipped_records, 1);
        assert!(s.used_skill("lint"));
        assert_eq!(s.last_answer(), Some("Done."));
    }

    #[test]
    fn a_tool_of_an_mcp_server_is_named_with_its_namespace() {
        let mut r = CodexReader::new("s", TextPolicy::default());
        let lines = [
            r#"{"type":"response_item","payload":{"type":"function_call","name":"lookup","namespace":"mcp__orders","arguments":"{}","call_id":"a"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"b"}}"#,
        ];
        for (i, l) in lines.iter().enumerate() {
            r.push_line(i + 1, l).unwrap();
        }
        let s = r.finish().0;
        let names: Vec<&str> = s.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["mcp__orders__lookup", "shell"]);
        assert!(!crate::host_tools::is_host_builtin(names[0]));
    }

    #[test]
    fn codex_0_171_bookkeeping_records_are_known_and_passed_over() {
        let mut r = CodexReader::new("s", TextPolicy::default());
        let lines = [
            r#"{"timestamp":"2026-12-05T05:08:49Z","ordinal":4,"type":"world_state","payload":{"full":true,"state":{"environments":{}}}}"#,
            r#"{"timestamp":"2026-12-05T05:08:50Z","ordinal":11,"type":"token_usage_record","payload":{"thread_id":"t","usage":{"input_tokens":50}}}"#,
        ];
        for (i, l) in lines.iter().enumerate() {
            r.push_line(i + 1, l).unwrap();
        }
        let s = r.finish().0;
        assert_eq!(s.skipped_records, 0);
        assert!(s.turns.is_empty());
    }

    #[test]
    fn a_declined_call_is_refused_not_failed_and_a_mention_is_neither() {
        let mut r = CodexReader::new("s", TextPolicy::default());
        let lines = [
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"a"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"a","output":"exec command rejected by user"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"b"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"b","output":"docs.md: a call is rejected by user choice"}}"#,
        ];
        for (i, l) in lines.iter().enumerate() {
            r.push_line(i + 1, l).unwrap();
        }
        let s = r.finish().0;
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.tool_errors(), 0);
    }

    #[test]
    fn outputs_report_failures_in_each_shape() {
        assert!(
            read_output(
                &mut Budget::default(),
                &Value::String("Exit code: 2\nWall time: 1s".into())
            )
            .1
        );
        assert!(
            !read_output(
                &mut Budget::default(),
                &Value::String("Exit code: 0".into())
            )
            .1
        );
        assert!(
            read_output(
                &mut Budget::default(),
                &serde_json::json!({"content": "x", "success": false})
            )
            .1
        );
        assert!(!read_output(&mut Budget::default(), &Value::String("plain".into())).1);
    }
}
