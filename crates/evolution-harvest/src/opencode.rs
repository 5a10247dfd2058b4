//! OpenCode sessions: the rows OpenCode keeps in its SQLite store
//! (`~/.local/share/opencode/opencode.db`, or `$XDG_DATA_HOME/opencode/opencode.db`).
//!
//! A session is a `session` row (its `id`, working `directory`, `title`, and
//! `time_created`/`time_updated` in milliseconds), its `message` rows (a JSON `data` with the
//! `role`, and on an assistant message an `error`, `MessageAbortedError` when the user stopped
//! it) and each message's `part` rows (a JSON `data` whose `type` is `text`, `tool`, or a kind
//! that carries no turn: `reasoning`, `step-start`, `step-finish`, `snapshot`, `patch`, `file`,
//! `agent`, `compaction`). A `tool` part is a call: its `tool` name, `callID` and `state`
//! (`status` `completed` with its `output`, or `error` with its `error`; a call the user
//! refused fails with a message saying so). Text parts marked `synthetic` are OpenCode's own,
//! not the user's. Any other part type is skipped and counted.
//!
//! This module reads rows already fetched: the caller queries the store.

use serde_json::Value;

use crate::limits::Exceeded;
use crate::outcome::outcome_in_message;
use crate::session::{
    Role, Session, SourceKind, TextPolicy, ToolCall, Turn, iso_millis, json_strings,
    skills_in_paths,
};

/// Part types that carry nothing for a trajectory.
const QUIET_PARTS: [&str; 8] = [
    "reasoning",
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "file",
    "agent",
    "compaction",
];

/// How a tool error starts when the user declined the call.
const REJECTED_ERRORS: [&str; 2] = [
    "The user rejected permission",
    "The user has specifically restricted",
];

/// One stored session: the `session` row's fields this reader uses.
#[derive(Debug, Clone, Default)]
pub struct OpenCodeSessionRow {
    /// `session.id`.
    pub id: String,
    /// `session.directory`: the folder it ran in.
    pub directory: String,
    /// `session.time_created`, in milliseconds since the Unix epoch.
    pub time_created: Option<i64>,
    /// `session.time_updated`, in milliseconds since the Unix epoch.
    pub time_updated: Option<i64>,
}

/// One message with its parts, in order: `message.data` and each `part.data` (JSON text).
#[derive(Debug, Clone, Default)]
pub struct OpenCodeMessageRows {
    /// `message.time_created`, in milliseconds.
    pub time_created: Option<i64>,
    /// `message.data`.
    pub data: String,
    /// The `part.data` of its parts, in order.
    pub parts: Vec<String>,
}

/// Builds the session of `row` from its `messages` (in order), every kept text through
/// `policy`, every row parsed within `policy.budget`. A message or part whose JSON cannot be
/// read is skipped and counted.
///
/// # Errors
/// The bound the session crossed: it is skipped.
pub fn read_opencode_session(
    row: &OpenCodeSessionRow,
    messages: &[OpenCodeMessageRows],
    mut policy: TextPolicy,
) -> Result<(Session, TextPolicy), Exceeded> {
    let mut session = Session::new(SourceKind::OpenCode, policy.text(&row.id));
    if !row.directory.is_empty() {
        let directory = policy.text(&row.directory);
        session.saw_project(directory);
    }
    for ms in [row.time_created, row.time_updated].into_iter().flatten() {
        session.saw_timestamp(&iso_millis(ms));
    }
    for message in messages {
        read_message(&mut session, &mut policy, message);
        if let Some(why) = policy.budget.exceeded() {
            return Err(why);
        }
    }
    Ok((session, policy))
}

