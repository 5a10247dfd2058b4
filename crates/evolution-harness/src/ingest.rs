//! Trajectory ingestion (the loop's first step, and sessions recorded in real use): failed-trajectory
//! JSON files and `SESSION-STATE.md` into run-log records.
//!
//! Ingestion partly succeeds: every record that parses is returned, and
//! every file or section that does not is named in a diagnostic with the
//! reason. Nothing is skipped silently.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use evolution_types::{GeneratedQuestion, JsonMap, Prediction, TraceStep};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Fields every trajectory must have.
pub const REQUIRED_TRAJECTORY_FIELDS: [&str; 6] = [
    "id",
    "task_description",
    "question",
    "fail_reason",
    "predicted_answer",
    "reference_text",
];

/// One input that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestDiagnostic {
    /// The file (and, inside it, the element or section) that was skipped.
    pub source: String,
    /// Why.
    pub reason: String,
}

/// What ingestion produced: records for the run log plus a diagnostic per
/// skipped input.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Ingested {
    /// One question per trajectory (id, task type, text, reference answer).
    pub questions: Vec<GeneratedQuestion>,
    /// One prediction per trajectory.
    pub predictions: Vec<Prediction>,
    /// Trace steps, when trajectories carried them.
    pub traces: Vec<TraceStep>,
    /// Skipped inputs.
    pub diagnostics: Vec<IngestDiagnostic>,
}

/// Why ingestion could not run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The folder or file could not be read.
    #[error("could not read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The folder holds no trajectory file (the user is asked to add some).
    #[error("no trajectory files in {0}: put failed_trajectory_*.json files there first")]
    Empty(String),
}

fn text_field(object: &JsonMap, key: &str) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("field {key:?} must be a string, found {other}")),
    }
}

fn number_field(object: &JsonMap, key: &str) -> Result<Option<f64>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if (0.0..=1.0).contains(&x) => Ok(Some(x)),
            _ => Err(format!("field {key:?} must lie in [0, 1], found {n}")),
        },
        Some(Value::Bool(b)) if key == "hard" => Ok(Some(if *b { 1.0 } else { 0.0 })),
        Some(other) => Err(format!("field {key:?} must be a number, found {other}")),
    }
}

/// Converts one trajectory object; `Err` is the reason to skip it.
fn trajectory(
    run_id: &str,
    source: &str,
    mut object: JsonMap,
) -> Result<(GeneratedQuestion, Prediction, Vec<TraceStep>), String> {
    let missing: Vec<&str> = REQUIRED_TRAJECTORY_FIELDS
        .iter()
        .copied()
        .filter(|f| !object.contains_key(*f))
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing required fields {missing:?}"));
    }
    let id = text_field(&object, "id")?.unwrap_or_default();
    if id.trim().is_empty() {
        return Err("field \"id\" is empty".to_owned());
    }
    for field in REQUIRED_TRAJECTORY_FIELDS {
        text_field(&object, field)?;
    }
    let question_text = text_field(&object, "question")?.unwrap_or_default();
    let predicted = text_field(&object, "predicted_answer")?.unwrap_or_default();
    let reference = text_field(&object, "reference_text")?
        .filter(|s| !s.is_empty())
        .or(text_field(&object, "reference_answer")?)
        .unwrap_or_default();
    let task_type = text_field(&object, "task_type")?.unwrap_or_default();
    let hard = number_field(&object, "hard")?;
    let soft = number_field(&object, "soft")?;
    let steps = match object.remove("steps") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("field \"steps\" must be an array".to_owned()),
    };
    let mut trace = Vec::with_capacity(steps.len());
    for (index, step) in steps.into_iter().enumerate() {
        let Value::Object(mut step) = step else {
            return Err(format!("steps[{index}] is not an object"));
        };
        let position = u32::try_from(index).unwrap_or(u32::MAX).saturating_add(1);
        step.insert("run_id".to_owned(), run_id.into());
        step.insert("question_id".to_owned(), id.clone().into());
        step.entry("step").or_insert_with(|| position.into());
        let step = serde_json::from_value::<TraceStep>(Value::Object(step))
            .map_err(|e| format!("steps[{index}] is malformed: {e}"))?;
        trace.push(step);
    }
    for key in ["id", "question", "predicted_answer", "task_type"] {
        object.remove(key);
    }
    object.insert("source_file".to_owned(), source.into());
    let question = GeneratedQuestion {
        question_id: id.clone(),
        task_type: task_type.clone(),
        question: question_text,
        answer: reference.clone(),
        ..GeneratedQuestion::default()
    };
    let steps_used = u32::try_from(trace.len()).unwrap_or(u32::MAX);
    let prediction = Prediction {
        run_id: run_id.to_owned(),
        question_id: id,
        task_type,
        prediction: predicted,
        answer: reference,
        // Files in the folder are failed trajectories unless they say `hard: 1`.
        correct: hard == Some(1.0),
        answer_confidence: soft,
        steps_used,
        stop_reason: "submit".to_owned(),
        extra: object,
        ..Prediction::default()
    };
    Ok((question, prediction, trace))
}

