//! GitHub Copilot sessions, from its two hosts: VS Code's chat and the `copilot` CLI.
//!
//! **VS Code chat sessions** ([`VsCodeChatLog`], [`read_vscode_chat`]). VS Code itself writes
//! them (learned from `microsoft/vscode`, `src/vs/workbench/contrib/chat/common/model/`:
//! `chatSessionStore.ts`, `chatSessionOperationLog.ts`, `objectMutationLog.ts`, `chatModel.ts`,
//! and `chatService/chatService.ts`), one file per session in
//! `<User>/workspaceStorage/<hash>/chatSessions/` (`<User>/globalStorage/emptyWindowChatSessions/`
//! for a window without a folder; `<User>` is `~/.config/Code/User` on Linux,
//! `~/Library/Application Support/Code/User` on macOS), beside `<hash>/workspace.json`
//! (`{ "folder": "file:///…" }`). Since VS Code 1.109 the file is `<sessionId>.jsonl`, a log of
//! changes: its first line `{"kind":0,"v":<session>}` holds the whole session, each later line
//! changes it — `{"kind":1,"k":[path],"v":value}` sets, `{"kind":2,"k":[path],"v":[items],
//! "i":n}` cuts a list to `n` items (when `i` is given) and appends the items, `{"kind":3,
//! "k":[path]}` deletes. Before 1.109 it was `<sessionId>.json`, the session itself. Both are
//! read; when a folder holds both for one session, the log is the one VS Code reads, and so is
//! it here.
//!
//! A session (format version 3) has `sessionId`, `creationDate` (milliseconds) and `requests`.
//! Each request has its `message` (`{ "text" }`, or a string in old files), `timestamp`, its
//! `response` parts and `modelState` (`value` 2 when the user cancelled the reply; older files
//! say `isCanceled: true`). A response part is a markdown string (`{ "value" }`, no `kind`) or a
//! part with a `kind`; `toolInvocationSerialized` is a tool call: `toolId`, `toolCallId`,
//! `isConfirmed` (`false`, or `{ "type": 0 }` — denied — and `{ "type": 5 }` — skipped — when the
//! user refused it), `isComplete`, `resultDetails` (`input` as JSON text, `output` parts, and
//! `isError`) and `toolSpecificData` (a terminal command's `commandLine` and
//! `terminalCommandState.exitCode`, a tool's `rawInput`). Parts of other kinds (thinking,
//! references, edits, progress) carry no turn.
//!
//! **`copilot` CLI sessions** ([`CopilotCliReader`]). The CLI keeps each session's events in
//! `$COPILOT_HOME/session-state/<sessionId>/events.jsonl` (`~/.copilot` by default;
//! earlier versions wrote `session-state/<sessionId>.jsonl`), one JSON object a line:
//! `type`, `data`, `id`, `timestamp`, `parentId`, and `agentId` for a subagent's events
//! (learned from the event schema GitHub publishes with its SDK, `github/copilot-sdk`,
//! `nodejs/src/generated/session-events.ts`, and the SDK's end-to-end tests of refused tool
//! calls; the folder layout also from `qiaolei81/copilot-session-viewer`,
//! `src/adapters/CopilotAdapter.js`). Read: `session.start` (`sessionId`, `context.cwd`),
//! `session.resume` and `session.context_changed` (the working folder), `user.message`
//! (`content`; a message with a `source` such as `skill-<name>` or `agent-<id>` was not typed
//! by the user, and `skill-<name>` loaded that skill), `assistant.message` (`content` and its
//! `toolRequests`), `tool.execution_start` (`toolCallId`, `toolName`, `arguments`),
//! `tool.execution_complete` (`success`, `result.content`, `error.message`; `error.code`
//! `rejected` or `denied` when the call was refused), `abort` (`reason` `user_initiated`,
//! `user_abort` or `remote_command`: an interruption) and `skill.invoked` (`name`, `path`).
//! Other events of the schema's families carry no turn; an event of an unknown type is
//! skipped and counted.
//!
//! **Older `copilot` CLI sessions** ([`read_copilot_history`]). Versions of the CLI before
//! `session-state` kept each session whole, as one pretty-printed JSON object, in
//! `$COPILOT_HOME/history-session-state/session_<sessionId>_<milliseconds>.json` (learned from
//! public readers of these files: `Mai0313/VibeCodingTracker`, `src/models/copilot.rs` and
//! `src/analysis/copilot_analyzer.rs`, and the ingest tests of a prompt-history tool that
//! writes `session_<id>_1.json` fixtures; GitHub documents no schema). Read: `sessionId`,
//! `startTime` (ISO 8601), `chatMessages` — the conversation as chat-completion messages:
//! `role` `user`, `assistant` (`content`, and `tool_calls`, each `{ "id", "function":
//! { "name", "arguments" } }` with the arguments as JSON text), `tool` (`tool_call_id` and the
//! result as `content`), `system` (not a turn) — and `timeline`, whose events' `timestamp`s
//! date the session and whose `tool_call_completed` events (`callId`, `result.type`, `result.log`)
//! say how each call ended: a `result.type` other than `success` is a failed call, `rejected` or
//! `denied` a refused one. The files do not name the folder the CLI ran in.

use std::collections::HashMap;

use serde_json::{Map, Value};

pub use crate::copilot_history::read_copilot_history;
use crate::limits::{Budget, Exceeded, depth_of};
use crate::outcome::outcome_in_message;
use crate::session::{
    LineError, Role, Session, SourceKind, TextPolicy, ToolCall, Turn, iso_millis_of,
    json_object_line, json_strings, skills_in_paths,
};

