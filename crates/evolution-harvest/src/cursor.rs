//! Cursor chats: the agent conversations ("composers") Cursor keeps in its SQLite stores.
//!
//! Where Cursor writes them (learned from public readers of these stores, not from Cursor,
//! whose source is closed: `thomas-pedersen/cursor-chat-browser`, `src/app/api/workspaces/[id]/
//! tabs/route.ts`, and the storage notes of `michaeldhood/chatrxiv`, `docs/cursor/
//! storage-reference.md`, observed on composer schema `_v` 10 and bubble schema `_v` 3, late 2025):
//!
//! - `<User>/globalStorage/state.vscdb` (`<User>` is `~/.config/Cursor/User` on Linux,
//!   `~/Library/Application Support/Cursor/User` on macOS), table
//!   `cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)`:
//!   `composerData:<composerId>` holds one conversation — `createdAt`/`lastUpdatedAt` in
//!   milliseconds and `fullConversationHeadersOnly`, its messages in order as
//!   `{ "bubbleId", "type" }` headers — and `bubbleId:<composerId>:<bubbleId>` holds each
//!   message ("bubble"). Older composers keep their bubbles inline, in a `conversation` list.
//! - `<User>/workspaceStorage/<hash>/state.vscdb`, table `ItemTable`, key
//!   `composer.composerData`: `{ "allComposers": [{ "composerId", … }] }`, the composers opened
//!   in the workspace whose folder `<hash>/workspace.json` names (`{ "folder": "file:///…" }`).
//!
//! A bubble's `type` is 1 for the user's message and 2 for the assistant's; its `text` is the
//! message, `createdAt` an ISO 8601 time. An assistant bubble that called a tool carries
//! `toolFormerData`: the tool's `name`, `toolCallId`, `rawArgs` (the model's arguments, JSON
//! text; `params` otherwise), `result` (JSON text: a command's `output` and `exitCodeV2`, a
//! file's `contents`, …), `status` (`completed`, `error`, `cancelled` when the user stopped the
//! turn, `loading` while it ran) and `userDecision` (`rejected` when the user declined it; a
//! declined command's result also says `"rejected": true`). A bubble's `workspaceProjectDir` and
//! `workspaceUris` name the project when Cursor recorded them.
//!
//! The chat panel of Cursor versions before composers ([`read_cursor_chat_panel`]) kept its
//! chats in each workspace's store instead: `ItemTable` key
//! `workbench.panel.aichat.view.aichat.chatdata` of `workspaceStorage/<hash>/state.vscdb`,
//! `{ "tabs": [ … ] }`, one tab per chat — `tabId`, `chatTitle`, `lastSendTime` (milliseconds)
//! and `bubbles`, its messages in order, each `{ "type": "user" | "ai", "text", … }` (`rawText`
//! in some versions; a `timestamp` in milliseconds when recorded). The panel called no tools, so
//! its chats have turns only, and the project is the folder of the workspace (learned from
//! `thomas-pedersen/cursor-chat-browser`, `src/app/api/workspaces/[id]/tabs/route.ts` (its
//! `RawTab`) and `src/types/workspace.ts`, which read these keys alongside the composers).
//!
//! Not read: the prompt history (`aiService.prompts`), which holds prompts without answers. This
//! module reads rows already fetched: the caller queries the stores.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::limits::{Budget, ParseError, SkipReason};
use crate::outcome::outcome_in_message;
use crate::session::{
    Role, Session, SourceKind, TextPolicy, ToolCall, Turn, file_uri_path, iso_millis_of,
    json_strings, skills_in_paths,
};

/// One composer as read from the stores.
#[derive(Debug, Clone, Default)]
pub struct CursorComposerRows {
    /// The `<composerId>` of its `composerData:<composerId>` key.
    pub composer_id: String,
    /// The `composerData` value (JSON text).
    pub composer_data: String,
    /// Its bubbles: the `<bubbleId>` of each `bubbleId:<composerId>:<bubbleId>` key and the value
    /// (JSON text), in any order.
    pub bubbles: Vec<(String, String)>,
    /// The folder of the workspace whose `composer.composerData` lists this composer, if any.
    pub project: Option<String>,
}