impl Ingested {
    /// Sends one [`crate::HarnessEvent::InputSkipped`] per diagnostic to `events`.
    pub fn report_to(&self, events: &dyn crate::events::EventSink) {
        for d in &self.diagnostics {
            events.emit(&crate::events::HarnessEvent::InputSkipped {
                file: d.source.clone(),
                reason: d.reason.clone(),
            });
        }
    }

    fn skip(&mut self, source: impl Into<String>, reason: impl Into<String>) {
        self.diagnostics.push(IngestDiagnostic {
            source: source.into(),
            reason: reason.into(),
        });
    }
}

/// Ingestion in progress: the records so far and the ids they hold, so that a
/// repeated id is found in constant time however many records came before.
#[derive(Default)]
struct Collector {
    out: Ingested,
    ids: HashSet<String>,
}

impl Collector {
    fn skip(&mut self, source: impl Into<String>, reason: impl Into<String>) {
        self.out.skip(source, reason);
    }

    /// Adds a record, or skips it when its id was seen before.
    fn add(&mut self, source: String, record: (GeneratedQuestion, Prediction, Vec<TraceStep>)) {
        let (question, prediction, trace) = record;
        if !self.ids.insert(prediction.question_id.clone()) {
            let id = prediction.question_id;
            self.skip(source, format!("duplicate trajectory id {id:?}"));
            return;
        }
        self.out.questions.push(question);
        self.out.predictions.push(prediction);
        self.out.traces.extend(trace);
    }
}

/// Parses trajectory files given as (name, text) pairs, in the given order.
///
/// A file holds one trajectory object or an array of them. A file that is
/// not JSON, an element that lacks a required field, has a field of the
/// wrong type, or repeats an earlier id is skipped with a diagnostic.
pub fn parse_trajectories<N: AsRef<str>, T: AsRef<str>>(
    run_id: &str,
    files: impl IntoIterator<Item = (N, T)>,
) -> Ingested {
    let mut out = Collector::default();
    for (name, text) in files {
        let name = name.as_ref();
        match serde_json::from_str::<Value>(text.as_ref()) {
            Ok(Value::Object(object)) => match trajectory(run_id, name, object) {
                Ok(record) => out.add(name.to_owned(), record),
                Err(reason) => out.skip(name, reason),
            },
            Ok(Value::Array(items)) => {
                if items.is_empty() {
                    out.skip(name, "empty array");
                }
                for (index, item) in items.into_iter().enumerate() {
                    let source = format!("{name}[{index}]");
                    match item {
                        Value::Object(object) => match trajectory(run_id, name, object) {
                            Ok(record) => out.add(source, record),
                            Err(reason) => out.skip(source, reason),
                        },
                        _ => out.skip(source, "not a JSON object"),
                    }
                }
            }
            Ok(_) => out.skip(name, "not a JSON object or array"),
            Err(e) => out.skip(name, format!("invalid JSON: {e}")),
        }
    }
    out.out
}

/// Largest trajectory file (or SESSION-STATE.md) read, in bytes: 64 MiB.
pub const MAX_TRAJECTORY_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads a trajectory file: a regular file (checked before it is opened, so a
/// named pipe never blocks) of at most [`MAX_TRAJECTORY_FILE_BYTES`].
/// `Err` is the reason, in words.
fn read_trajectory_file(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (a named pipe, a device or a socket)".to_owned());
    }
    let too_big = |size: u64| {
        format!(
            "{size} bytes, over the limit of {MAX_TRAJECTORY_FILE_BYTES} bytes \
             (64 MiB) for a trajectory file"
        )
    };
    if meta.len() > MAX_TRAJECTORY_FILE_BYTES {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_TRAJECTORY_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_TRAJECTORY_FILE_BYTES {
        return Err(too_big(read));
    }
    String::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_owned())
}