// ---------------------------------------------------------------------------------------------
// VS Code chat sessions
// ---------------------------------------------------------------------------------------------

/// Most changes replayed from one VS Code session log (VS Code compacts a log into one first
/// line after about a thousand).
const MAX_LOG_ENTRIES: usize = 1_000_000;

/// Replays a VS Code chat session log (`chatSessions/<id>.jsonl`), fed one line at a time,
/// within the bounds of a [`Budget`]: each line is parsed within them, and a change that would
/// nest the session deeper than [`crate::limits::Limits::max_depth`] is refused.
#[derive(Debug, Default)]
pub struct VsCodeChatLog {
    state: Option<Value>,
    entries: usize,
    budget: Budget,
}

impl VsCodeChatLog {
    /// An empty log, with the default bounds.
    pub fn new() -> Self {
        VsCodeChatLog::default()
    }

    /// An empty log within `budget`.
    pub fn with_budget(budget: Budget) -> Self {
        VsCodeChatLog {
            budget,
            ..VsCodeChatLog::default()
        }
    }

    /// Applies one line (its 1-based number for errors); blank lines are ignored.
    ///
    /// # Errors
    /// A line that is not a change VS Code writes, or a change to a path the session does not
    /// have: VS Code would not load such a file either, so the session should be skipped.
    pub fn push_line(&mut self, line_no: usize, line: &str) -> Result<(), LineError> {
        let bad = |reason: &str| {
            LineError::new(line_no, format!("not a VS Code chat session log: {reason}"))
        };
        let mut entry = match json_object_line(&mut self.budget, line_no, line) {
            Ok(Some(entry)) => entry,
            Ok(None) => return Ok(()),
            Err(e) if e.limit.is_some() => return Err(e),
            Err(e) => return Err(bad(&e.reason)),
        };
        self.entries = self.entries.saturating_add(1);
        if self.entries > MAX_LOG_ENTRIES {
            return Err(bad("more changes than a session log holds"));
        }
        let kind = entry.get("kind").and_then(Value::as_u64);
        let value = entry.remove("v").unwrap_or(Value::Null);
        if kind == Some(0) {
            self.state = Some(value);
            return Ok(());
        }
        let Some(state) = self.state.as_mut() else {
            return Err(bad("a change before the session's first entry"));
        };
        let path: Vec<&Value> = match entry.get("k") {
            Some(Value::Array(keys)) => keys.iter().collect(),
            _ => return Err(bad("a change without its path (`k`)")),
        };
        let Some((last, parents)) = path.split_last() else {
            // VS Code ignores a change of the whole session.
            return Ok(());
        };
        // The value lands one level below its parent (a list's items two): the session may not
        // nest deeper than a document may.
        let below = if kind == Some(2) { 2 } else { 1 };
        let landing = parents
            .len()
            .saturating_add(below)
            .saturating_add(depth_of(&value));
        let limit = self.budget.limits.max_depth;
        if landing > limit {
            return Err(LineError::limit(
                line_no,
                self.budget.exceed(Exceeded::Depth { limit }),
            ));
        }
        let mut parent = &mut *state;
        for key in parents {
            parent = step(parent, key).ok_or_else(|| bad("a path the session does not have"))?;
        }
        match kind {
            Some(1) => {
                set(parent, last, value).ok_or_else(|| bad("a path the session does not have"))
            }
            Some(3) => {
                delete(parent, last);
                Ok(())
            }
            Some(2) => {
                let cut = entry
                    .get("i")
                    .and_then(Value::as_u64)
                    .map(|i| usize::try_from(i).unwrap_or(usize::MAX));
                let items = match value {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                };
                push(parent, last, cut, items)
                    .ok_or_else(|| bad("a path the session does not have"))
            }
            _ => Err(bad("an unknown change kind")),
        }
    }

    /// The session the log describes.
    ///
    /// # Errors
    /// A log without its first entry (an empty file).
    pub fn finish(self) -> Result<Value, LineError> {
        self.state
            .ok_or_else(|| LineError::new(1, "not a VS Code chat session log: empty"))
    }
}

/// The child of `value` at `key` (an object's field, a list's index).
fn step<'a>(value: &'a mut Value, key: &Value) -> Option<&'a mut Value> {
    match (value, key) {
        (Value::Object(map), Value::String(k)) => map.get_mut(k),
        (Value::Array(items), Value::Number(n)) => {
            items.get_mut(usize::try_from(n.as_u64()?).ok()?)
        }
        _ => None,
    }
}

fn set(parent: &mut Value, key: &Value, v: Value) -> Option<()> {
    match (parent, key) {
        (Value::Object(map), Value::String(k)) => {
            map.insert(k.clone(), v);
            Some(())
        }
        (Value::Array(items), Value::Number(n)) => {
            let slot = items.get_mut(usize::try_from(n.as_u64()?).ok()?)?;
            *slot = v;
            Some(())
        }
        _ => None,
    }
}

fn delete(parent: &mut Value, key: &Value) {
    match (parent, key) {
        (Value::Object(map), Value::String(k)) => {
            map.remove(k);
        }
        (Value::Array(items), Value::Number(n)) => {
            if let Some(slot) = n
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| items.get_mut(i))
            {
                *slot = Value::Null;
            }
        }
        _ => {}
    }
}

fn push(parent: &mut Value, key: &Value, cut: Option<usize>, items: Vec<Value>) -> Option<()> {
    let Value::Object(map) = parent else {
        return None;
    };
    let Value::String(k) = key else {
        return None;
    };
    let list = map
        .entry(k.clone())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Value::Array(list) = list {
        if let Some(cut) = cut {
            list.truncate(cut);
        }
        list.extend(items);
    }
    Some(())
}

