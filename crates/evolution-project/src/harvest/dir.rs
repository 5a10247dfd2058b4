//! The two sources that are not agent transcripts: a SESSION-STATE.md (judged by its explicit
//! outcome fields) and a folder of this project's own trajectory files (judged by their `hard`
//! field, as `evolve` reads them). Both come out redacted, with the verdict's reasons.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use evolution_harness::{MAX_TRAJECTORY_FILE_BYTES, parse_trajectories};
use evolution_harvest::limits::{Budget, Limits, ParseError, SkipReason};
use evolution_harvest::redact::Redactor;
use evolution_harvest::signals::{Reason, Verdict};
use evolution_harvest::trajectory::safe_id;
use serde_json::{Map, Value, json};

use super::Harvested;
use super::session_state::read_session_state;
use crate::error::bad_at;
use crate::input::{InputKind, read_input_text};

/// Every `## Outcomes` section of a SESSION-STATE.md as a trajectory. A section that cannot
/// be read stops the command with its file and line, as `evolve --session-state` does.
pub(super) fn session_state(
    path: &Path,
    redact: bool,
    redactions: &mut Redactor,
) -> anyhow::Result<Vec<Harvested>> {
    let text = read_input_text(path, InputKind::SessionState)?;
    let source = path.display().to_string();
    let (ingested, verdicts) = read_session_state("harvest", &source, &text);
    if let Some(d) = ingested.diagnostics.first() {
        let line = d
            .source
            .strip_prefix(source.as_str())
            .and_then(|rest| rest.strip_prefix(':'))
            .and_then(|n| n.parse::<usize>().ok());
        return Err(bad_at(path, line, d.reason.clone()));
    }
    let mut out = Vec::new();
    for ((question, prediction), verdict) in ingested
        .questions
        .iter()
        .zip(&ingested.predictions)
        .zip(verdicts)
    {
        let text = |key: &str| {
            prediction
                .extra
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut object = Map::new();
        object.insert("id".to_owned(), Value::from(prediction.question_id.clone()));
        object.insert(
            "task_description".to_owned(),
            Value::from(text("task_description")),
        );
        object.insert(
            "question".to_owned(),
            Value::from(question.question.clone()),
        );
        let fail_reason = if verdict.passed {
            String::new()
        } else {
            text("fail_reason")
        };
        object.insert("fail_reason".to_owned(), Value::from(fail_reason));
        object.insert(
            "predicted_answer".to_owned(),
            Value::from(prediction.prediction.clone()),
        );
        object.insert(
            "reference_text".to_owned(),
            Value::from(prediction.answer.clone()),
        );
        object.insert(
            "hard".to_owned(),
            json!(if verdict.passed { 1.0 } else { 0.0 }),
        );
        if let Some(soft) = prediction.answer_confidence {
            object.insert("soft".to_owned(), json!(soft));
        }
        object.insert("feedback".to_owned(), Value::from(text("feedback")));
        object.insert(
            "harvest".to_owned(),
            harvest_note("session-state", &source, &verdict),
        );
        out.push(finish(
            safe_id("session-state", &prediction.question_id),
            object,
            &verdict,
            redact,
            redactions,
        ));
    }
    Ok(out)
}

/// A file (or an element of one) left out, and why: not a trajectory file or element
/// ([`SkipReason::Malformed`]), or over one of the document bounds ([`SkipReason::Limit`]).
pub(super) type Skipped = (PathBuf, SkipReason);

/// One result of a folder: a trajectory, or what was left out.
pub(super) type DirItem = Result<Harvested, Skipped>;

/// The bounds of one trajectory file: the session readers' defaults (at most
/// [`DEFAULT_MAX_DOCUMENT_VALUES`](evolution_harvest::limits::DEFAULT_MAX_DOCUMENT_VALUES)
/// values, [`DEFAULT_MAX_DEPTH`](evolution_harvest::limits::DEFAULT_MAX_DEPTH) levels), and the
/// trajectory file size limit for its bytes.
pub(super) fn file_limits() -> Limits {
    Limits {
        max_session_bytes: usize::try_from(MAX_TRAJECTORY_FILE_BYTES).unwrap_or(usize::MAX),
        ..Limits::default()
    }
}

/// Every trajectory of a folder's `.json` files (sorted by name; an array file gives one per
/// element), checked as `evolve --trajectories` checks them, each handed to `on_item` as soon
/// as its file is read (so memory follows the largest file, not the folder). A file is parsed
/// within [`file_limits`]: one nesting deeper or holding more values is not built further and
/// is skipped with the bound it crossed. A file or element that does not pass is handed on as
/// skipped with its reason. With `skill`, only the trajectories that name it
/// ([`super::stated_skills`]) are kept; the others are counted in `filtered_out`.
pub(super) fn trajectory_dir(
    dir: &Path,
    redact: bool,
    redactions: &mut Redactor,
    skill: Option<&str>,
    filtered_out: &mut usize,
    on_item: &mut dyn FnMut(DirItem) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    trajectory_dir_within(
        dir,
        file_limits(),
        redact,
        redactions,
        skill,
        filtered_out,
        on_item,
    )
}

/// [`trajectory_dir`] with the bounds of each file given.
pub(super) fn trajectory_dir_within(
    dir: &Path,
    limits: Limits,
    redact: bool,
    redactions: &mut Redactor,
    skill: Option<&str>,
    filtered_out: &mut usize,
    on_item: &mut dyn FnMut(DirItem) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let io = |e: std::io::Error| bad_at(dir, None, format!("cannot read the folder: {e}"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    paths.retain(|p| {
        p.extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("json"))
    });
    paths.sort();
    if paths.is_empty() {
        return Err(bad_at(dir, None, "no .json trajectory files here"));
    }
    for path in paths {
        let name = path.display().to_string();
        let text = match read_bounded(&path) {
            Ok(text) => text,
            Err(reason) => {
                on_item(Err((path, SkipReason::Malformed(reason))))?;
                continue;
            }
        };
        let parsed = Budget::new(limits).parse(&text);
        drop(text);
        let elements = match parsed {
            Ok(Value::Array(items)) => items,
            Ok(other) => vec![other],
            Err(ParseError::Invalid(e)) => {
                on_item(Err((
                    path,
                    SkipReason::Malformed(format!("invalid JSON: {e}")),
                )))?;
                continue;
            }
            Err(ParseError::Limit(why)) => {
                on_item(Err((path, SkipReason::Limit(why))))?;
                continue;
            }
        };
        for (index, element) in elements.into_iter().enumerate() {
            let check = parse_trajectories("harvest", [(name.as_str(), element.to_string())]);
            if let Some(d) = check.diagnostics.first() {
                let reason = format!("item {}: {}", index.saturating_add(1), d.reason);
                on_item(Err((path.clone(), SkipReason::Malformed(reason))))?;
                continue;
            }
            let (Value::Object(mut object), Some(prediction)) =
                (element, check.predictions.first())
            else {
                continue;
            };
            if let Some(skill) = skill
                && !super::names_skill(
                    &super::stated_skills(Some(&prediction.task_type), &object),
                    skill,
                )
            {
                *filtered_out = filtered_out.saturating_add(1);
                continue;
            }
            let verdict = if prediction.correct {
                Verdict {
                    passed: true,
                    reasons: vec![stated("hard", "1")],
                }
            } else {
                let reason = object
                    .get("fail_reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or("hard is not 1");
                Verdict {
                    passed: false,
                    reasons: vec![Reason::ExplicitOutcome {
                        passed: false,
                        field: "fail_reason".to_owned(),
                        value: reason.to_owned(),
                    }],
                }
            };
            // A folder harvested earlier keeps the note that explains its verdict.
            object
                .entry("harvest")
                .or_insert_with(|| harvest_note("dir", &name, &verdict));
            on_item(Ok(finish(
                safe_id("", &prediction.question_id),
                object,
                &verdict,
                redact,
                redactions,
            )))?;
        }
    }
    Ok(())
}

fn stated(field: &str, value: &str) -> Reason {
    Reason::ExplicitOutcome {
        passed: true,
        field: field.to_owned(),
        value: value.to_owned(),
    }
}

fn harvest_note(source: &str, file: &str, verdict: &Verdict) -> Value {
    json!({
        "source": source,
        "file": file,
        "verdict": if verdict.passed { "passed" } else { "failed" },
        "reasons": verdict.reasons,
    })
}

/// Redacts every string of the object (unless redaction is off) and wraps it for the writer.
fn finish(
    id: String,
    object: Map<String, Value>,
    verdict: &Verdict,
    redact: bool,
    redactions: &mut Redactor,
) -> Harvested {
    let mut value = Value::Object(object);
    if redact {
        redactions.redact_json(&mut value);
    }
    let object = match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Harvested {
        id,
        object,
        passed: verdict.passed,
        reasons: verdict.describe(),
    }
}

/// A trajectory file as text: a regular file of at most the harness's trajectory limit.
pub fn read_bounded(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_TRAJECTORY_FILE_BYTES {
        return Err(format!(
            "{} bytes, over the limit of {MAX_TRAJECTORY_FILE_BYTES} bytes for a trajectory file",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            f.take(MAX_TRAJECTORY_FILE_BYTES.saturating_add(1))
                .read_to_end(&mut bytes)
        })
        .map_err(|e| e.to_string())?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_TRAJECTORY_FILE_BYTES {
        return Err("grew over the trajectory file limit while it was read".to_owned());
    }
    String::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_owned())
}