/// Reads every file of `dir` (sorted by name) as trajectories. Files not
/// ending in `.json`, subfolders and unreadable files are reported, not read;
/// so are named pipes, devices and files over [`MAX_TRAJECTORY_FILE_BYTES`].
///
/// # Errors
/// [`IngestError::Io`] when the folder cannot be listed;
/// [`IngestError::Empty`] when it holds no `.json` file.
pub fn load_trajectory_dir(run_id: &str, dir: &Path) -> Result<Ingested, IngestError> {
    let io = |source| IngestError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            skipped.push((name, "a folder, not a trajectory file".to_owned()));
        } else if !name.to_lowercase().ends_with(".json") {
            skipped.push((name, "not a .json file".to_owned()));
        } else {
            match read_trajectory_file(&path) {
                Ok(text) => files.push((name, text)),
                Err(reason) => skipped.push((name, format!("unreadable: {reason}"))),
            }
        }
    }
    if files.is_empty() && skipped.iter().all(|(_, r)| !r.starts_with("unreadable")) {
        return Err(IngestError::Empty(dir.display().to_string()));
    }
    let mut out = parse_trajectories(run_id, files);
    for (name, reason) in skipped {
        out.skip(name, reason);
    }
    Ok(out)
}

/// The failure-detection rules for sessions recorded in real use. A section is a failure
/// when `hard_success` is false or any marker occurs in its values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FailureRules {
    /// Rule 1, the user corrected the agent ("路径不对", "芯片型号错了").
    pub correction_markers: Vec<String>,
    /// Rule 2, a tool call failed: keys whose non-empty value means an error.
    pub tool_error_keys: Vec<String>,
    /// Rule 3, the user said "no" or "start over".
    pub rejection_markers: Vec<String>,
    /// Rule 4, the task status says it failed.
    pub status_markers: Vec<String>,
}

impl Default for FailureRules {
    fn default() -> Self {
        let v = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect();
        FailureRules {
            correction_markers: v(&["不对", "错了", "wrong", "incorrect"]),
            tool_error_keys: v(&["tool_error", "error"]),
            rejection_markers: v(&["不是", "重来", "start over", "redo"]),
            status_markers: v(&["❌", "失败", "错误", "failed"]),
        }
    }
}

/// Which rule marked a section as failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureSignal {
    /// `hard_success: false`.
    HardFailure,
    /// The user corrected the agent.
    UserCorrection,
    /// A tool call failed.
    ToolError,
    /// The user said no or asked to start over.
    UserRejection,
    /// The status holds a failure marker.
    FailedStatus,
}

fn unquote(raw: &str) -> String {
    let raw = raw.trim();
    if raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') {
        if let Ok(Value::String(s)) = serde_json::from_str::<Value>(raw) {
            return s;
        }
        return raw
            .get(1..raw.len().saturating_sub(1))
            .unwrap_or(raw)
            .to_owned();
    }
    raw.to_owned()
}

/// The `## Outcomes` sections of a SESSION-STATE.md: (heading line, key/value bullets).
fn outcome_sections(text: &str) -> Vec<(usize, Vec<(String, String)>)> {
    let mut sections = Vec::new();
    let mut current: Option<(usize, Vec<(String, String)>)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(heading) = trimmed.strip_prefix("## ").or(trimmed.strip_prefix("### ")) {
            if let Some(done) = current.take() {
                sections.push(done);
            }
            if heading.trim().to_lowercase().starts_with("outcome") {
                current = Some((index.saturating_add(1), Vec::new()));
            }
        } else if trimmed.starts_with("# ") {
            if let Some(done) = current.take() {
                sections.push(done);
            }
        } else if let Some((_, bullets)) = current.as_mut()
            && let Some(item) = trimmed.strip_prefix("- ").or(trimmed.strip_prefix("* "))
            && let Some((key, value)) = item.split_once(':')
        {
            bullets.push((key.trim().to_lowercase(), unquote(value)));
        }
    }
    if let Some(done) = current {
        sections.push(done);
    }
    sections
}

