//! Step ① of seed 004: loading failure trajectories, from a folder of JSON
//! files (Phase 1) or from a SESSION-STATE.md (Phase 2).
//!
//! Every problem is a bad input naming the file and the line.

use std::path::Path;

use evolution_types::JsonMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::bad_at;

/// One trajectory (seed 004's `RolloutResult`, the fields the loop reads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trajectory {
    /// Unique id; the file name (and position) when the record has none.
    #[serde(default)]
    pub(crate) id: String,
    /// What the agent was asked to do.
    #[serde(default)]
    pub(crate) task_description: String,
    /// The question or user message.
    #[serde(default, alias = "user_message")]
    pub(crate) question: String,
    /// Why it failed.
    #[serde(default)]
    pub(crate) fail_reason: String,
    /// What the agent answered.
    #[serde(default)]
    pub(crate) predicted_answer: String,
    /// The expected answer.
    #[serde(default, alias = "reference_answer")]
    pub(crate) reference_text: String,
    /// Hard outcome: 1.0 passed, 0.0 failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hard: Option<f64>,
    /// Soft outcome (confidence) in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) soft: Option<f64>,
    /// What the user said about it.
    #[serde(default)]
    pub(crate) feedback: String,
    /// Every other field.
    #[serde(flatten)]
    pub(crate) extra: JsonMap,
}

impl Trajectory {
    /// A failure: not marked as passed, or with a reason for failing.
    pub(crate) fn is_failure(&self) -> bool {
        !self.fail_reason.trim().is_empty() || self.hard.is_none_or(|h| h < 1.0)
    }
}

/// What the loader found.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The failures, in file order.
    pub(crate) failures: Vec<Trajectory>,
    /// Trajectories that passed and were left out.
    pub(crate) passed: usize,
}

const FIELDS_HINT: &str = "each needs id, task_description, question, fail_reason, \
                           predicted_answer, reference_text";

/// Reads every `.json` file directly in `dir` (sorted by name); each holds
/// one trajectory object or an array of them.
pub(crate) fn load_dir(dir: &Path) -> anyhow::Result<Loaded> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| bad_at(dir, None, format!("cannot read the trajectory folder: {e}")))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| bad_at(dir, None, format!("cannot read the trajectory folder: {e}")))?
            .path();
        if path.is_file() && path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(bad_at(
            dir,
            None,
            format!(
                "no .json trajectory files here: put failed trajectories in this folder first \
                 ({FIELDS_HINT})"
            ),
        ));
    }
    let mut all = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad_at(path, None, format!("cannot read: {e}")))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| bad_at(path, Some(e.line()), format!("not valid JSON: {e}")))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let items = match value {
            Value::Array(items) => items,
            Value::Object(_) => vec![value],
            _ => {
                return Err(bad_at(
                    path,
                    Some(1),
                    format!("expected a trajectory object or an array of them ({FIELDS_HINT})"),
                ));
            }
        };
        let many = items.len() > 1;
        for (index, item) in items.into_iter().enumerate() {
            if !item.is_object() {
                return Err(bad_at(
                    path,
                    None,
                    format!(
                        "item {} is not a trajectory object",
                        index.saturating_add(1)
                    ),
                ));
            }
            let mut t: Trajectory = serde_json::from_value(item).map_err(|e| {
                bad_at(path, None, format!("item {}: {e}", index.saturating_add(1)))
            })?;
            if t.id.trim().is_empty() {
                t.id = if many {
                    format!("{stem}#{}", index.saturating_add(1))
                } else {
                    stem.clone()
                };
            }
            all.push(t);
        }
    }
    Ok(split(all))
}

fn split(all: Vec<Trajectory>) -> Loaded {
    let total = all.len();
    let failures: Vec<Trajectory> = all.into_iter().filter(Trajectory::is_failure).collect();
    Loaded {
        passed: total.saturating_sub(failures.len()),
        failures,
    }
}

/// Words that mark a failure in free text (seed 004's detection rules: an
/// error mark or word, the user correcting the agent or asking to start again).
const FAILURE_WORDS: [&str; 8] = [
    "❌", "失败", "错误", "不是", "重来", "不对", "错了", "failed",
];

