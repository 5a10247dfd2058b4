//! What a harvested session holds, whatever agent wrote it: its turns, its tool calls with
//! their results, the skills it loaded, the turns the user interrupted, and counts of what was
//! skipped. Readers fill it line by line; every text they keep went through a
//! [`TextPolicy`] first (secrets redacted, then size capped with a visible marker).

use std::collections::BTreeSet;

use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::limits::{Budget, Exceeded, ParseError};
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
    /// A Cursor chat (composer), from Cursor's SQLite stores (`~/.config/Cursor/User`, or
    /// `~/Library/Application Support/Cursor/User` on macOS).
    Cursor,
    /// A GitHub Copilot session: a VS Code chat session
    /// (`~/.config/Code/User/workspaceStorage/<hash>/chatSessions/*.json[l]`) or a `copilot` CLI
    /// session (`~/.copilot/session-state/<id>/events.jsonl`).
    Copilot,
}

impl SourceKind {
    /// The name used on the command line and in trajectory ids.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::ClaudeCode => "claude-code",
            SourceKind::Codex => "codex",
            SourceKind::Gemini => "gemini",
            SourceKind::OpenCode => "opencode",
            SourceKind::Cursor => "cursor",
            SourceKind::Copilot => "copilot",
        }
    }

    /// The agent's name for people.
    pub fn display_name(self) -> &'static str {
        match self {
            SourceKind::ClaudeCode => "Claude Code",
            SourceKind::Codex => "Codex",
            SourceKind::Gemini => "Gemini CLI",
            SourceKind::OpenCode => "OpenCode",
            SourceKind::Cursor => "Cursor",
            SourceKind::Copilot => "GitHub Copilot",
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
    /// Most JSON values kept of one tool input: the items and fields past it are left out,
    /// a marker saying how many in their place.
    pub max_values: usize,
    /// What the session has read against its bounds: every document a reader parses goes
    /// through it.
    pub budget: Budget,
}

impl Default for TextPolicy {
    fn default() -> Self {
        TextPolicy {
            redactor: Some(Redactor::default()),
            max_chars: DEFAULT_MAX_TEXT_CHARS,
            max_values: DEFAULT_MAX_KEPT_VALUES,
            budget: Budget::default(),
        }
    }
}

/// Characters kept of one message or tool result by default.
pub const DEFAULT_MAX_TEXT_CHARS: usize = 8_000;

/// JSON values kept of one tool input by default.
pub const DEFAULT_MAX_KEPT_VALUES: usize = 10_000;

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
    /// every string capped, and the value cut to [`TextPolicy::max_values`] values (a list's
    /// items past them replaced by one string saying how many were left out, an object's fields
    /// by one field `"…"` saying so).
    pub fn json(&mut self, mut value: Value) -> Value {
        if let Some(r) = self.redactor.as_mut() {
            r.redact_json(&mut value);
        }
        let mut kept = 0;
        self.cap_in_place(&mut value, &mut kept);
        value
    }

    /// Caps `value` in place; `kept` counts the values kept so far. Recursive: a value nests no
    /// deeper than its document's bound ([`crate::limits::Limits::max_depth`]).
    fn cap_in_place(&self, value: &mut Value, kept: &mut usize) {
        *kept = kept.saturating_add(1);
        let room = self.max_values.saturating_sub(*kept);
        match value {
            Value::String(s) => {
                if s.char_indices().nth(self.max_chars).is_some() {
                    *s = truncate_chars(s, self.max_chars);
                }
            }
            Value::Array(items) => {
                let left_out = items.len().saturating_sub(room);
                items.truncate(room);
                items.iter_mut().for_each(|v| self.cap_in_place(v, kept));
                if left_out > 0 {
                    items.push(Value::String(format!("[{left_out} more items left out]")));
                }
            }
            Value::Object(map) => {
                let left_out = map.len().saturating_sub(room);
                if left_out > 0 {
                    *map = std::mem::take(map).into_iter().take(room).collect();
                }
                map.values_mut().for_each(|v| self.cap_in_place(v, kept));
                if left_out > 0 {
                    map.insert(
                        "…".to_owned(),
                        Value::String(format!("{left_out} more fields left out")),
                    );
                }
            }
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
    /// The bound the session crossed, when that is why.
    pub limit: Option<Exceeded>,
}

impl LineError {
    /// Line `line` could not be read, for `reason`.
    pub fn new(line: usize, reason: impl Into<String>) -> Self {
        LineError {
            line,
            reason: reason.into(),
            limit: None,
        }
    }

    /// At line `line` the session crossed a bound.
    pub fn limit(line: usize, why: Exceeded) -> Self {
        LineError {
            line,
            reason: why.to_string(),
            limit: Some(why),
        }
    }

    /// A document that could not be parsed at line `line`; `what` prefixes a reason that is
    /// not a bound (a bound speaks for itself).
    pub(crate) fn parse(line: usize, what: &str, e: ParseError) -> Self {
        match e {
            ParseError::Limit(why) => LineError::limit(line, why),
            ParseError::Invalid(_) => LineError::new(line, format!("{what}{e}")),
        }
    }

    /// Fails with the bound `budget` crossed, if any, at line `line`.
    ///
    /// # Errors
    /// That bound.
    pub(crate) fn check(line: usize, budget: &Budget) -> Result<(), LineError> {
        match budget.exceeded() {
            Some(why) => Err(LineError::limit(line, why)),
            None => Ok(()),
        }
    }
}

/// Line `line_no` (1-based) of a JSON-lines file as an object, parsed within `budget`: `None`
/// for a blank line.
///
/// # Errors
/// [`LineError`] when the line is not JSON, JSON that is not an object, or over a bound.
pub(crate) fn json_object_line(
    budget: &mut Budget,
    line_no: usize,
    line: &str,
) -> Result<Option<Map<String, Value>>, LineError> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    match budget.parse(line) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(LineError::new(line_no, "not a JSON object")),
        Err(e) => Err(LineError::parse(line_no, "", e)),
    }
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

