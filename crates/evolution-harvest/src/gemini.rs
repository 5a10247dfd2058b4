//! Gemini CLI sessions: the chat files Gemini CLI records under
//! `~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json`, one JSON document per
//! session (its chat recording: `sessionId`, `projectHash`, `startTime`, `lastUpdated` and
//! `messages`). The project hash is the SHA-256 (hex) of the project folder's path.
//!
//! Messages read: `user` (a turn) and `gemini` (a turn, with its `toolCalls`: `name`, `args`,
//! `result`, `resultDisplay`, `status`). A call whose `status` is `error` failed; one that is
//! `cancelled` was refused by the user. `info`, `warning` and `error` messages are the CLI's
//! own notes, not turns; a user's cancelled request (`info` saying so) is an interruption. A
//! message's `content` is a string, or a list of parts with `text` (newer versions). Any other
//! message type is skipped and counted.

use serde_json::{Map, Value};

use crate::limits::ParseError;
use crate::outcome::outcome_in_message;
use crate::session::{
    LineError, Role, Session, SourceKind, TextPolicy, ToolCall, Turn, skills_in_paths,
};

/// Reads one Gemini CLI chat file, whole.
///
/// `fallback_id` names the session when the file does not.
///
/// # Errors
/// [`LineError`] (line 1) when the text is not a JSON object with a `messages` list: the
/// session should be skipped.
pub fn read_gemini_session(
    text: &str,
    fallback_id: &str,
    mut policy: TextPolicy,
) -> Result<(Session, TextPolicy), LineError> {
    let record: Map<String, Value> = match policy.budget.parse(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(not_a_chat("not a JSON object")),
        Err(ParseError::Limit(why)) => return Err(LineError::limit(1, why)),
        Err(e) => return Err(not_a_chat(&e.to_string())),
    };
    let Some(Value::Array(messages)) = record.get("messages") else {
        return Err(not_a_chat("no `messages` list"));
    };
    let mut session = Session::new(SourceKind::Gemini, fallback_id);
    if let Some(id) = record.get("sessionId").and_then(Value::as_str)
        && !id.is_empty()
    {
        session.id = policy.text(id);
    }
    for key in ["startTime", "lastUpdated"] {
        if let Some(ts) = record.get(key).and_then(Value::as_str) {
            session.saw_timestamp(ts);
        }
    }
    if let Some(hash) = record.get("projectHash").and_then(Value::as_str) {
        session.project_hash = Some(policy.text(hash));
    }
    for message in messages {
        read_message(&mut session, &mut policy, message);
    }
    Ok((session, policy))
}

/// The error for a file that is not a chat recording.
fn not_a_chat(reason: &str) -> LineError {
    LineError::new(1, format!("not a Gemini CLI chat file: {reason}"))
}

/// A message's text: a string, or the `text` of each part of a list.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Object(part)) => part
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    }
}

fn read_message(session: &mut Session, policy: &mut TextPolicy, message: &Value) {
    if let Some(ts) = message.get("timestamp").and_then(Value::as_str) {
        session.saw_timestamp(ts);
    }
    let text = message_text(message.get("content"));
    let timestamp = message
        .get("timestamp")
        .and_then(Value::as_str)
        .map(|ts| policy.text(ts));
    match message.get("type").and_then(Value::as_str).unwrap_or("") {
        "user" => {
            if text.trim().is_empty() {
                return;
            }
            if let Some(outcome) = outcome_in_message(&text) {
                session.outcome = Some(outcome);
            }
            session.turns.push(Turn {
                role: Role::User,
                text: policy.text(&text),
                timestamp,
                subagent: None,
            });
        }
        "gemini" => {
            let thought = policy.text(&text);
            if !text.trim().is_empty() {
                session.turns.push(Turn {
                    role: Role::Assistant,
                    text: thought.clone(),
                    timestamp,
                    subagent: None,
                });
            }
            if let Some(Value::Array(calls)) = message.get("toolCalls") {
                for call in calls {
                    read_call(session, policy, call, thought.clone());
                }
            }
        }
        "info" => {
            if text.to_lowercase().contains("request cancelled") {
                session.interruptions = session.interruptions.saturating_add(1);
            }
        }
        "warning" | "error" => {}
        _ => session.skipped_records = session.skipped_records.saturating_add(1),
    }
}

fn read_call(session: &mut Session, policy: &mut TextPolicy, call: &Value, thought: String) {
    let name = call.get("name").and_then(Value::as_str).unwrap_or("");
    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
    let input = call.get("args").cloned().unwrap_or(Value::Null);
    for text in strings(&input) {
        session.skills.extend(skills_in_paths(text));
    }
    let mut started = ToolCall::started(policy, id, name, input, thought, None);
    let status = call.get("status").and_then(Value::as_str).unwrap_or("");
    let output = result_text(call);
    started.output = output.map(|text| policy.text(&text));
    started.rejected = status == "cancelled";
    started.is_error = status == "error" || started.rejected;
    session.tool_calls.push(started);
}