/// Reads the `## Outcomes` sections of a SESSION-STATE.md: `- key: value`
/// bullets (`hard_success`, `soft_score`, `fail_reason`, `task_description`,
/// and any others), one trajectory per section.
pub(crate) fn load_session_state(path: &Path) -> anyhow::Result<Loaded> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_at(path, None, format!("cannot read: {e}")))?;
    // Each section: its heading line and its `(line, key, value)` bullets.
    type Bullet = (usize, String, String);
    let mut sections: Vec<(usize, Vec<Bullet>)> = Vec::new();
    let mut inside = false;
    for (index, line) in text.lines().enumerate() {
        let number = index.saturating_add(1);
        let trimmed = line.trim();
        if let Some(title) = trimmed.strip_prefix("## ") {
            inside = title.trim().to_lowercase().starts_with("outcomes");
            if inside {
                sections.push((number, Vec::new()));
            }
            continue;
        }
        if trimmed.starts_with('#') && !trimmed.starts_with("###") {
            inside = false;
            continue;
        }
        if !inside {
            continue;
        }
        let Some(bullet) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
        else {
            continue;
        };
        let Some((key, value)) = bullet.split_once(':') else {
            continue;
        };
        if let Some((_, fields)) = sections.last_mut() {
            fields.push((number, key.trim().to_owned(), unquote(value.trim())));
        }
    }
    if sections.is_empty() {
        return Err(bad_at(
            path,
            None,
            "no `## Outcomes` section: expected `- hard_success: true|false`, `- soft_score: \
             0.0-1.0`, `- fail_reason: \"...\"`, `- task_description: \"...\"` bullets",
        ));
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut all = Vec::new();
    for (heading_line, fields) in sections {
        let mut t = Trajectory {
            id: format!("{stem}:{heading_line}"),
            task_description: String::new(),
            question: String::new(),
            fail_reason: String::new(),
            predicted_answer: String::new(),
            reference_text: String::new(),
            hard: None,
            soft: None,
            feedback: String::new(),
            extra: JsonMap::new(),
        };
        let mut flagged = false;
        for (line, key, value) in fields {
            match key.as_str() {
                "hard_success" | "hard" => {
                    let passed = match value.to_lowercase().as_str() {
                        "true" | "1" | "1.0" | "yes" => true,
                        "false" | "0" | "0.0" | "no" => false,
                        _ => {
                            return Err(bad_at(
                                path,
                                Some(line),
                                format!("{key} must be true or false, not {value:?}"),
                            ));
                        }
                    };
                    t.hard = Some(if passed { 1.0 } else { 0.0 });
                }
                "soft_score" | "soft" => {
                    let score = value
                        .parse::<f64>()
                        .ok()
                        .filter(|s| (0.0..=1.0).contains(s))
                        .ok_or_else(|| {
                            bad_at(
                                path,
                                Some(line),
                                format!("{key} must be a number from 0 to 1, not {value:?}"),
                            )
                        })?;
                    t.soft = Some(score);
                }
                "id" => t.id = value,
                "fail_reason" => t.fail_reason = value,
                "task_description" => t.task_description = value,
                "question" | "user_message" => t.question = value,
                "predicted_answer" => t.predicted_answer = value,
                "reference_text" | "reference_answer" => t.reference_text = value,
                "feedback" => t.feedback = value,
                _ => {
                    flagged |= FAILURE_WORDS.iter().any(|w| value.contains(w));
                    t.extra.insert(key, Value::String(value));
                }
            }
        }
        flagged |= [&t.feedback, &t.task_description]
            .iter()
            .any(|v| FAILURE_WORDS.iter().any(|w| v.contains(w)));
        if flagged && t.fail_reason.trim().is_empty() {
            t.fail_reason = "the session state marks this task as failed or corrected".to_owned();
        }
        all.push(t);
    }
    Ok(split(all))
}

fn unquote(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\'', '“'] {
        let close = if q == '“' { '”' } else { q };
        if let Some(inner) = v.strip_prefix(q).and_then(|r| r.strip_suffix(close)) {
            return inner.to_owned();
        }
    }
    v.to_owned()
}

/// The trajectories as the prompts show them, long fields cut visibly.
pub(crate) fn render(trajectories: &[&Trajectory]) -> String {
    const MAX: usize = 1500;
    let cut = |text: &str| -> String {
        let text = text.trim();
        let n = text.chars().count();
        if n > MAX {
            let head: String = text.chars().take(MAX).collect();
            format!("{head} […{} more characters]", n.saturating_sub(MAX))
        } else {
            text.to_owned()
        }
    };
    let mut out = String::new();
    for t in trajectories {
        out.push_str(&format!("### Trajectory `{}`\n", t.id));
        for (label, value) in [
            ("task", &t.task_description),
            ("question", &t.question),
            ("agent answered", &t.predicted_answer),
            ("expected", &t.reference_text),
            ("why it failed", &t.fail_reason),
            ("user feedback", &t.feedback),
        ] {
            if !value.trim().is_empty() {
                out.push_str(&format!("- {label}: {}\n", cut(value)));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_state_outcomes_become_trajectories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SESSION-STATE.md");
        std::fs::write(
            &path,
            "# Session\n\n## Outcomes\n- hard_success: true\n- soft_score: 0.9\n- fail_reason: \"\"\n\
             - task_description: \"write the blueprint\"\n\n## Outcomes\n- hard_success: false\n\
             - soft_score: 0.4\n- fail_reason: \"wrong chip model\"\n- task_description: \"spec\"\n\n\
             ## Outcomes\n- status: ❌ tool call failed\n",
        )
        .unwrap();
        let loaded = load_session_state(&path).unwrap();
        assert_eq!(loaded.passed, 1);
        assert_eq!(loaded.failures.len(), 2);
        assert_eq!(loaded.failures[0].fail_reason, "wrong chip model");
        assert_eq!(loaded.failures[0].id, "SESSION-STATE:9");
        assert!(loaded.failures[1].fail_reason.contains("failed"));
    }

    #[test]
    fn session_state_bad_values_name_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("S.md");
        std::fs::write(&path, "## Outcomes\n- hard_success: maybe\n").unwrap();
        let err = load_session_state(&path).unwrap_err().to_string();
        assert!(
            err.ends_with("S.md:2: hard_success must be true or false, not \"maybe\""),
            "{err}"
        );
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(load_session_state(&path).is_err());
    }

    #[test]
    fn json_folder_keeps_failures_and_names_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            r#"[{"id": "t1", "fail_reason": "x", "extra_field": 3}, {"hard": 1.0}]"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("b.json"), r#"{"question": "q"}"#).unwrap();
        let loaded = load_dir(dir.path()).unwrap();
        let ids: Vec<&str> = loaded.failures.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["t1", "b"]);
        assert_eq!(loaded.passed, 1);
        assert_eq!(loaded.failures[0].extra["extra_field"], 3);
        std::fs::write(dir.path().join("c.json"), "{\n  \"id\": \"x\",\n  oops\n}").unwrap();
        let err = load_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("c.json:3: not valid JSON"), "{err}");
    }
}