fn read_message(session: &mut Session, policy: &mut TextPolicy, message: &OpenCodeMessageRows) {
    let Ok(data) = policy.budget.parse(&message.data) else {
        session.skipped_records = session.skipped_records.saturating_add(1);
        return;
    };
    let role = match data.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => {
            session.skipped_records = session.skipped_records.saturating_add(1);
            return;
        }
    };
    let timestamp = message.time_created.map(iso_millis);
    if let Some(ts) = &timestamp {
        session.saw_timestamp(ts);
    }
    if data
        .get("error")
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
        == Some("MessageAbortedError")
    {
        session.interruptions = session.interruptions.saturating_add(1);
    }
    let mut text = String::new();
    for raw in &message.parts {
        let Ok(part) = policy.budget.parse(raw) else {
            if policy.budget.exceeded().is_some() {
                return;
            }
            session.skipped_records = session.skipped_records.saturating_add(1);
            continue;
        };
        match part.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                if part.get("synthetic").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(t);
                }
            }
            "tool" => {
                let thought = policy.text(&text);
                read_tool(session, policy, &part, thought);
            }
            kind if QUIET_PARTS.contains(&kind) => {}
            _ => session.skipped_records = session.skipped_records.saturating_add(1),
        }
    }
    if text.trim().is_empty() {
        return;
    }
    if role == Role::User
        && let Some(outcome) = outcome_in_message(&text)
    {
        session.outcome = Some(outcome);
    }
    session.turns.push(Turn {
        role,
        text: policy.text(&text),
        timestamp,
        subagent: None,
    });
}

fn read_tool(session: &mut Session, policy: &mut TextPolicy, part: &Value, thought: String) {
    let name = part.get("tool").and_then(Value::as_str).unwrap_or("");
    let id = part.get("callID").and_then(Value::as_str).unwrap_or("");
    let empty = Value::Null;
    let state = part.get("state").unwrap_or(&empty);
    let input = state.get("input").cloned().unwrap_or(Value::Null);
    for text in json_strings(&input) {
        session.skills.extend(skills_in_paths(text));
    }
    let mut call = ToolCall::started(policy, id, name, input, thought, None);
    match state.get("status").and_then(Value::as_str).unwrap_or("") {
        "completed" => {
            let output = state.get("output").and_then(Value::as_str).unwrap_or("");
            call.output = Some(policy.text(output));
        }
        "error" => {
            let error = state.get("error").and_then(Value::as_str).unwrap_or("");
            call.rejected = REJECTED_ERRORS
                .iter()
                .any(|p| error.trim_start().starts_with(p));
            call.is_error = true;
            call.output = Some(policy.text(error));
        }
        // Pending or running when the session was stored: no result.
        _ => {}
    }
    session.tool_calls.push(call);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(data: &str, parts: &[&str]) -> OpenCodeMessageRows {
        OpenCodeMessageRows {
            time_created: Some(1_762_074_000_000),
            data: data.to_owned(),
            parts: parts.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn rows_yield_turns_calls_errors_refusals_and_interruptions() {
        let row = OpenCodeSessionRow {
            id: "ses_1".to_owned(),
            directory: "/w/app".to_owned(),
            time_created: Some(1_762_074_000_000),
            time_updated: Some(1_762_074_300_000),
        };
        let messages = [
            message(
                r#"{"role":"user"}"#,
                &[
                    r#"{"type":"text","text":"Fix the build"}"#,
                    r#"{"type":"text","text":"<system-reminder>","synthetic":true}"#,
                ],
            ),
            message(
                r#"{"role":"assistant"}"#,
                &[
                    r#"{"type":"step-start"}"#,
                    r#"{"type":"text","text":"Reading the skill."}"#,
                    r#"{"type":"tool","tool":"read","callID":"c1","state":{"status":"completed","input":{"filePath":"/w/app/skills/build/SKILL.md"},"output":"Run make."}}"#,
                    r#"{"type":"tool","tool":"bash","callID":"c2","state":{"status":"error","input":{"command":"make"},"error":"exit code 2"}}"#,
                    r#"{"type":"tool","tool":"edit","callID":"c3","state":{"status":"error","input":{},"error":"The user rejected permission to use this specific tool call."}}"#,
                    r#"{"type":"mystery"}"#,
                ],
            ),
            message(
                r#"{"role":"assistant","error":{"name":"MessageAbortedError","data":{}}}"#,
                &[],
            ),
            message("not json", &[]),
        ];
        let (s, _) = read_opencode_session(&row, &messages, TextPolicy::default()).unwrap();
        assert_eq!(s.source, SourceKind::OpenCode);
        assert_eq!(s.id, "ses_1");
        assert_eq!(s.projects, ["/w/app"]);
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.first_prompt(), Some("Fix the build"));
        assert_eq!(s.tool_calls.len(), 3);
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("Run make."));
        assert_eq!(s.tool_calls[0].thought, "Reading the skill.");
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.interruptions, 1);
        assert_eq!(s.skipped_records, 2);
        assert!(s.used_skill("build"));
        assert_eq!(
            s.first_timestamp.as_deref(),
            Some("2025-11-02T09:00:00.000Z")
        );
    }
}