/// A call's result as text: what the CLI displayed, else the function response's `output` or
/// `error`, else the result as JSON; `None` when the call recorded none.
fn result_text(call: &Value) -> Option<String> {
    if let Some(display) = call.get("resultDisplay").and_then(Value::as_str)
        && !display.is_empty()
    {
        return Some(display.to_owned());
    }
    let result = call.get("result")?;
    if result.is_null() {
        return None;
    }
    let parts: Vec<&Value> = match result {
        Value::Array(parts) => parts.iter().collect(),
        other => vec![other],
    };
    let mut texts = Vec::new();
    for part in parts {
        let response = part.get("functionResponse").and_then(|f| f.get("response"));
        match response {
            Some(response) => {
                for key in ["output", "error"] {
                    if let Some(text) = response.get(key).and_then(Value::as_str) {
                        texts.push(text.to_owned());
                    }
                }
            }
            None => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    texts.push(text.to_owned());
                }
            }
        }
    }
    Some(if texts.is_empty() {
        result.to_string()
    } else {
        texts.join("\n")
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = r#"{
      "sessionId": "5e0c1a2b-0000-4000-8000-000000000001",
      "projectHash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "startTime": "2026-11-02T09:00:00.000Z",
      "lastUpdated": "2026-11-02T09:05:00.000Z",
      "messages": [
        {"id": "m1", "timestamp": "2026-11-02T09:00:01.000Z", "type": "user", "content": "Fix the failing build"},
        {"id": "m2", "timestamp": "2026-11-02T09:00:05.000Z", "type": "gemini", "content": "I'll read the skill first.",
         "toolCalls": [
           {"id": "c1", "name": "read_file", "args": {"absolute_path": "/w/app/skills/build/SKILL.md"},
            "result": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "Run make."}}}],
            "status": "success", "timestamp": "2026-11-02T09:00:06.000Z"},
           {"id": "c2", "name": "run_shell_command", "args": {"command": "make"},
            "result": [{"functionResponse": {"id": "c2", "name": "run_shell_command", "response": {"error": "exit 2"}}}],
            "status": "error", "timestamp": "2026-11-02T09:00:07.000Z"},
           {"id": "c3", "name": "replace", "args": {"file_path": "Makefile"}, "status": "cancelled",
            "resultDisplay": "Tool call cancelled by user."}
         ]},
        {"id": "m3", "timestamp": "2026-11-02T09:01:00.000Z", "type": "info", "content": "Request cancelled."},
        {"id": "m4", "timestamp": "2026-11-02T09:02:00.000Z", "type": "user", "content": [{"text": "Try again"}]},
        {"id": "m5", "timestamp": "2026-11-02T09:03:00.000Z", "type": "gemini", "content": "Fixed."},
        {"id": "m6", "type": "mystery", "content": ""}
      ]
    }"#;

    #[test]
    fn a_chat_yields_turns_calls_errors_refusals_and_interruptions() {
        let (s, _) = read_gemini_session(CHAT, "file-stem", TextPolicy::default()).unwrap();
        assert_eq!(s.source, SourceKind::Gemini);
        assert_eq!(s.id, "5e0c1a2b-0000-4000-8000-000000000001");
        assert_eq!(s.turns.len(), 4);
        assert_eq!(s.first_prompt(), Some("Fix the failing build"));
        assert_eq!(s.last_answer(), Some("Fixed."));
        assert_eq!(s.tool_calls.len(), 3);
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("Run make."));
        assert_eq!(s.tool_calls[0].thought, "I'll read the skill first.");
        assert_eq!(s.tool_calls[1].output.as_deref(), Some("exit 2"));
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.interruptions, 1);
        assert_eq!(s.skipped_records, 1);
        assert!(s.used_skill("build"));
        assert_eq!(
            s.first_timestamp.as_deref(),
            Some("2026-11-02T09:00:00.000Z")
        );
        assert_eq!(
            s.project_hash.as_deref(),
            Some("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        );
    }

    #[test]
    fn files_that_are_not_chats_are_errors() {
        for text in ["[]", "not json", "{\"sessionId\": \"x\"}"] {
            let e = read_gemini_session(text, "f", TextPolicy::default()).unwrap_err();
            assert!(
                e.reason.starts_with("not a Gemini CLI chat file"),
                "{}",
                e.reason
            );
        }
    }

    #[test]
    fn secrets_in_a_chat_are_redacted() {
        let text = CHAT.replace(
            "Try again",
            "my key is sk-proj-Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ",
        );
        let policy = TextPolicy {
            redactor: Some(crate::redact::Redactor::default()),
            ..TextPolicy::default()
        };
        let (s, policy) = read_gemini_session(&text, "f", policy).unwrap();
        assert!(policy.redactions() > 0);
        assert!(!serde_json::to_string(&s).unwrap().contains("sk-proj-Q2x9"));
    }
}