/// Parses a flat VS Code chat session file (`chatSessions/<id>.json`, before VS Code 1.109)
/// within `budget`.
///
/// # Errors
/// Text that is not a JSON object, or over a bound.
pub fn vscode_chat_from_json(budget: &mut Budget, text: &str) -> Result<Value, LineError> {
    match budget.parse(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(LineError::new(
            1,
            "not a VS Code chat session: not a JSON object",
        )),
        Err(e) => Err(LineError::parse(1, "not a VS Code chat session: ", e)),
    }
}

/// Builds the session of a VS Code chat session (the value of a flat file, or a replayed log),
/// every kept text through `policy`. `fallback_id` names it when it does not; `workspace` is
/// the folder of the window it ran in (from `workspace.json`), when known.
///
/// # Errors
/// A value without a `requests` list.
pub fn read_vscode_chat(
    data: &Value,
    fallback_id: &str,
    workspace: Option<&str>,
    mut policy: TextPolicy,
) -> Result<(Session, TextPolicy), LineError> {
    let Some(Value::Array(requests)) = data.get("requests") else {
        return Err(LineError::new(
            1,
            "not a VS Code chat session: no `requests` list",
        ));
    };
    let id = data
        .get("sessionId")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .unwrap_or(fallback_id);
    let mut session = Session::new(SourceKind::Copilot, policy.text(id));
    if let Some(folder) = workspace {
        let folder = policy.text(folder);
        session.saw_project(folder);
    }
    for key in ["creationDate", "lastMessageDate"] {
        if let Some(ts) = iso_millis_of(data.get(key)) {
            session.saw_timestamp(&ts);
        }
    }
    for request in requests {
        read_request(&mut session, &mut policy, request);
    }
    LineError::check(1, &policy.budget)?;
    Ok((session, policy))
}

/// The text of a markdown string: a string, or an object's `value`.
fn markdown_text(value: Option<&Value>) -> Option<&str> {
    match value? {
        Value::String(s) => Some(s),
        Value::Object(map) => map.get("value").and_then(Value::as_str),
        _ => None,
    }
}

fn read_request(session: &mut Session, policy: &mut TextPolicy, request: &Value) {
    if !request.is_object() {
        session.skipped_records = session.skipped_records.saturating_add(1);
        return;
    }
    let timestamp = iso_millis_of(request.get("timestamp"));
    if let Some(ts) = &timestamp {
        session.saw_timestamp(ts);
    }
    let state = request.get("modelState");
    if let Some(ts) = iso_millis_of(state.and_then(|s| s.get("completedAt"))) {
        session.saw_timestamp(&ts);
    }
    let message = match request.get("message") {
        Some(Value::String(s)) => s.as_str(),
        Some(m) => m.get("text").and_then(Value::as_str).unwrap_or(""),
        None => "",
    };
    if !message.trim().is_empty() {
        if let Some(outcome) = outcome_in_message(message) {
            session.outcome = Some(outcome);
        }
        session.turns.push(Turn {
            role: Role::User,
            text: policy.text(message),
            timestamp: timestamp.clone(),
            subagent: None,
        });
    }
    let cancelled = state.and_then(|s| s.get("value")).and_then(Value::as_u64) == Some(2)
        || request.get("isCanceled").and_then(Value::as_bool) == Some(true);
    if cancelled {
        session.interruptions = session.interruptions.saturating_add(1);
    }
    let parts: Vec<&Value> = match request.get("response") {
        Some(Value::Array(parts)) => parts.iter().collect(),
        Some(part @ Value::String(_)) => vec![part],
        _ => Vec::new(),
    };
    let mut answer = String::new();
    for part in parts {
        let kind = part.get("kind").and_then(Value::as_str);
        match kind {
            None => match markdown_text(Some(part)) {
                Some(text) => answer.push_str(text),
                None => session.skipped_records = session.skipped_records.saturating_add(1),
            },
            Some("markdownContent") => {
                answer.push_str(markdown_text(part.get("content")).unwrap_or(""));
            }
            Some("toolInvocationSerialized" | "toolInvocation") => {
                let thought = policy.text(&answer);
                read_invocation(session, policy, part, thought);
                if !answer.is_empty() && !answer.ends_with('\n') {
                    answer.push_str("\n\n");
                }
            }
            // Thinking, references, edits, progress and the like: no turn.
            Some(_) => {}
        }
    }
    if !answer.trim().is_empty() {
        session.turns.push(Turn {
            role: Role::Assistant,
            text: policy.text(answer.trim_end()),
            timestamp,
            subagent: None,
        });
    }
}

fn read_invocation(session: &mut Session, policy: &mut TextPolicy, part: &Value, thought: String) {
    let name = part.get("toolId").and_then(Value::as_str).unwrap_or("");
    let id = part.get("toolCallId").and_then(Value::as_str).unwrap_or("");
    let details = part.get("resultDetails");
    let specific = part.get("toolSpecificData");
    let input = invocation_input(&mut policy.budget, part);
    for text in json_strings(&input) {
        session.skills.extend(skills_in_paths(text));
    }
    let subagent = part
        .get("subAgentInvocationId")
        .and_then(Value::as_str)
        .map(|s| policy.text(s))
        .or_else(|| {
            (part.get("fromSubAgent").and_then(Value::as_bool) == Some(true))
                .then(|| "subagent".to_owned())
        });
    let mut call = ToolCall::started(policy, id, name, input, thought, subagent);
    let rejected = match part.get("isConfirmed") {
        Some(Value::Bool(false)) => true,
        Some(reason) => matches!(reason.get("type").and_then(Value::as_u64), Some(0 | 5)),
        None => false,
    };
    let exit_code = specific
        .and_then(|s| s.get("terminalCommandState"))
        .and_then(|s| s.get("exitCode"))
        .and_then(Value::as_i64);
    let failed = details
        .and_then(|d| d.get("isError"))
        .and_then(Value::as_bool)
        == Some(true)
        || exit_code.is_some_and(|code| code != 0);
    let complete = part.get("isComplete").and_then(Value::as_bool) != Some(false);
    if complete || rejected {
        call.output = invocation_output(part).map(|text| policy.text(&text));
    }
    call.rejected = rejected;
    call.is_error = rejected || failed;
    session.tool_calls.push(call);
}

