//! What a harvested session holds, whatever agent wrote it: its turns, its tool calls with
//! their results, the skills it loaded, the turns the user interrupted, and counts of what was
//! skipped. Readers fill it line by line; every text they keep went through a
//! [`TextPolicy`] first (secrets redacted, then size capped with a visible marker).

use std::collections::BTreeSet;

use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::outcome::Outcome;
use crate::redact::Redactor;

/// Where a session came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout file (`~/.codex/sessions/YYYY/MM/DD/*.jsonl`).
    Codex,
    /// A Gemini CLI chat file (`~/.gemini/tmp/<project hash>/chats/session-*.json`).
    Gemini,
    /// An OpenCode session, from its SQLite store (`~/.local/share/opencode/opencode.db`).
    #[serde(rename = "opencode")]
    OpenCode,
}

impl SourceKind {
    /// The name used on the command line and in trajectory ids.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::ClaudeCode => "claude-code",
            SourceKind::Codex => "codex",
            SourceKind::Gemini => "gemini",
            SourceKind::OpenCode => "opencode",
        }
    }

    /// The agent's name for people.
    pub fn display_name(self) -> &'static str {
        match self {
            SourceKind::ClaudeCode => "Claude Code",
            SourceKind::Codex => "Codex",
            SourceKind::Gemini => "Gemini CLI",
            SourceKind::OpenCode => "OpenCode",
        }
    }
}

/// Who spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person using the agent.
    User,
    /// The agent.
    Assistant,
}

/// One turn: a user message or one assistant message (its text parts joined).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Who spoke.
    pub role: Role,
    /// What was said (redacted and capped).
    pub text: String,
    /// When, as the transcript wrote it (ISO 8601), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The subagent that spoke, when the turn comes from a subagent's side file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// One tool call and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id in the transcript (pairs the call with its result).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (every string redacted and capped).
    pub input: Value,
    /// What the tool returned (redacted and capped); `None` when no result was recorded.
    pub output: Option<String>,
    /// True when the transcript marks the result as an error.
    pub is_error: bool,
    /// True when the user refused the call (an error caused by the user, not the tool).
    pub rejected: bool,
    /// The assistant's text just before the call, in the same message.
    pub thought: String,
    /// The subagent that made the call, when it comes from a side file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

impl ToolCall {
    /// A call as a reader first meets it, before its result: the id, name and every string
    /// of the input go through `policy` (redacted, then capped).
    pub fn started(
        policy: &mut TextPolicy,
        id: &str,
        name: &str,
        input: Value,
        thought: String,
        subagent: Option<String>,
    ) -> Self {
        ToolCall {
            id: policy.text(id),
            name: policy.text(name),
            input: policy.json(input),
            output: None,
            is_error: false,
            rejected: false,
            thought,
            subagent,
        }
    }
}

/// A harvested session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The agent that wrote it.
    pub source: SourceKind,
    /// The session's id (from the transcript, else the caller's fallback).
    pub id: String,
    /// Working folders the session ran in, first one first.
    pub projects: Vec<String>,
    /// Earliest and latest timestamps seen (ISO 8601, as written).
    pub first_timestamp: Option<String>,
    /// See `first_timestamp`.
    pub last_timestamp: Option<String>,
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Skills the session loaded (by the skill tool, by reading a `SKILL.md`, or announced).
    pub skills: BTreeSet<String>,
    /// User interruptions ("[Request interrupted by user]", an aborted turn).
    pub interruptions: usize,
    /// An explicit outcome stated in the session (`Outcome: failed` on a line of its own).
    pub outcome: Option<Outcome>,
    /// Records of a type this reader does not know, skipped.
    pub skipped_records: usize,
    /// Side files (subagents) merged into this session.
    pub side_files: usize,
    /// The SHA-256 (hex) of the project folder's path, for hosts that record the project only
    /// so (Gemini CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_hash: Option<String>,
}