/// Builds the session of one composer, every kept text through `policy`, every value parsed
/// within `policy.budget`. A bubble the conversation names but the store lacks, whose JSON
/// cannot be read, or that an earlier header already named, is skipped and counted: each
/// bubble is read once.
///
/// # Errors
/// A `composerData` that is not a JSON object, or a bound crossed: the session should be
/// skipped.
pub fn read_cursor_composer(
    rows: &CursorComposerRows,
    mut policy: TextPolicy,
) -> Result<(Session, TextPolicy), SkipReason> {
    let malformed =
        |reason: String| SkipReason::Malformed(format!("not a Cursor composer: {reason}"));
    let data: Map<String, Value> = match policy.budget.parse(&rows.composer_data) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(malformed("not a JSON object".to_owned())),
        Err(ParseError::Limit(why)) => return Err(why.into()),
        Err(e) => return Err(malformed(e.to_string())),
    };
    let mut session = Session::new(SourceKind::Cursor, policy.text(&rows.composer_id));
    if let Some(project) = &rows.project {
        let project = policy.text(project);
        session.saw_project(project);
    }
    for key in ["createdAt", "lastUpdatedAt"] {
        if let Some(ts) = iso_millis_of(data.get(key)) {
            session.saw_timestamp(&ts);
        }
    }
    let mut reader = BubbleReader {
        session,
        policy,
        thought: String::new(),
    };
    match data.get("fullConversationHeadersOnly") {
        Some(Value::Array(headers)) if !headers.is_empty() => {
            // Each bubble is taken out of the map when read: a header naming it again finds
            // nothing, so no bubble is parsed or redacted twice.
            let mut by_id: HashMap<&str, &str> = rows
                .bubbles
                .iter()
                .map(|(id, text)| (id.as_str(), text.as_str()))
                .collect();
            for header in headers {
                let id = header.get("bubbleId").and_then(Value::as_str).unwrap_or("");
                let found = by_id
                    .remove(id)
                    .and_then(|text| reader.policy.budget.parse(text).ok());
                match found {
                    Some(bubble @ Value::Object(_)) => reader.bubble(&bubble),
                    _ => reader.skip(),
                }
                if let Some(why) = reader.policy.budget.exceeded() {
                    return Err(why.into());
                }
            }
        }
        _ => {
            if let Some(Value::Array(inline)) = data.get("conversation") {
                for bubble in inline {
                    reader.bubble(bubble);
                }
            }
        }
    }
    match reader.policy.budget.exceeded() {
        Some(why) => Err(why.into()),
        None => Ok((reader.session, reader.policy)),
    }
}

/// Most chat tabs read of one workspace's chat panel.
const MAX_TABS: usize = 10_000;

/// The chats of Cursor's chat panel (before composers): the value of a workspace store's
/// `workbench.panel.aichat.view.aichat.chatdata` key (JSON text), one session per tab, each
/// read with a policy from `policy`; `project` is the folder of that workspace. A tab without
/// a message is no session; a bubble of an unknown type, or not an object, is skipped and
/// counted.
///
/// # Errors
/// A value that is not a JSON object with a `tabs` list.
pub fn read_cursor_chat_panel(
    chatdata: &str,
    project: Option<&str>,
    mut policy: impl FnMut() -> TextPolicy,
) -> Result<Vec<(Session, TextPolicy)>, SkipReason> {
    let bad = |reason: &str| SkipReason::Malformed(format!("not Cursor's chat panel: {reason}"));
    let mut budget = policy().budget;
    let data = match budget.parse(chatdata) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(bad("not a JSON object")),
        Err(ParseError::Limit(why)) => return Err(why.into()),
        Err(e) => return Err(bad(&e.to_string())),
    };
    let Some(Value::Array(tabs)) = data.get("tabs") else {
        return Err(bad("no `tabs` list"));
    };
    let mut out = Vec::new();
    for (n, tab) in tabs.iter().take(MAX_TABS).enumerate() {
        let Some(bubbles) = tab.get("bubbles").and_then(Value::as_array) else {
            continue;
        };
        if bubbles.is_empty() {
            continue;
        }
        let mut policy = policy();
        let id = ["tabId", "id"]
            .iter()
            .filter_map(|key| tab.get(*key).and_then(Value::as_str))
            .find(|id| !id.is_empty())
            .map_or_else(|| format!("chat-panel-{}", n + 1), str::to_owned);
        let mut session = Session::new(SourceKind::Cursor, policy.text(&id));
        if let Some(project) = project {
            let project = policy.text(project);
            session.saw_project(project);
        }
        for key in ["lastSendTime", "timestamp"] {
            if let Some(ts) = iso_millis_of(tab.get(key)) {
                session.saw_timestamp(&ts);
            }
        }
        for bubble in bubbles {
            let role = match bubble.get("type").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("ai") => Role::Assistant,
                _ => {
                    session.skipped_records = session.skipped_records.saturating_add(1);
                    continue;
                }
            };
            let timestamp = iso_millis_of(bubble.get("timestamp"));
            if let Some(ts) = &timestamp {
                session.saw_timestamp(ts);
            }
            let text = ["text", "rawText"]
                .iter()
                .filter_map(|key| bubble.get(*key).and_then(Value::as_str))
                .find(|t| !t.trim().is_empty())
                .unwrap_or("");
            if text.trim().is_empty() {
                continue;
            }
            if role == Role::User
                && let Some(outcome) = outcome_in_message(text)
            {
                session.outcome = Some(outcome);
            }
            let text = policy.text(text);
            let timestamp = timestamp.map(|ts| policy.text(&ts));
            session.turns.push(Turn {
                role,
                text,
                timestamp,
                subagent: None,
            });
        }
        out.push((session, policy));
    }
    Ok(out)
}

