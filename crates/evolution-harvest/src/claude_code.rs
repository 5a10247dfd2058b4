//! Claude Code transcripts: one JSON object per line, as Claude Code writes them under
//! `~/.claude/projects/<encoded project path>/<session>.jsonl`, with each subagent's
//! conversation in a side file `<session>/subagents/<agent>.jsonl`.
//!
//! Records read: `user` (a message, tool results with `is_error`, an interruption marker,
//! a skill's instructions announced as a meta message) and `assistant` (text and `tool_use`
//! blocks; one message may span several lines sharing its `message.id`). Known records that
//! carry nothing to learn from (`progress`, `system`, `file-history-snapshot`,
//! `queue-operation`, `summary`…, and the bookkeeping Claude Code 2.1 writes around each turn:
//! `attachment` reminders, `api-request*`, `tools-used`, `mode`, `last-prompt`, `cost-state`,
//! `atis-latch`) are passed over; any other type is skipped and counted.
//! User-role messages Claude Code writes itself (a background task's notification, a local
//! command's output, a harness reminder) are not turns; a slash command or a `!` shell command
//! becomes a turn holding the command as the user typed it (`/compact keep the plan`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::outcome::outcome_in_message;
use crate::session::{
    LineError, Role, Session, SourceKind, TextPolicy, ToolCall, Turn, content_text, is_skill_name,
    json_object_line, skills_in_paths,
};

/// Record types that are read or knowingly passed over.
const KNOWN_RECORDS: [&str; 18] = [
    "user",
    "assistant",
    "progress",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "summary",
    "custom-title",
    "tag",
    // Claude Code 2.1.x: the reminders it sends with a turn (environment, date, skill and
    // agent listings), the requests it made, the last prompt, the session's cost.
    "attachment",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "last-prompt",
    "cost-state",
    "atis-latch",
    "tools-used",
    "mode",
];

/// Content blocks that are read or knowingly passed over.
const KNOWN_BLOCKS: [&str; 7] = [
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "image",
    "document",
];

/// The text Claude Code writes as a user message when the user stops a turn.
pub const INTERRUPTED_MARKER: &str = "[Request interrupted by user";

/// How the user-role messages Claude Code writes itself begin: a background task's
/// notification, a local command's output, a reminder of the harness. Nothing the user said.
const GENERATED_PREFIXES: [&str; 7] = [
    "<task-notification>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<bash-stdout>",
    "<bash-stderr>",
];

/// How the user-role messages that record a slash command or a shell command the user typed
/// begin; they become the command as typed (`/compact keep the plan`, `! make test`).
const COMMAND_PREFIXES: [&str; 3] = ["<command-name>", "<command-message>", "<bash-input>"];

/// How a tool result says the user refused the call.
const REJECTED_PREFIX: &str = "The user doesn't want to proceed with this tool use";

/// How Claude Code announces a loaded skill in a meta message.
const SKILL_BASE_DIR: &str = "Base directory for this skill:";

/// Reads one session (its main file, then each side file) line by line.
#[derive(Debug)]
pub struct ClaudeCodeReader {
    session: Session,
    policy: TextPolicy,
    /// Tool call index by `tool_use` id.
    calls: HashMap<String, usize>,
    /// The assistant message being read: its id and its turn's index.
    open_message: Option<(String, usize)>,
    /// The subagent whose side file is being read.
    subagent: Option<String>,
    /// The session id found in the records, if any.
    found_id: Option<String>,
    /// The working folder of the last record, as written.
    last_cwd: String,
}

impl ClaudeCodeReader {
    /// A reader for the session `fallback_id` (used when no record names its session).
    pub fn new(fallback_id: &str, policy: TextPolicy) -> Self {
        ClaudeCodeReader {
            session: Session::new(SourceKind::ClaudeCode, fallback_id),
            policy,
            calls: HashMap::new(),
            open_message: None,
            subagent: None,
            found_id: None,
            last_cwd: String::new(),
        }
    }

    /// The lines that follow come from the side file of subagent `agent`.
    pub fn start_side_file(&mut self, agent: &str) {
        self.subagent = Some(agent.to_owned());
        self.open_message = None;
        self.session.side_files = self.session.side_files.saturating_add(1);
    }