impl Session {
    /// An empty session.
    pub fn new(source: SourceKind, id: impl Into<String>) -> Self {
        Session {
            source,
            id: id.into(),
            projects: Vec::new(),
            first_timestamp: None,
            last_timestamp: None,
            turns: Vec::new(),
            tool_calls: Vec::new(),
            skills: BTreeSet::new(),
            interruptions: 0,
            outcome: None,
            skipped_records: 0,
            side_files: 0,
            project_hash: None,
        }
    }

    /// Tool calls whose result is an error the user did not cause.
    pub fn tool_errors(&self) -> usize {
        self.tool_calls
            .iter()
            .filter(|c| c.is_error && !c.rejected)
            .count()
    }

    /// Failed tool calls the agent did not get past: for each tool (per subagent), its last
    /// call, when that call failed for a reason other than the user refusing it.
    pub fn unrecovered_tool_errors(&self) -> Vec<&ToolCall> {
        let mut last: Vec<&ToolCall> = Vec::new();
        for call in &self.tool_calls {
            match last
                .iter_mut()
                .find(|c| c.name == call.name && c.subagent == call.subagent)
            {
                Some(slot) => *slot = call,
                None => last.push(call),
            }
        }
        last.retain(|c| c.is_error && !c.rejected);
        last
    }

    /// Tool calls the user refused.
    pub fn rejected_calls(&self) -> usize {
        self.tool_calls.iter().filter(|c| c.rejected).count()
    }

    /// The first user message, if any.
    pub fn first_prompt(&self) -> Option<&str> {
        self.turns
            .iter()
            .find(|t| t.role == Role::User && t.subagent.is_none())
            .map(|t| t.text.as_str())
    }

    /// The last assistant message of the main conversation, if any.
    pub fn last_answer(&self) -> Option<&str> {
        self.turns
            .iter()
            .rev()
            .find(|t| t.role == Role::Assistant && t.subagent.is_none())
            .map(|t| t.text.as_str())
    }