/// Every string of a JSON value, depth first.
pub(crate) fn json_strings(value: &Value) -> Vec<&str> {
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

/// `ms` (milliseconds since the Unix epoch) as an ISO 8601 UTC timestamp.
pub(crate) fn iso_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        (of_day % 3600) / 60,
        of_day % 60
    )
}

/// A JSON number of milliseconds since the Unix epoch as an ISO 8601 timestamp (`None` for
/// anything else, or a number no calendar holds).
pub(crate) fn iso_millis_of(value: Option<&Value>) -> Option<String> {
    let ms = match value? {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))?,
        _ => return None,
    };
    // Years 0000–9999 only: a wider number is not a timestamp.
    (-62_167_219_200_000..=253_402_300_799_999)
        .contains(&ms)
        .then(|| iso_millis(ms))
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The local path of a `file://` URI (`file:///home/u/my%20app` is `/home/u/my app`; a
/// Windows drive `file:///c%3A/w` is `c:/w`), or `None` for another scheme, a remote host or
/// an escape that is not UTF-8.
pub fn file_uri_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///p` has an empty host; `file://localhost/p` names this machine.
    let path = match rest.strip_prefix("localhost") {
        Some(p) if p.starts_with('/') => p,
        _ if rest.starts_with('/') => rest,
        _ => return None,
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    let path = String::from_utf8(out).ok()?;
    // `/c:/w` is a Windows drive path.
    let drive = path.get(1..3).is_some_and(|d| {
        d.ends_with(':') && d.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
    });
    Some(if drive {
        path.get(1..).unwrap_or_default().to_owned()
    } else {
        path
    })
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
    fn a_json_lines_record_is_an_object_a_blank_line_nothing_and_anything_else_an_error() {
        let b = &mut Budget::default();
        let record = json_object_line(b, 1, r#"{"type":"x"}"#).unwrap().unwrap();
        assert_eq!(record["type"], "x");
        assert_eq!(json_object_line(b, 2, "  \t").unwrap(), None);
        let not_object = json_object_line(b, 3, "[1]").unwrap_err();
        assert_eq!(not_object.line, 3);
        assert_eq!(not_object.reason, "not a JSON object");
        let invalid = json_object_line(b, 4, "{oops").unwrap_err();
        assert!(invalid.reason.starts_with("invalid JSON: "), "{invalid}");
    }

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
    fn tool_inputs_keep_at_most_their_values_with_a_marker() {
        let mut policy = TextPolicy {
            max_values: 5,
            ..TextPolicy::default()
        };
        let list = policy.json(serde_json::json!([1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(
            list,
            serde_json::json!([1, 2, 3, 4, "[4 more items left out]"])
        );
        let object = policy.json(serde_json::json!({"a": 1, "b": [1, 2, 3, 4], "c": 3}));
        assert_eq!(
            object,
            serde_json::json!({"a": 1, "b": [1, 2, "[2 more items left out]"], "c": 3})
        );
        let fields = policy.json(serde_json::json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}));
        assert_eq!(
            fields,
            serde_json::json!({"a": 1, "b": 2, "c": 3, "d": 4, "…": "1 more fields left out"})
        );
        let small = serde_json::json!({"command": "ls", "args": ["-l"]});
        assert_eq!(policy.json(small.clone()), small);
    }

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///home/u/my%20app").as_deref(),
            Some("/home/u/my app")
        );
        assert_eq!(
            file_uri_path("file://localhost/w/x").as_deref(),
            Some("/w/x")
        );
        assert_eq!(file_uri_path("file:///c%3A/w").as_deref(), Some("c:/w"));
        assert_eq!(file_uri_path("vscode-remote://ssh/w"), None);
        assert_eq!(file_uri_path("file://server/share"), None);
        assert_eq!(file_uri_path("file:///bad%zz"), None);
        assert_eq!(file_uri_path("file:///bad%ff"), None);
        assert_eq!(file_uri_path("file:///a%2"), None);
    }

    #[test]
    fn milliseconds_become_iso_timestamps() {
        assert_eq!(iso_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso_millis(-1), "1969-12-31T23:59:59.999Z");
        let ms = serde_json::json!(1_762_074_000_000_i64);
        assert_eq!(
            iso_millis_of(Some(&ms)).as_deref(),
            Some("2025-11-02T09:00:00.000Z")
        );
        assert_eq!(iso_millis_of(Some(&serde_json::json!(1e300))), None);
        assert_eq!(iso_millis_of(Some(&serde_json::json!("x"))), None);
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