    /// Reads line `line_no` (1-based). Blank lines are ignored.
    ///
    /// # Errors
    /// [`LineError`] when the line is not a JSON object: the session should be skipped.
    pub fn push_line(&mut self, line_no: usize, line: &str) -> Result<(), LineError> {
        let Some(record) = json_object_line(&mut self.policy.budget, line_no, line)? else {
            return Ok(());
        };
        let kind = record.get("type").and_then(Value::as_str).unwrap_or("");
        if !KNOWN_RECORDS.contains(&kind) {
            self.session.skipped_records = self.session.skipped_records.saturating_add(1);
            return Ok(());
        }
        if let Some(ts) = record.get("timestamp").and_then(Value::as_str) {
            self.session.saw_timestamp(ts);
        }
        if let Some(cwd) = record.get("cwd").and_then(Value::as_str)
            && self.last_cwd != cwd
        {
            // Every record repeats the folder: it is redacted once per change, not per line.
            cwd.clone_into(&mut self.last_cwd);
            let cwd = self.policy.text(cwd);
            self.session.saw_project(cwd);
        }
        if self.found_id.is_none()
            && let Some(id) = record.get("sessionId").and_then(Value::as_str)
            && !id.is_empty()
        {
            self.found_id = Some(self.policy.text(id));
        }
        let timestamp = record
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match kind {
            "user" => self.user(&record, timestamp),
            "assistant" => self.assistant(&record, timestamp),
            _ => {}
        }
        Ok(())
    }

    fn user(&mut self, record: &Map<String, Value>, timestamp: Option<String>) {
        let content = record.get("message").and_then(|m| m.get("content"));
        // Claude Code writes an assistant message one block a line, and the results of its
        // first calls can come before the line of its next call: a record of tool results
        // only leaves the message open, so that call keeps the message's text as its thought.
        let only_results = matches!(content, Some(Value::Array(blocks))
            if !blocks.is_empty()
                && blocks
                    .iter()
                    .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")));
        if !only_results {
            self.open_message = None;
        }
        let is_meta = record.get("isMeta").and_then(Value::as_bool) == Some(true);
        let is_summary = record.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        let mut texts = Vec::new();
        match content {
            Some(Value::String(s)) => texts.push(s.as_str()),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                    match kind {
                        "text" => {
                            if let Some(t) = block.get("text").and_then(Value::as_str) {
                                texts.push(t);
                            }
                        }
                        "tool_result" => self.tool_result(block),
                        other => self.count_block(other),
                    }
                }
            }
            _ => {}
        }
        for text in texts {
            if is_meta {
                if let Some(rest) = text.trim_start().strip_prefix(SKILL_BASE_DIR) {
                    let dir = rest.lines().next().unwrap_or_default().trim();
                    let name = dir.trim_end_matches('/').rsplit('/').next().unwrap_or("");
                    if is_skill_name(name) {
                        self.session.skills.insert(name.to_owned());
                    }
                }
                continue;
            }
            if is_summary {
                continue;
            }
            let trimmed = text.trim_start();
            if trimmed.starts_with(INTERRUPTED_MARKER) {
                self.session.interruptions = self.session.interruptions.saturating_add(1);
                continue;
            }
            if GENERATED_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
                continue;
            }
            let typed;
            let text = if COMMAND_PREFIXES.iter().any(|p| trimmed.starts_with(p)) {
                match typed_command(trimmed) {
                    Some(command) => {
                        typed = command;
                        typed.as_str()
                    }
                    None => continue,
                }
            } else {
                text
            };
            if let Some(outcome) = outcome_in_message(text) {
                self.session.outcome = Some(outcome);
            }
            let text = self.policy.text(text);
            self.session.turns.push(Turn {
                role: Role::User,
                text,
                timestamp: timestamp.clone(),
                subagent: self.subagent.clone(),
            });
        }
    }

    fn tool_result(&mut self, block: &Value) {
        let id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
        let raw = content_text(block.get("content"));
        let rejected = is_error && raw.trim_start().starts_with(REJECTED_PREFIX);
        let output = self.policy.text(&raw);
        let index = match self.calls.get(id) {
            Some(&i) => i,
            None => {
                // A result whose call is not in the file (cut off, or before a compaction).
                let call = ToolCall::started(
                    &mut self.policy,
                    id,
                    "",
                    Value::Null,
                    String::new(),
                    self.subagent.clone(),
                );
                self.session.tool_calls.push(call);
                self.session.tool_calls.len().saturating_sub(1)
            }
        };
        if let Some(call) = self.session.tool_calls.get_mut(index) {
            call.output = Some(output);
            call.is_error = is_error;
            call.rejected = rejected;
        }
    }

    fn assistant(&mut self, record: &Map<String, Value>, timestamp: Option<String>) {
        let Some(message) = record.get("message") else {
            return;
        };
        let message_id = message
            .get("id")
            .and_then(Value::as_str)
            .or_else(|| record.get("uuid").and_then(Value::as_str))
            .unwrap_or("")
            .to_owned();
        let turn_index = match &self.open_message {
            Some((id, index)) if *id == message_id && !message_id.is_empty() => *index,
            _ => {
                self.session.turns.push(Turn {
                    role: Role::Assistant,
                    text: String::new(),
                    timestamp,
                    subagent: self.subagent.clone(),
                });
                let index = self.session.turns.len().saturating_sub(1);
                self.open_message = Some((message_id, index));
                index
            }
        };
        let blocks = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(Value::String(s)) => {
                let text = self.policy.text(s);
                self.append_text(turn_index, &text);
                return;
            }
            _ => return,
        };
        for block in blocks {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            match kind {
                "text" => {
                    let raw = block.get("text").and_then(Value::as_str).unwrap_or("");
                    if !raw.trim().is_empty() {
                        let text = self.policy.text(raw);
                        self.append_text(turn_index, &text);
                    }
                }
                "tool_use" => self.tool_use(block, turn_index),
                other => self.count_block(other),
            }
        }
    }

    fn append_text(&mut self, turn_index: usize, text: &str) {
        if let Some(turn) = self.session.turns.get_mut(turn_index) {
            if !turn.text.is_empty() {
                turn.text.push('\n');
            }
            turn.text.push_str(text);
        }
    }

    fn tool_use(&mut self, block: &Value, turn_index: usize) {
        let id = block
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
        let input = block.get("input").cloned().unwrap_or(Value::Null);
        self.note_skills(name, &input);
        let thought = self
            .session
            .turns
            .get(turn_index)
            .map(|t| t.text.clone())
            .unwrap_or_default();
        let call = ToolCall::started(
            &mut self.policy,
            &id,
            name,
            input,
            thought,
            self.subagent.clone(),
        );
        self.session.tool_calls.push(call);
        self.calls
            .insert(id, self.session.tool_calls.len().saturating_sub(1));
    }

    /// The skill tool names its skill; a read or a command may open a `SKILL.md`.
    fn note_skills(&mut self, tool: &str, input: &Value) {
        if tool == "Skill"
            && let Some(name) = input
                .get("skill")
                .or_else(|| input.get("name"))
                .and_then(Value::as_str)
            && is_skill_name(name)
        {
            self.session.skills.insert(name.to_owned());
        }
        for key in ["file_path", "path", "command"] {
            if let Some(text) = input.get(key).and_then(Value::as_str) {
                self.session.skills.extend(skills_in_paths(text));
            }
        }
    }

    fn count_block(&mut self, kind: &str) {
        if !KNOWN_BLOCKS.contains(&kind) {
            self.session.skipped_records = self.session.skipped_records.saturating_add(1);
        }
    }

    /// The session read so far. Assistant turns with no text (only tool calls) are dropped
    /// from the turns; their calls stay.
    pub fn finish(mut self) -> (Session, TextPolicy) {
        if let Some(id) = self.found_id {
            self.session.id = id;
        }
        self.session
            .turns
            .retain(|t| !(t.role == Role::Assistant && t.text.is_empty()));
        (self.session, self.policy)
    }
}