/// Reads bubbles in order into a session.
struct BubbleReader {
    session: Session,
    policy: TextPolicy,
    /// The text of the current assistant reply so far (the thought of its next tool call).
    thought: String,
}

impl BubbleReader {
    fn skip(&mut self) {
        self.session.skipped_records = self.session.skipped_records.saturating_add(1);
    }

    fn bubble(&mut self, bubble: &Value) {
        if !bubble.is_object() {
            self.skip();
            return;
        }
        let timestamp = bubble
            .get("createdAt")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| iso_millis_of(bubble.get("createdAt")));
        if let Some(ts) = &timestamp {
            self.session.saw_timestamp(ts);
        }
        self.projects_of(bubble);
        let text = bubble.get("text").and_then(Value::as_str).unwrap_or("");
        let role = match bubble.get("type").and_then(Value::as_i64) {
            Some(1) => Role::User,
            Some(2) => Role::Assistant,
            _ => {
                self.skip();
                return;
            }
        };
        if role == Role::User {
            self.thought.clear();
            if let Some(outcome) = outcome_in_message(text) {
                self.session.outcome = Some(outcome);
            }
        }
        if !text.trim().is_empty() {
            if role == Role::Assistant {
                if !self.thought.is_empty() {
                    self.thought.push('\n');
                }
                self.thought.push_str(text);
            }
            let text = self.policy.text(text);
            let timestamp = timestamp.map(|ts| self.policy.text(&ts));
            self.session.turns.push(Turn {
                role,
                text,
                timestamp,
                subagent: None,
            });
        }
        if role == Role::Assistant
            && let Some(tool) = bubble.get("toolFormerData").filter(|t| t.is_object())
        {
            self.tool(tool);
        }
    }

    /// The project folders a bubble names.
    fn projects_of(&mut self, bubble: &Value) {
        if let Some(dir) = bubble.get("workspaceProjectDir").and_then(Value::as_str) {
            let dir = self.policy.text(dir);
            self.session.saw_project(dir);
        }
        if let Some(Value::Array(uris)) = bubble.get("workspaceUris") {
            for uri in uris.iter().filter_map(Value::as_str) {
                if let Some(path) = file_uri_path(uri) {
                    let path = self.policy.text(&path);
                    self.session.saw_project(path);
                }
            }
        }
    }

    fn tool(&mut self, tool: &Value) {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        let id = tool.get("toolCallId").and_then(Value::as_str).unwrap_or("");
        let input = ["rawArgs", "params"]
            .iter()
            .filter_map(|key| tool.get(*key))
            .find(|v| !v.is_null())
            .map(|v| json_text(&mut self.policy.budget, v))
            .unwrap_or(Value::Null);
        for text in json_strings(&input) {
            self.session.skills.extend(skills_in_paths(text));
        }
        let thought = self.policy.text(&self.thought);
        let mut call = ToolCall::started(&mut self.policy, id, name, input, thought, None);
        let result = tool
            .get("result")
            .filter(|r| !r.is_null())
            .map(|r| json_text(&mut self.policy.budget, r));
        let status = tool.get("status").and_then(Value::as_str).unwrap_or("");
        let declined = tool.get("userDecision").and_then(Value::as_str) == Some("rejected")
            || result
                .as_ref()
                .and_then(|r| r.get("rejected"))
                .and_then(Value::as_bool)
                == Some(true);
        let exit_code = result
            .as_ref()
            .and_then(|r| r.get("exitCodeV2"))
            .and_then(Value::as_i64);
        let failed = status == "error"
            || tool
                .get("additionalData")
                .and_then(|d| d.get("status"))
                .and_then(Value::as_str)
                == Some("error")
            || exit_code.is_some_and(|code| code != 0);
        if status == "cancelled" {
            self.session.interruptions = self.session.interruptions.saturating_add(1);
        }
        if (status != "loading" && status != "cancelled") || result.is_some() {
            call.output = result.map(|r| self.policy.text(&result_text(&r)));
        }
        call.rejected = declined;
        call.is_error = declined || failed;
        self.session.tool_calls.push(call);
    }
}