/// A tool invocation's input: `resultDetails.input` (JSON text, parsed), else the terminal
/// command or the raw input of its `toolSpecificData`, else what the chat showed.
fn invocation_input(budget: &mut Budget, part: &Value) -> Value {
    if let Some(input) = part
        .get("resultDetails")
        .and_then(|d| d.get("input"))
        .and_then(Value::as_str)
    {
        return budget
            .parse_embedded(input)
            .unwrap_or_else(|| Value::String(input.to_owned()));
    }
    if let Some(specific) = part.get("toolSpecificData") {
        match specific.get("kind").and_then(Value::as_str) {
            Some("terminal") => {
                let line = specific.get("commandLine");
                let command = ["userEdited", "toolEdited", "original"]
                    .iter()
                    .find_map(|k| line.and_then(|l| l.get(*k)).and_then(Value::as_str))
                    .or_else(|| specific.get("command").and_then(Value::as_str));
                if let Some(command) = command {
                    return serde_json::json!({ "command": command });
                }
            }
            Some("input") => {
                if let Some(raw) = specific.get("rawInput") {
                    return raw.clone();
                }
            }
            _ => {}
        }
    }
    match markdown_text(part.get("invocationMessage")) {
        Some(text) => serde_json::json!({ "invocation": text }),
        None => Value::Null,
    }
}

/// A tool invocation's result as text: its text output parts, else a terminal command's
/// output, else what the chat showed once it ran.
fn invocation_output(part: &Value) -> Option<String> {
    let output = part.get("resultDetails").and_then(|d| d.get("output"));
    match output {
        Some(Value::String(s)) => return Some(s.clone()),
        Some(Value::Array(items)) => {
            let texts: Vec<&str> = items
                .iter()
                .filter(|i| i.get("isText").and_then(Value::as_bool) == Some(true))
                .filter_map(|i| i.get("value").and_then(Value::as_str))
                .collect();
            if !texts.is_empty() {
                return Some(texts.join("\n"));
            }
        }
        _ => {}
    }
    if let Some(text) = part
        .get("toolSpecificData")
        .and_then(|s| s.get("terminalCommandOutput"))
        .and_then(|o| o.get("text"))
        .and_then(Value::as_str)
    {
        return Some(text.to_owned());
    }
    markdown_text(part.get("pastTenseMessage")).map(str::to_owned)
}

// ---------------------------------------------------------------------------------------------
// `copilot` CLI sessions
// ---------------------------------------------------------------------------------------------

/// Event families of the CLI's schema whose events carry no turn.
const QUIET_FAMILIES: [&str; 12] = [
    "session.",
    "assistant.",
    "tool.",
    "subagent.",
    "hook.",
    "system.",
    "permission.",
    "skill.",
    "user.",
    "model.",
    "pending_messages.",
    "tool_search.",
];

/// Abort reasons that are the user's doing.
const USER_ABORTS: [&str; 3] = ["user_initiated", "user_abort", "remote_command"];

/// Error codes of a tool call the user or a permission rule refused.
const REFUSED_CODES: [&str; 2] = ["rejected", "denied"];

/// Parses a `copilot` CLI session's `events.jsonl`, fed one line at a time.
#[derive(Debug)]
pub struct CopilotCliReader {
    session: Session,
    policy: TextPolicy,
    /// Tool calls by their raw `toolCallId`: index in `session.tool_calls`.
    calls: HashMap<String, usize>,
}

impl CopilotCliReader {
    /// A reader for one session; `fallback_id` names it when no `session.start` does.
    pub fn new(fallback_id: &str, mut policy: TextPolicy) -> Self {
        let id = policy.text(fallback_id);
        CopilotCliReader {
            session: Session::new(SourceKind::Copilot, id),
            policy,
            calls: HashMap::new(),
        }
    }