/// The command a slash-command or shell-command message records, as the user typed it:
/// `<command-name>/compact</command-name>…<command-args>keep the plan</command-args>` is
/// `/compact keep the plan`, `<bash-input>make test</bash-input>` is `! make test`.
fn typed_command(text: &str) -> Option<String> {
    if let Some(input) = tag_value(text, "bash-input") {
        return Some(format!("! {input}"));
    }
    let name = tag_value(text, "command-name")?;
    let args = tag_value(text, "command-args").unwrap_or_default();
    let command = format!("{name} {args}");
    let command = command.trim();
    (!command.is_empty()).then(|| command.to_owned())
}

/// The trimmed text between `<tag>` and the next `</tag>`, when both are there.
fn tag_value<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)?.saturating_add(open.len());
    let rest = text.get(start..)?;
    let end = rest.find(&close)?;
    rest.get(..end).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Session {
        let mut r = ClaudeCodeReader::new("fallback", TextPolicy::default());
        for (i, line) in lines.iter().enumerate() {
            r.push_line(i + 1, line).unwrap();
        }
        r.finish().0
    }

    #[test]
    fn tool_calls_pair_with_their_results_across_lines() {
        let s = read(&[
            r#"{"type":"user","sessionId":"s1","cwd":"/p","timestamp":"2026-01-02T03:04:05Z","message":{"role":"user","content":"fix the build"}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."}]}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"make"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#,
            r#"{"type":"progress","data":{}}"#,
            r#"{"type":"brand-new-record"}"#,
            // What Claude Code 2.1 writes around a turn: passed over, not counted.
            r#"{"type":"attachment","attachment":{"type":"date"},"cwd":"/p","sessionId":"s1"}"#,
            r#"{"type":"api-request","sessionId":"s1","id":"r1","params":{}}"#,
            r#"{"type":"api-request-shape","sessionId":"s1","shapeHash":"h"}"#,
            r#"{"type":"api-request-blob","sessionId":"s1","hash":"h","message":{}}"#,
            r#"{"type":"last-prompt","lastPrompt":"fix the build","sessionId":"s1"}"#,
            r#"{"type":"cost-state","sessionId":"s1","totalCostUSD":0.01}"#,
            r#"{"type":"atis-latch","atis":"","sessionId":"s1"}"#,
            r#"{"type":"tools-used","sessionId":"s1"}"#,
            r#"{"type":"mode","sessionId":"s1"}"#,
        ]);
        assert_eq!(s.id, "s1");
        assert_eq!(s.projects, ["/p"]);
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.tool_calls.len(), 1);
        assert_eq!(s.tool_calls[0].thought, "Looking.");
        assert_eq!(s.tool_calls[0].output.as_deref(), Some("boom"));
        assert_eq!(s.tool_errors(), 1);
        assert_eq!(s.interruptions, 1);
        assert_eq!(s.skipped_records, 1);
    }

    #[test]
    fn messages_claude_code_writes_itself_are_not_turns_and_commands_read_as_typed() {
        let s = read(&[
            r#"{"type":"user","message":{"content":"<command-message>deploy</command-message>\n<command-name>/deploy</command-name>\n<command-args>to staging</command-args>"}}"#,
            r#"{"type":"user","isMeta":true,"message":{"content":"<local-command-caveat>Caveat: generated by local commands.</local-command-caveat>"}}"#,
            r#"{"type":"user","message":{"content":"<local-command-stdout>[ ] 1. git status\nOutcome: failed</local-command-stdout>"}}"#,
            r#"{"type":"user","message":{"content":"<task-notification>\n<task-id>b1</task-id>\n<status>failed</status>\n</task-notification>\nRead the output file"}}"#,
            r#"{"type":"user","message":{"content":[{"type":"text","text":"<system-reminder>\nhook context\n</system-reminder>"}]}}"#,
            r#"{"type":"user","message":{"content":"<bash-input>make test</bash-input>"}}"#,
            r#"{"type":"user","message":{"content":"<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>"}}"#,
            r#"{"type":"user","message":{"content":"<command-name></command-name>"}}"#,
            r#"{"type":"user","message":{"content":"now the <command-name> tag in a sentence"}}"#,
        ]);
        let turns: Vec<&str> = s.turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            turns,
            [
                "/deploy to staging",
                "! make test",
                "now the <command-name> tag in a sentence"
            ]
        );
        assert_eq!(s.first_prompt(), Some("/deploy to staging"));
        assert_eq!(s.outcome, None, "a command's output states no outcome");
    }

    #[test]
    fn a_message_split_around_tool_results_stays_one_turn() {
        let s = read(&[
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Reading both files."}]}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"A"}]}}"#,
            r#"{"type":"progress","data":{"type":"hook_progress"}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"b"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"B"}]}}"#,
            r#"{"type":"user","message":{"content":"thanks"}}"#,
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"A reused id after a user turn is a new turn."}]}}"#,
        ]);
        let thoughts: Vec<&str> = s.tool_calls.iter().map(|c| c.thought.as_str()).collect();
        assert_eq!(thoughts, ["Reading both files.", "Reading both files."]);
        let turns: Vec<&str> = s.turns.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            turns,
            [
                "Reading both files.",
                "thanks",
                "A reused id after a user turn is a new turn."
            ]
        );
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let mut r = ClaudeCodeReader::new("f", TextPolicy::default());
        r.push_line(1, "").unwrap();
        let err = r.push_line(2, "{oops").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.reason.starts_with("invalid JSON"), "{err}");
        assert!(r.push_line(3, "[1]").is_err());
    }

    #[test]
    fn skills_come_from_the_skill_tool_reads_and_announcements() {
        let s = read(&[
            r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"a","name":"Skill","input":{"skill":"plug:deploy"}},{"type":"tool_use","id":"b","name":"Read","input":{"file_path":"/h/.claude/skills/pdf/SKILL.md"}}]}}"#,
            r#"{"type":"user","isMeta":true,"message":{"content":[{"type":"text","text":"Base directory for this skill: /h/.claude/skills/review\n\n# Review"}]}}"#,
        ]);
        let skills: Vec<&str> = s.skills.iter().map(String::as_str).collect();
        assert_eq!(skills, ["pdf", "plug:deploy", "review"]);
        assert!(s.used_skill("deploy"));
        assert!(s.turns.is_empty());
    }
}