/// A value that holds JSON as text, parsed (the text itself when it is not JSON).
fn json_text(budget: &mut Budget, value: &Value) -> Value {
    match value {
        Value::String(s) => budget.parse_embedded(s).unwrap_or_else(|| value.clone()),
        other => other.clone(),
    }
}

/// A tool result as text: a command's `output` or a file's `contents` when it has one, the
/// string itself, else the result as JSON.
fn result_text(result: &Value) -> String {
    for key in ["output", "contents", "error"] {
        if let Some(text) = result.get(key).and_then(Value::as_str) {
            return text.to_owned();
        }
    }
    match result {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> CursorComposerRows {
        let bubble = |id: &str, value: &str| (id.to_owned(), value.to_owned());
        CursorComposerRows {
            composer_id: "c1".to_owned(),
            composer_data: r#"{"_v":10,"composerId":"c1","createdAt":1762074000000,"lastUpdatedAt":1762074300000,
                "fullConversationHeadersOnly":[{"bubbleId":"b1","type":1},{"bubbleId":"b2","type":2},
                {"bubbleId":"b3","type":2},{"bubbleId":"b4","type":2},{"bubbleId":"b5","type":2},
                {"bubbleId":"gone","type":2},{"bubbleId":"b6","type":2}]}"#
                .to_owned(),
            bubbles: vec![
                bubble(
                    "b2",
                    r#"{"_v":3,"type":2,"text":"Reading the skill.","createdAt":"2025-11-02T09:00:02.000Z","toolFormerData":{"tool":40,"name":"read_file","toolCallId":"t1","status":"completed","rawArgs":"{\"target_file\":\"/w/app/skills/build/SKILL.md\"}","result":"{\"contents\":\"Run make.\"}"}}"#,
                ),
                bubble(
                    "b1",
                    r#"{"_v":3,"type":1,"text":"Fix the build","createdAt":"2025-11-02T09:00:01.000Z","workspaceProjectDir":"/w/app"}"#,
                ),
                bubble(
                    "b3",
                    r#"{"_v":3,"type":2,"text":"","toolFormerData":{"tool":15,"name":"run_terminal_cmd","toolCallId":"t2","status":"completed","rawArgs":"{\"command\":\"make\"}","result":"{\"output\":\"make: *** Error 2\",\"exitCodeV2\":2}"}}"#,
                ),
                bubble(
                    "b4",
                    r#"{"_v":3,"type":2,"text":"","toolFormerData":{"name":"run_terminal_cmd","toolCallId":"t3","status":"completed","userDecision":"rejected","rawArgs":"{\"command\":\"rm -rf build\"}","result":"{\"rejected\":true}"}}"#,
                ),
                bubble(
                    "b5",
                    r#"{"_v":3,"type":2,"text":"","toolFormerData":{"name":"edit_file","toolCallId":"t4","status":"cancelled","rawArgs":"{}"}}"#,
                ),
                bubble("b6", "not json"),
            ],
            project: Some("/w/app".to_owned()),
        }
    }

    #[test]
    fn bubbles_yield_turns_calls_errors_refusals_and_interruptions() {
        let (s, _) = read_cursor_composer(&rows(), TextPolicy::default()).unwrap();
        assert_eq!(s.source, SourceKind::Cursor);
        assert_eq!(s.id, "c1");
        assert_eq!(s.projects, ["/w/app"]);
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.first_prompt(), Some("Fix the build"));
        assert_eq!(s.tool_calls.len(), 4);
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("Run make."));
        assert_eq!(s.tool_calls[0].thought, "Reading the skill.");
        assert_eq!(
            s.tool_calls[0].input["target_file"],
            "/w/app/skills/build/SKILL.md"
        );
        assert_eq!(s.tool_calls[1].output.as_deref(), Some("make: *** Error 2"));
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.interruptions, 1);
        assert_eq!(s.tool_calls[3].output, None);
        assert_eq!(s.skipped_records, 2);
        assert!(s.used_skill("build"));
        assert_eq!(
            s.first_timestamp.as_deref(),
            Some("2025-11-02T09:00:00.000Z")
        );
        assert_eq!(
            s.last_timestamp.as_deref(),
            Some("2025-11-02T09:05:00.000Z")
        );
    }

    #[test]
    fn odd_shapes_are_read_without_panic() {
        let rows = CursorComposerRows {
            composer_data: r#"{"createdAt":1e308,"fullConversationHeadersOnly":[1,{"bubbleId":7},{"bubbleId":"b"}],"conversation":5}"#.to_owned(),
            bubbles: vec![(
                "b".to_owned(),
                r#"{"type":2,"text":5,"createdAt":[],"workspaceUris":[1,"file:///%"],"toolFormerData":{"rawArgs":"{","result":7,"status":3,"additionalData":[]}}"#
                    .to_owned(),
            )],
            ..CursorComposerRows::default()
        };
        let (s, _) = read_cursor_composer(&rows, TextPolicy::default()).unwrap();
        assert_eq!(s.tool_calls.len(), 1);
        assert_eq!(s.skipped_records, 2);
    }

    const PANEL: &str = r#"{"tabs":[
        {"tabId":"tab-1","chatTitle":"Release","lastSendTime":1709280000000,"bubbles":[
            {"type":"user","text":"Publish the package","timestamp":1709279990000},
            {"type":"ai","text":"","rawText":"Run `npm publish` with the token ghp_a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ01."},
            {"type":"system","text":"?"},
            7,
            {"type":"user","text":"That failed."}]},
        {"tabId":"tab-2","bubbles":[]},
        {"chatTitle":"untitled","bubbles":[{"type":"ai","text":"Hello."}]},
        {"tabId":"tab-4"}
    ]}"#;

    #[test]
    fn the_chat_panel_before_composers_yields_one_session_per_tab() {
        let read = read_cursor_chat_panel(PANEL, Some("/w/app"), TextPolicy::default).unwrap();
        assert_eq!(read.len(), 2);
        let (s, policy) = &read[0];
        assert_eq!(s.source, SourceKind::Cursor);
        assert_eq!(s.id, "tab-1");
        assert_eq!(s.projects, ["/w/app"]);
        assert_eq!(s.turns.len(), 3);
        assert_eq!(s.first_prompt(), Some("Publish the package"));
        assert!(
            s.turns[1].text.contains("[REDACTED:"),
            "{}",
            s.turns[1].text
        );
        assert!(policy.redactions() > 0);
        assert!(s.tool_calls.is_empty());
        assert_eq!(s.skipped_records, 2);
        assert_eq!(
            s.first_timestamp.as_deref(),
            Some("2024-03-01T07:59:50.000Z")
        );
        assert_eq!(
            s.last_timestamp.as_deref(),
            Some("2024-03-01T08:00:00.000Z")
        );
        assert_eq!(read[1].0.id, "chat-panel-3");
        for text in ["[]", "{}", "not json", r#"{"tabs":5}"#] {
            let e = read_cursor_chat_panel(text, None, TextPolicy::default).unwrap_err();
            assert!(e.to_string().starts_with("not Cursor's chat panel"), "{e}");
        }
    }

    #[test]
    fn older_composers_keep_their_bubbles_inline() {
        let rows = CursorComposerRows {
            composer_id: "old".to_owned(),
            composer_data: r#"{"composerId":"old","conversation":[
                {"type":1,"text":"Hello","workspaceUris":["file:///w/my%20lib"]},
                {"type":2,"text":"Hi."}]}"#
                .to_owned(),
            ..CursorComposerRows::default()
        };
        let (s, _) = read_cursor_composer(&rows, TextPolicy::default()).unwrap();
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.last_answer(), Some("Hi."));
        assert_eq!(s.projects, ["/w/my lib"]);
    }

    #[test]
    fn composers_that_are_not_objects_are_errors_and_secrets_are_redacted() {
        for text in ["[]", "not json"] {
            let rows = CursorComposerRows {
                composer_data: text.to_owned(),
                ..CursorComposerRows::default()
            };
            let e = read_cursor_composer(&rows, TextPolicy::default()).unwrap_err();
            assert!(e.to_string().starts_with("not a Cursor composer"), "{e}");
        }
        let mut rows = rows();
        for (_, text) in &mut rows.bubbles {
            *text = text.replace("make.", "make with sk-proj-Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ");
        }
        let (s, policy) = read_cursor_composer(&rows, TextPolicy::default()).unwrap();
        assert!(policy.redactions() > 0);
        assert!(!serde_json::to_string(&s).unwrap().contains("sk-proj-Q2x9"));
    }
}