/// Parses SESSION-STATE.md text (a session recorded in real use) into one prediction per
/// `## Outcomes` section, failed or not, marked by `rules`.
///
/// Recognised bullets: `id`, `hard_success` (bool), `soft_score` (0–1),
/// `fail_reason`, `task_description`, `task_type`, `user_message`,
/// `predicted_answer`, `reference_answer`, `feedback`, `status`; the rest
/// are kept in `extra`. `correct` is true only for `hard_success: true` with
/// no failure signal; the signals that fired are in `extra.failure_signals`.
/// A section with a malformed `hard_success` or `soft_score` is skipped with
/// a diagnostic; so is a text without any such section.
pub fn parse_session_state(
    run_id: &str,
    source: &str,
    text: &str,
    rules: &FailureRules,
) -> Ingested {
    let mut out = Collector::default();
    let sections = outcome_sections(text);
    if sections.is_empty() {
        out.skip(source, "no \"## Outcomes\" section");
    }
    for (number, (line, bullets)) in sections.into_iter().enumerate() {
        let section = format!("{source}:{line}");
        match session_section(run_id, number.saturating_add(1), &bullets, rules) {
            Ok((question, prediction)) => out.add(section, (question, prediction, Vec::new())),
            Err(reason) => out.skip(section, reason),
        }
    }
    out.out
}

fn session_section(
    run_id: &str,
    number: usize,
    bullets: &[(String, String)],
    rules: &FailureRules,
) -> Result<(GeneratedQuestion, Prediction), String> {
    let get = |key: &str| {
        bullets
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let hard_success = match get("hard_success").map(str::to_lowercase).as_deref() {
        None => None,
        Some("true" | "1" | "yes") => Some(true),
        Some("false" | "0" | "no") => Some(false),
        Some(other) => {
            return Err(format!(
                "hard_success must be true or false, found {other:?}"
            ));
        }
    };
    let soft = match get("soft_score") {
        None | Some("") => None,
        Some(raw) => match raw.parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => {
                return Err(format!(
                    "soft_score must be a number in [0, 1], found {raw:?}"
                ));
            }
        },
    };
    let contains_any = |markers: &[String], value: &str| {
        let value = value.to_lowercase();
        markers
            .iter()
            .any(|m| !m.is_empty() && value.contains(&m.to_lowercase()))
    };
    let mut signals = BTreeSet::new();
    if hard_success == Some(false) {
        signals.insert(FailureSignal::HardFailure);
    }
    for (key, value) in bullets {
        if matches!(key.as_str(), "hard_success" | "soft_score" | "id") {
            continue;
        }
        if contains_any(&rules.correction_markers, value) {
            signals.insert(FailureSignal::UserCorrection);
        }
        if contains_any(&rules.rejection_markers, value) {
            signals.insert(FailureSignal::UserRejection);
        }
        if contains_any(&rules.status_markers, value) {
            signals.insert(FailureSignal::FailedStatus);
        }
        if rules.tool_error_keys.iter().any(|k| k == key) && !value.trim().is_empty() {
            signals.insert(FailureSignal::ToolError);
        }
    }
    let id = get("id")
        .filter(|s| !s.trim().is_empty())
        .map_or_else(|| format!("session-state-{number}"), str::to_owned);
    let mut extra = JsonMap::new();
    for (key, value) in bullets {
        if !matches!(
            key.as_str(),
            "id" | "task_type" | "predicted_answer" | "reference_answer" | "soft_score"
        ) {
            extra.insert(key.clone(), value.clone().into());
        }
    }
    extra.insert(
        "failure_signals".to_owned(),
        serde_json::to_value(&signals).unwrap_or_default(),
    );
    let task_type = get("task_type").unwrap_or_default().to_owned();
    let reference = get("reference_answer").unwrap_or_default().to_owned();
    let question = GeneratedQuestion {
        question_id: id.clone(),
        task_type: task_type.clone(),
        question: get("user_message")
            .or(get("task_description"))
            .unwrap_or_default()
            .to_owned(),
        answer: reference.clone(),
        ..GeneratedQuestion::default()
    };
    let prediction = Prediction {
        run_id: run_id.to_owned(),
        question_id: id,
        task_type,
        prediction: get("predicted_answer").unwrap_or_default().to_owned(),
        answer: reference,
        correct: hard_success == Some(true) && signals.is_empty(),
        answer_confidence: soft,
        stop_reason: "submit".to_owned(),
        extra,
        ..Prediction::default()
    };
    Ok((question, prediction))
}

/// Reads and parses a SESSION-STATE.md file (see [`parse_session_state`]).
///
/// # Errors
/// [`IngestError::Io`] when the file cannot be read, is not a regular file or
/// is over [`MAX_TRAJECTORY_FILE_BYTES`].
pub fn load_session_state(
    run_id: &str,
    path: &Path,
    rules: &FailureRules,
) -> Result<Ingested, IngestError> {
    let text = read_trajectory_file(path).map_err(|reason| IngestError::Io {
        path: path.display().to_string(),
        source: std::io::Error::other(reason),
    })?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(parse_session_state(run_id, &name, &text, rules))
}