    /// Reads one line (its 1-based number for errors); blank lines are ignored.
    ///
    /// # Errors
    /// A line that is not a JSON object: the session should be skipped.
    pub fn push_line(&mut self, line_no: usize, line: &str) -> Result<(), LineError> {
        let Some(event) = json_object_line(&mut self.policy.budget, line_no, line)? else {
            return Ok(());
        };
        if event.get("ephemeral").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let timestamp = event.get("timestamp").and_then(Value::as_str);
        if let Some(ts) = timestamp {
            self.session.saw_timestamp(ts);
        }
        let timestamp = timestamp.map(|ts| self.policy.text(ts));
        let agent = event
            .get("agentId")
            .and_then(Value::as_str)
            .map(|a| self.policy.text(a));
        let empty = Value::Object(Map::new());
        let data = event.get("data").unwrap_or(&empty);
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "session.start" => {
                if let Some(id) = data.get("sessionId").and_then(Value::as_str)
                    && !id.is_empty()
                {
                    self.session.id = self.policy.text(id);
                }
                self.saw_folder(data.get("context").and_then(|c| c.get("cwd")));
            }
            "session.resume" => self.saw_folder(data.get("context").and_then(|c| c.get("cwd"))),
            "session.context_changed" => self.saw_folder(data.get("cwd")),
            "user.message" => self.user_message(data, timestamp, agent),
            "assistant.message" => self.assistant_message(data, timestamp, agent),
            "tool.execution_start" => {
                let id = data.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                let name = data.get("toolName").and_then(Value::as_str).unwrap_or("");
                let input = data.get("arguments").cloned().unwrap_or(Value::Null);
                self.call(id, name, input, String::new(), agent);
            }
            "tool.execution_complete" => self.complete(data, agent),
            "abort" => {
                let reason = data.get("reason").and_then(Value::as_str).unwrap_or("");
                if USER_ABORTS.contains(&reason) {
                    self.session.interruptions = self.session.interruptions.saturating_add(1);
                }
            }
            "skill.invoked" => {
                if let Some(name) = data.get("name").and_then(Value::as_str)
                    && crate::session::is_skill_name(name)
                {
                    self.session.skills.insert(name.to_owned());
                }
                if let Some(path) = data.get("path").and_then(Value::as_str) {
                    self.session.skills.extend(skills_in_paths(path));
                }
            }
            kind if QUIET_FAMILIES.iter().any(|f| kind.starts_with(f)) => {}
            _ => self.session.skipped_records = self.session.skipped_records.saturating_add(1),
        }
        Ok(())
    }

    fn saw_folder(&mut self, cwd: Option<&Value>) {
        if let Some(cwd) = cwd.and_then(Value::as_str) {
            let cwd = self.policy.text(cwd);
            self.session.saw_project(cwd);
        }
    }

    fn user_message(&mut self, data: &Value, timestamp: Option<String>, agent: Option<String>) {
        let source = data.get("source").and_then(Value::as_str).unwrap_or("");
        if let Some(skill) = source.strip_prefix("skill-")
            && crate::session::is_skill_name(skill)
        {
            self.session.skills.insert(skill.to_owned());
        }
        let typed = source.is_empty() || source == "user";
        if !typed || data.get("isAutopilotContinuation").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let text = data.get("content").and_then(Value::as_str).unwrap_or("");
        if text.trim().is_empty() {
            return;
        }
        if agent.is_none()
            && let Some(outcome) = outcome_in_message(text)
        {
            self.session.outcome = Some(outcome);
        }
        self.session.turns.push(Turn {
            role: Role::User,
            text: self.policy.text(text),
            timestamp,
            subagent: agent,
        });
    }

    fn assistant_message(
        &mut self,
        data: &Value,
        timestamp: Option<String>,
        agent: Option<String>,
    ) {
        let text = data.get("content").and_then(Value::as_str).unwrap_or("");
        let thought = self.policy.text(text);
        if !text.trim().is_empty() {
            self.session.turns.push(Turn {
                role: Role::Assistant,
                text: thought.clone(),
                timestamp,
                subagent: agent.clone(),
            });
        }
        if let Some(Value::Array(requests)) = data.get("toolRequests") {
            for request in requests {
                let id = request
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let name = request.get("name").and_then(Value::as_str).unwrap_or("");
                let input = request.get("arguments").cloned().unwrap_or(Value::Null);
                self.call(id, name, input, thought.clone(), agent.clone());
            }
        }
    }

    /// The index of call `id`, recorded now when it is new (a call is announced by the
    /// assistant's message and again when it starts: it is one call).
    fn call(
        &mut self,
        id: &str,
        name: &str,
        input: Value,
        thought: String,
        agent: Option<String>,
    ) -> usize {
        if let Some(&at) = self.calls.get(id).filter(|_| !id.is_empty()) {
            if let Some(call) = self.session.tool_calls.get_mut(at)
                && call.input.is_null()
                && !input.is_null()
            {
                for text in json_strings(&input) {
                    self.session.skills.extend(skills_in_paths(text));
                }
                call.input = self.policy.json(input);
            }
            return at;
        }
        for text in json_strings(&input) {
            self.session.skills.extend(skills_in_paths(text));
        }
        let call = ToolCall::started(&mut self.policy, id, name, input, thought, agent);
        let at = self.session.tool_calls.len();
        self.session.tool_calls.push(call);
        if !id.is_empty() {
            self.calls.insert(id.to_owned(), at);
        }
        at
    }

    fn complete(&mut self, data: &Value, agent: Option<String>) {
        let id = data.get("toolCallId").and_then(Value::as_str).unwrap_or("");
        let at = self.call(id, "", Value::Null, String::new(), agent);
        let success = data.get("success").and_then(Value::as_bool) == Some(true);
        let output = if success {
            data.get("result")
                .and_then(|r| r.get("content").or_else(|| r.get("detailedContent")))
                .and_then(Value::as_str)
                .unwrap_or("")
        } else {
            data.get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let refused = data
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_str)
            .is_some_and(|code| REFUSED_CODES.contains(&code));
        let output = self.policy.text(output);
        if let Some(call) = self.session.tool_calls.get_mut(at) {
            call.output = Some(output);
            call.is_error = !success;
            call.rejected = !success && refused;
        }
    }

    /// The session read so far, and the policy (for its redaction counts).
    pub fn finish(self) -> (Session, TextPolicy) {
        (self.session, self.policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &str = r#"{
      "sessionId": "0f6c1a52-legacy",
      "startTime": "2025-09-30T08:00:00.000Z",
      "chatMessages": [
        {"role": "system", "content": "You are the GitHub Copilot CLI."},
        {"role": "user", "content": "Fix the build"},
        {"role": "assistant", "content": "Reading the skill.", "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "str_replace_editor",
           "arguments": "{\"command\":\"view\",\"path\":\"/w/app/.github/skills/build/SKILL.md\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Run make."},
        {"role": "assistant", "content": "", "tool_calls": [
          {"id": "call_2", "type": "function", "function": {"name": "bash",
           "arguments": "{\"command\":\"make\",\"description\":\"Build\"}"}},
          {"id": "call_3", "type": "function", "function": {"name": "bash",
           "arguments": "{\"command\":\"rm -rf build\"}"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "make: *** Error 2"},
        {"role": "tool", "tool_call_id": "nobody", "content": "?"},
        {"role": "assistant", "content": "The build fails in the linker."},
        {"role": "narrator", "content": "?"}
      ],
      "timeline": [
        {"id": "e1", "timestamp": "2025-09-30T08:00:01.000Z", "type": "user", "text": "Fix the build"},
        {"id": "e2", "timestamp": "2025-09-30T08:00:05.000Z", "type": "tool_call_completed",
         "callId": "call_2", "toolTitle": "bash", "result": {"type": "failure", "log": "Error 2"}},
        {"id": "e3", "timestamp": "2025-09-30T08:00:06.000Z", "type": "tool_call_completed",
         "callId": "call_3", "toolTitle": "bash", "result": {"type": "rejected", "log": "The user refused."}},
        {"id": "e4", "timestamp": "2025-09-30T08:04:00.000Z", "type": "copilot", "text": "The build fails in the linker."}
      ]
    }"#;

    #[test]
    fn older_cli_sessions_yield_turns_calls_failures_and_refusals() {
        let (s, _) = read_copilot_history(HISTORY, "fallback", TextPolicy::default()).unwrap();
        assert_eq!(s.source, SourceKind::Copilot);
        assert_eq!(s.id, "0f6c1a52-legacy");
        assert_eq!(s.first_prompt(), Some("Fix the build"));
        assert_eq!(s.last_answer(), Some("The build fails in the linker."));
        assert_eq!(s.turns.len(), 3);
        assert_eq!(s.tool_calls.len(), 3);
        assert_eq!(s.tool_calls[0].name, "str_replace_editor");
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("Run make."));
        assert_eq!(s.tool_calls[0].thought, "Reading the skill.");
        assert!(s.used_skill("build"));
        assert_eq!(s.tool_calls[1].input["command"], "make");
        assert_eq!(s.tool_calls[1].output.as_deref(), Some("make: *** Error 2"));
        assert!(s.tool_calls[1].is_error && !s.tool_calls[1].rejected);
        assert_eq!(s.tool_calls[2].output.as_deref(), Some("The user refused."));
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.skipped_records, 2);
        assert!(s.projects.is_empty());
        assert_eq!(
            s.first_timestamp.as_deref(),
            Some("2025-09-30T08:00:00.000Z")
        );
        assert_eq!(
            s.last_timestamp.as_deref(),
            Some("2025-09-30T08:04:00.000Z")
        );
    }

    #[test]
    fn older_cli_files_that_are_not_sessions_are_errors_and_secrets_are_redacted() {
        for text in ["[]", "not json", r#"{"sessionId":"x"}"#] {
            let e = read_copilot_history(text, "f", TextPolicy::default()).unwrap_err();
            assert!(e.reason.starts_with("not a copilot CLI session"), "{e}");
        }
        let odd = r#"{"chatMessages":[1,{"role":"assistant","tool_calls":[5,{"function":{"arguments":7}}]},{"role":"tool"}],"timeline":[3,{"type":"tool_call_completed","callId":[]}]}"#;
        let (s, _) = read_copilot_history(odd, "f", TextPolicy::default()).unwrap();
        assert_eq!(s.id, "f");
        assert_eq!(s.tool_calls.len(), 2);
        let secret = HISTORY.replace(
            "Run make.",
            "token ghp_Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJkL1mN",
        );
        let (s, policy) = read_copilot_history(&secret, "f", TextPolicy::default()).unwrap();
        assert!(policy.redactions() > 0);
        assert!(!serde_json::to_string(&s).unwrap().contains("ghp_Q2x9"));
    }

    const CHAT: &str = r#"{"version":3,"sessionId":"v1","creationDate":1762074000000,"requests":[
        {"requestId":"r1","timestamp":1762074001000,"message":{"text":"Fix the build","parts":[]},
         "response":[{"value":"Reading the skill."},
           {"kind":"toolInvocationSerialized","toolId":"copilot_readFile","toolCallId":"t1","isComplete":true,
            "isConfirmed":{"type":1},"invocationMessage":{"value":"Reading SKILL.md"},
            "resultDetails":{"input":"{\"filePath\":\"/w/app/skills/build/SKILL.md\"}","output":[{"type":"embed","isText":true,"value":"Run make."}]}},
           {"kind":"toolInvocationSerialized","toolId":"run_in_terminal","toolCallId":"t2","isComplete":true,
            "toolSpecificData":{"kind":"terminal","commandLine":{"original":"make"},"terminalCommandOutput":{"text":"Error 2"},"terminalCommandState":{"exitCode":2}}},
           {"kind":"toolInvocationSerialized","toolId":"run_in_terminal","toolCallId":"t3","isComplete":true,"isConfirmed":{"type":0},
            "toolSpecificData":{"kind":"terminal","commandLine":{"original":"rm -rf /"}}},
           {"kind":"thinking","value":"hmm"},
           {"value":"Done, "},{"value":"mostly."}],
         "modelState":{"value":1,"completedAt":1762074300000}},
        {"requestId":"r2","timestamp":1762074400000,"message":{"text":"Try again"},"response":[],"modelState":{"value":2,"completedAt":1762074401000}}
    ]}"#;

    #[test]
    fn a_flat_chat_yields_turns_calls_errors_refusals_and_cancellations() {
        let data = vscode_chat_from_json(&mut Budget::default(), CHAT).unwrap();
        let (s, _) =
            read_vscode_chat(&data, "file", Some("/w/app"), TextPolicy::default()).unwrap();
        assert_eq!(s.source, SourceKind::Copilot);
        assert_eq!(s.id, "v1");
        assert_eq!(s.projects, ["/w/app"]);
        assert_eq!(s.first_prompt(), Some("Fix the build"));
        assert_eq!(s.last_answer(), Some("Reading the skill.\n\nDone, mostly."));
        assert_eq!(s.turns.len(), 3);
        assert_eq!(s.tool_calls.len(), 3);
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("Run make."));
        assert_eq!(s.tool_calls[0].thought, "Reading the skill.");
        assert_eq!(s.tool_calls[1].input["command"], "make");
        assert_eq!(s.tool_calls[1].output.as_deref(), Some("Error 2"));
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.interruptions, 1);
        assert!(s.used_skill("build"));
        assert_eq!(
            s.last_timestamp.as_deref(),
            Some("2025-11-02T09:06:41.000Z")
        );
    }

    #[test]
    fn a_session_log_replays_sets_pushes_cuts_and_deletes() {
        let lines = [
            r#"{"kind":0,"v":{"version":3,"sessionId":"v2","creationDate":1762074000000,"requests":[],"customTitle":"x"}}"#,
            r#"{"kind":2,"k":["requests"],"v":[{"requestId":"a","message":{"text":"first"},"response":[]}]}"#,
            r#"{"kind":2,"k":["requests",0,"response"],"v":[{"value":"partial"}]}"#,
            r#"{"kind":2,"k":["requests",0,"response"],"v":[{"value":"whole answer"}],"i":0}"#,
            r#"{"kind":1,"k":["requests",0,"modelState"],"v":{"value":1,"completedAt":1762074100000}}"#,
            "",
            r#"{"kind":2,"k":["requests"],"v":[{"requestId":"b","message":{"text":"second"}}]}"#,
            r#"{"kind":2,"k":["requests"],"i":1}"#,
            r#"{"kind":3,"k":["customTitle"]}"#,
        ];
        let mut log = VsCodeChatLog::new();
        for (i, line) in lines.iter().enumerate() {
            log.push_line(i + 1, line).unwrap();
        }
        let data = log.finish().unwrap();
        assert!(data.get("customTitle").is_none());
        let (s, _) = read_vscode_chat(&data, "f", None, TextPolicy::default()).unwrap();
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.last_answer(), Some("whole answer"));
    }

    #[test]
    fn bad_logs_name_their_line() {
        let cases: [(&[&str], usize); 5] = [
            (&["not json"], 1),
            (&[r#"{"kind":1,"k":["a"],"v":1}"#], 1),
            (
                &[
                    r#"{"kind":0,"v":{"requests":[]}}"#,
                    r#"{"kind":1,"k":["requests",5,"x"],"v":1}"#,
                ],
                2,
            ),
            (&[r#"{"kind":0,"v":{}}"#, r#"{"kind":9,"k":["a"]}"#], 2),
            (&[r#"{"kind":0,"v":{}}"#, r#"{"kind":1,"v":1}"#], 2),
        ];
        for (lines, bad) in cases {
            let mut log = VsCodeChatLog::new();
            let err = lines
                .iter()
                .enumerate()
                .find_map(|(i, l)| log.push_line(i + 1, l).err())
                .unwrap();
            assert_eq!(err.line, bad, "{lines:?}: {err}");
        }
        assert!(VsCodeChatLog::new().finish().is_err());
        let data = vscode_chat_from_json(&mut Budget::default(), r#"{"sessionId":"x"}"#).unwrap();
        assert!(read_vscode_chat(&data, "f", None, TextPolicy::default()).is_err());
        assert!(vscode_chat_from_json(&mut Budget::default(), "[]").is_err());
    }

    #[test]
    fn odd_shapes_are_read_without_panic() {
        let odd = [
            r#"{"requests":[1,"x",null,{"message":7,"response":{"kind":3},"timestamp":1e308,"modelState":[]},
                {"response":[7,{"kind":"toolInvocationSerialized","isConfirmed":"yes","resultDetails":[1],"toolSpecificData":{"kind":"terminal","commandLine":5}}]}]}"#,
            r#"{"requests":[],"creationDate":-99999999999999999,"sessionId":""}"#,
        ];
        for text in odd {
            let data = vscode_chat_from_json(&mut Budget::default(), text).unwrap();
            read_vscode_chat(&data, "f", None, TextPolicy::default()).unwrap();
        }
        let mut log = VsCodeChatLog::new();
        for (i, line) in [
            r#"{"kind":0,"v":[1,2]}"#,
            r#"{"kind":2,"k":[0],"v":[1],"i":18446744073709551615}"#,
            r#"{"kind":3,"k":[5]}"#,
            r#"{"kind":0,"v":{"a":{"b":1}}}"#,
            r#"{"kind":2,"k":["a","b"],"v":"x"}"#,
            r#"{"kind":1,"k":[],"v":1}"#,
        ]
        .iter()
        .enumerate()
        {
            let _ = log.push_line(i + 1, line);
        }
        let mut reader = CopilotCliReader::new("f", TextPolicy::default());
        for line in [
            r#"{"type":7,"data":[]}"#,
            r#"{"type":"tool.execution_complete","data":{"toolCallId":5,"success":"yes","error":"x"}}"#,
            r#"{"type":"assistant.message","data":{"toolRequests":{"a":1},"content":[]}}"#,
            r#"{"type":"user.message","data":{"content":{"x":1},"source":3}}"#,
            r#"{"type":"session.start","data":{"context":"x"},"timestamp":5}"#,
        ] {
            reader.push_line(1, line).unwrap();
        }
        let (s, _) = reader.finish();
        assert_eq!(s.tool_calls.len(), 1);
    }

    const EVENTS: &[&str] = &[
        r#"{"type":"session.start","data":{"sessionId":"cli-1","version":1,"producer":"copilot-agent","copilotVersion":"0.0.400","startTime":"2026-02-01T10:00:00.000Z","context":{"cwd":"/w/app"}},"id":"e1","timestamp":"2026-02-01T10:00:00.000Z","parentId":null}"#,
        r#"{"type":"user.message","data":{"content":"Fix the build"},"id":"e2","timestamp":"2026-02-01T10:00:01.000Z","parentId":"e1"}"#,
        r#"{"type":"user.message","data":{"content":"<skill body>","source":"skill-release"},"id":"e2b","timestamp":"2026-02-01T10:00:01.500Z","parentId":"e2"}"#,
        r#"{"type":"assistant.turn_start","data":{"turnId":"0"},"id":"e3","timestamp":"2026-02-01T10:00:02.000Z","parentId":"e2"}"#,
        r#"{"type":"assistant.message","data":{"messageId":"m1","content":"Reading the skill.","toolRequests":[{"toolCallId":"c1","name":"view","arguments":{"path":"/w/app/skills/build/SKILL.md"}}]},"id":"e4","timestamp":"2026-02-01T10:00:03.000Z","parentId":"e3"}"#,
        r#"{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"view","arguments":{"path":"/w/app/skills/build/SKILL.md"}},"id":"e5","timestamp":"2026-02-01T10:00:03.100Z","parentId":"e4"}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"Run make."}},"id":"e6","timestamp":"2026-02-01T10:00:03.200Z","parentId":"e5"}"#,
        r#"{"type":"tool.execution_start","data":{"toolCallId":"c2","toolName":"bash","arguments":{"command":"make"}},"id":"e7","timestamp":"2026-02-01T10:00:04.000Z","parentId":"e6"}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c2","success":false,"error":{"message":"exit code 2","code":"failure"}},"id":"e8","timestamp":"2026-02-01T10:00:05.000Z","parentId":"e7"}"#,
        r#"{"type":"tool.execution_complete","data":{"toolCallId":"c3","success":false,"error":{"message":"The user rejected this tool call.","code":"rejected"}},"id":"e9","timestamp":"2026-02-01T10:00:06.000Z","parentId":"e8"}"#,
        r#"{"type":"assistant.message","agentId":"sub-1","data":{"messageId":"m2","content":"Subagent note."},"id":"e10","timestamp":"2026-02-01T10:00:07.000Z","parentId":"e9"}"#,
        r#"{"type":"abort","data":{"reason":"user_initiated"},"id":"e11","timestamp":"2026-02-01T10:00:08.000Z","parentId":"e10"}"#,
        r#"{"type":"session.usage_info","ephemeral":true,"data":{},"id":"e12","timestamp":"2026-02-01T10:00:09.000Z","parentId":"e11"}"#,
        r#"{"type":"mystery.event","data":{},"id":"e13","timestamp":"2026-02-01T10:00:10.000Z","parentId":"e12"}"#,
    ];

    #[test]
    fn cli_events_yield_turns_calls_errors_refusals_and_interruptions() {
        let mut reader = CopilotCliReader::new("dir-name", TextPolicy::default());
        for (i, line) in EVENTS.iter().enumerate() {
            reader.push_line(i + 1, line).unwrap();
        }
        let (s, _) = reader.finish();
        assert_eq!(s.source, SourceKind::Copilot);
        assert_eq!(s.id, "cli-1");
        assert_eq!(s.projects, ["/w/app"]);
        assert_eq!(s.turns.len(), 3);
        assert_eq!(s.first_prompt(), Some("Fix the build"));
        assert_eq!(s.last_answer(), Some("Reading the skill."));
        assert_eq!(s.tool_calls.len(), 3);
        assert_eq!(s.tool_calls[0].thought, "Reading the skill.");
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("Run make."));
        assert_eq!(s.tool_calls[1].output.as_deref(), Some("exit code 2"));
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.rejected_calls(), 1);
        assert_eq!(s.interruptions, 1);
        assert_eq!(s.skipped_records, 1);
        assert!(s.used_skill("build"));
        assert!(s.used_skill("release"));
        assert_eq!(
            s.last_timestamp.as_deref(),
            Some("2026-02-01T10:00:10.000Z")
        );
    }

    #[test]
    fn cli_lines_that_are_not_objects_are_errors_and_secrets_are_redacted() {
        let mut reader = CopilotCliReader::new("f", TextPolicy::default());
        assert_eq!(reader.push_line(3, "[1]").unwrap_err().line, 3);
        assert_eq!(reader.push_line(4, "{").unwrap_err().line, 4);
        let line = EVENTS[1].replace(
            "Fix the build",
            "key sk-proj-Q2x9LmN4pR7tV1wY3zA5bC8dE0fG6hJ",
        );
        reader.push_line(1, &line).unwrap();
        let (s, policy) = reader.finish();
        assert!(policy.redactions() > 0);
        assert!(!serde_json::to_string(&s).unwrap().contains("sk-proj-Q2x9"));
    }
}
