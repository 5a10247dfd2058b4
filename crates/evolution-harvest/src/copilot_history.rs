//! Older `copilot` CLI sessions: one whole JSON object per session in
//! `$COPILOT_HOME/history-session-state/session_<id>_<ms>.json` (the format is described in
//! [`crate::copilot`]'s documentation).

use std::collections::HashMap;

use serde_json::Value;

use crate::outcome::outcome_in_message;
use crate::session::{
    LineError, Role, Session, SourceKind, TextPolicy, ToolCall, Turn, json_strings, skills_in_paths,
};

/// How a `tool_call_completed` event of the timeline says a refused call ended.
const REFUSED_RESULTS: [&str; 2] = ["rejected", "denied"];

/// Builds the session of an older `copilot` CLI session file
/// (`history-session-state/session_<id>_<ms>.json`, the text of the whole file), every kept
/// text through `policy`; `fallback_id` names it when it does not.
///
/// # Errors
/// A file that is not a JSON object, or one with neither a `chatMessages` nor a `timeline`
/// list: the session should be skipped.
pub fn read_copilot_history(
    text: &str,
    fallback_id: &str,
    mut policy: TextPolicy,
) -> Result<(Session, TextPolicy), LineError> {
    let bad = |reason: String| LineError::new(1, format!("not a copilot CLI session: {reason}"));
    let data = match policy.budget.parse(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(bad("not a JSON object".to_owned())),
        Err(e) => return Err(LineError::parse(1, "not a copilot CLI session: ", e)),
    };
    let messages = data.get("chatMessages").and_then(Value::as_array);
    let timeline = data.get("timeline").and_then(Value::as_array);
    if messages.is_none() && timeline.is_none() {
        return Err(bad("no `chatMessages` or `timeline` list".to_owned()));
    }
    let id = data
        .get("sessionId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .unwrap_or(fallback_id);
    let mut session = Session::new(SourceKind::Copilot, policy.text(id));
    if let Some(ts) = data.get("startTime").and_then(Value::as_str) {
        session.saw_timestamp(ts);
    }
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut thought = String::new();
    for message in messages.into_iter().flatten() {
        let content = crate::session::content_text(message.get("content"));
        match message.get("role").and_then(Value::as_str) {
            Some("user") => {
                thought.clear();
                if content.trim().is_empty() {
                    continue;
                }
                if let Some(outcome) = outcome_in_message(&content) {
                    session.outcome = Some(outcome);
                }
                session.turns.push(Turn {
                    role: Role::User,
                    text: policy.text(&content),
                    timestamp: None,
                    subagent: None,
                });
            }
            Some("assistant") => {
                if !content.trim().is_empty() {
                    if !thought.is_empty() {
                        thought.push('\n');
                    }
                    thought.push_str(&content);
                    session.turns.push(Turn {
                        role: Role::Assistant,
                        text: policy.text(&content),
                        timestamp: None,
                        subagent: None,
                    });
                }
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let call_id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    let function = call.get("function");
                    let name = function
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let input = match function.and_then(|f| f.get("arguments")) {
                        Some(Value::String(args)) => policy
                            .budget
                            .parse_embedded(args)
                            .unwrap_or_else(|| Value::String(args.clone())),
                        Some(other) => other.clone(),
                        None => Value::Null,
                    };
                    for text in json_strings(&input) {
                        session.skills.extend(skills_in_paths(text));
                    }
                    let thought = policy.text(&thought);
                    let call = ToolCall::started(&mut policy, call_id, name, input, thought, None);
                    if !call_id.is_empty() {
                        calls.insert(call_id.to_owned(), session.tool_calls.len());
                    }
                    session.tool_calls.push(call);
                }
            }
            Some("tool") => {
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match calls.get(id).and_then(|&i| session.tool_calls.get_mut(i)) {
                    Some(call) => call.output = Some(policy.text(&content)),
                    None => session.skipped_records = session.skipped_records.saturating_add(1),
                }
            }
            Some("system") => {}
            _ => session.skipped_records = session.skipped_records.saturating_add(1),
        }
    }
    for event in timeline.into_iter().flatten() {
        if let Some(ts) = event.get("timestamp").and_then(Value::as_str) {
            session.saw_timestamp(ts);
        }
        if event.get("type").and_then(Value::as_str) != Some("tool_call_completed") {
            continue;
        }
        let id = event.get("callId").and_then(Value::as_str).unwrap_or("");
        let Some(call) = calls.get(id).and_then(|&i| session.tool_calls.get_mut(i)) else {
            continue;
        };
        let result = event.get("result");
        let kind = result
            .and_then(|r| r.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("success");
        if kind != "success" {
            call.is_error = true;
            call.rejected = REFUSED_RESULTS.contains(&kind);
        }
        if call.output.is_none()
            && let Some(log) = result.and_then(|r| r.get("log")).and_then(Value::as_str)
        {
            call.output = Some(policy.text(log));
        }
    }
    LineError::check(1, &policy.budget)?;
    Ok((session, policy))
}