    /// True when the session ran in `project` or a folder under it (for a session that
    /// records only its project's hash: in `project` itself).
    pub fn ran_in(&self, project: &str) -> bool {
        let project = project.trim_end_matches('/');
        if let Some(hash) = &self.project_hash
            && self.projects.is_empty()
        {
            return *hash == crate::session::path_hash(project);
        }
        self.projects.iter().any(|p| {
            let p = p.trim_end_matches('/');
            p == project
                || p.strip_prefix(project)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// True when the session loaded skill `name` (a plugin skill `plugin:name` matches both
    /// its full name and `name`).
    pub fn used_skill(&self, name: &str) -> bool {
        self.skills
            .iter()
            .any(|s| s == name || s.rsplit(':').next() == Some(name))
    }

    /// Records a timestamp, keeping the earliest and latest (a value longer than an ISO 8601
    /// timestamp can be is not one, and is ignored).
    pub(crate) fn saw_timestamp(&mut self, ts: &str) {
        if ts.is_empty() || ts.len() > MAX_TIMESTAMP_BYTES {
            return;
        }
        if self.first_timestamp.as_deref().is_none_or(|f| ts < f) {
            self.first_timestamp = Some(ts.to_owned());
        }
        if self.last_timestamp.as_deref().is_none_or(|l| ts > l) {
            self.last_timestamp = Some(ts.to_owned());
        }
    }

    /// Records a working folder (once; at most [`MAX_PROJECTS`], a longer list is not a
    /// project's).
    pub(crate) fn saw_project(&mut self, cwd: String) {
        if !cwd.is_empty() && self.projects.len() < MAX_PROJECTS && !self.projects.contains(&cwd) {
            self.projects.push(cwd);
        }
    }
}

/// Longest timestamp kept, in bytes.
const MAX_TIMESTAMP_BYTES: usize = 64;

/// Most working folders kept per session.
pub const MAX_PROJECTS: usize = 64;

/// What happens to every text a reader keeps: secrets are redacted (unless redaction is off),
/// then the text is cut to a number of characters with a marker saying how much was left out.
#[derive(Debug, Clone)]
pub struct TextPolicy {
    /// Redacts secrets; `None` keeps text as written (the user asked for it explicitly).
    pub redactor: Option<Redactor>,
    /// Most characters kept of one text (a message, a tool's input string or output).
    pub max_chars: usize,
}

impl Default for TextPolicy {
    fn default() -> Self {
        TextPolicy {
            redactor: Some(Redactor::default()),
            max_chars: DEFAULT_MAX_TEXT_CHARS,
        }
    }
}

/// Characters kept of one message or tool result by default.
pub const DEFAULT_MAX_TEXT_CHARS: usize = 8_000;

impl TextPolicy {
    /// Redacts, then caps: the order matters, a secret cut in two would escape redaction.
    pub fn text(&mut self, raw: &str) -> String {
        let redacted = match self.redactor.as_mut() {
            Some(r) => r.redact(raw),
            None => std::borrow::Cow::Borrowed(raw),
        };
        truncate_chars(&redacted, self.max_chars)
    }

    /// [`TextPolicy::text`] applied to every string of a JSON value: redacted as a whole first
    /// (so a value under a secret-named key and a secret used as a key are found too), then
    /// every string capped.
    pub fn json(&mut self, mut value: Value) -> Value {
        if let Some(r) = self.redactor.as_mut() {
            r.redact_json(&mut value);
        }
        self.cap_in_place(&mut value);
        value
    }

    fn cap_in_place(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if s.char_indices().nth(self.max_chars).is_some() {
                    *s = truncate_chars(s, self.max_chars);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.cap_in_place(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.cap_in_place(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Redactions made so far (0 when redaction is off).
    pub fn redactions(&self) -> usize {
        self.redactor.as_ref().map_or(0, Redactor::total)
    }
}

/// A line that could not be read: the session it belongs to is skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct LineError {
    /// 1-based line number in its file.
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// The text of a message's or a tool result's `content`: the string itself, or the `text` of
/// each part of an array, joined with newlines (other parts, such as images, add nothing).
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The SHA-256 (hex) of a folder's path, as Gemini CLI names a project's folder.
pub fn path_hash(path: &str) -> String {
    use sha2::Digest as _;
    use std::fmt::Write as _;
    let digest = sha2::Sha256::digest(path.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Skill names mentioned as `…/skills/<name>/SKILL.md` in a text (a path read or run).
pub fn skills_in_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("/SKILL.md") {
        let before = rest.get(..at).unwrap_or_default();
        if let Some((dir, name)) = before.rsplit_once('/')
            && dir
                .rsplit(|c: char| c == '/' || c.is_whitespace() || c == '"' || c == '\'')
                .next()
                == Some("skills")
            && is_skill_name(name)
        {
            found.push(name.to_owned());
        }
        rest = rest
            .get(at.saturating_add("/SKILL.md".len())..)
            .unwrap_or_default();
    }
    found
}

/// A plausible skill name: 1–64 letters, digits, `-`, `_`, `.` or `:`.
pub fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= 64
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_paths_name_their_folder() {
        assert_eq!(
            skills_in_paths(
                "cat /home/u/.claude/skills/pdf-tools/SKILL.md && cat skills/x/SKILL.md"
            ),
            ["pdf-tools", "x"]
        );
        assert!(skills_in_paths("/tmp/SKILL.md and /a/b/SKILL.md").is_empty());
    }

    #[test]
    fn policy_redacts_before_capping() {
        let mut policy = TextPolicy {
            max_chars: 12,
            ..TextPolicy::default()
        };
        let out = policy.text("key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx and more");
        assert!(out.starts_with("key: [REDACT"), "{out}");
        assert!(!out.contains("sk-ant"), "{out}");
        assert!(out.contains("more chars]"), "{out}");
    }

    #[test]
    fn projects_match_their_subfolders_only() {
        let mut s = Session::new(SourceKind::Codex, "s");
        s.saw_project("/home/u/proj/sub".to_owned());
        assert!(s.ran_in("/home/u/proj"));
        assert!(s.ran_in("/home/u/proj/"));
        assert!(!s.ran_in("/home/u/pro"));
    }
}
