//! Answer checks: a question may carry a `check` that scores a prediction instead of an exact
//! match with its `answer`, so that a task with many right answers (a mined, recurring
//! request) can still be replayed behind the gate.
//!
//! The kinds, as written in a question set:
//!
//! - `{"kind":"contains","value":"42"}`: the prediction contains the value, ignoring case;
//! - `{"kind":"regex","pattern":"^ok\\b"}`: the pattern matches somewhere in the prediction
//!   (Rust `regex` syntax; a pattern that does not compile is refused when the set is read);
//! - `{"kind":"json_field","path":"result.count","equals":3}`: the prediction is JSON and the
//!   value at the dotted path (array positions as numbers) equals `equals`;
//! - `{"kind":"rubric","text":"…"}`: a rubric for a judge. It can be read and written, but it
//!   scores nothing here: [`AnswerCheck::passes`] returns `None`. A caller with an LLM judges
//!   it (`skill-evolve run` asks `evolution_diagnose::rubric`'s judge after the agent answers).

use evolution_types::GeneratedQuestion;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key of a question that holds its check.
pub const CHECK_KEY: &str = "check";

/// Largest compiled size of a check's regular expression, in bytes.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A check as written in a question set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum CheckSpec {
    Contains { value: String },
    Regex { pattern: String },
    JsonField { path: String, equals: Value },
    Rubric { text: String },
}

/// A question's check, ready to score.
#[derive(Debug, Clone)]
pub enum AnswerCheck {
    /// The prediction contains this text (compared in lower case).
    Contains(String),
    /// The pattern matches the prediction.
    Regex(regex::Regex),
    /// The prediction is JSON whose value at `path` equals `equals`.
    JsonField {
        /// Dotted path segments.
        path: Vec<String>,
        /// The expected value.
        equals: Value,
    },
    /// A rubric for a judge; not scored here.
    Rubric(String),
}

/// Why a question's check is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("question {question_id:?} has a bad check: {problem}")]
pub struct CheckError {
    /// The question.
    pub question_id: String,
    /// What is wrong, in one sentence.
    pub problem: String,
}

impl AnswerCheck {
    /// The check of `question`, `None` when it has none.
    ///
    /// # Errors
    /// [`CheckError`] when the check is not one of the kinds, misses a field, has an empty
    /// `contains` value or `json_field` path, or a pattern that does not compile.
    pub fn of(question: &GeneratedQuestion) -> Result<Option<AnswerCheck>, CheckError> {
        let Some(raw) = question.extra.get(CHECK_KEY) else {
            return Ok(None);
        };
        let bad = |problem: String| CheckError {
            question_id: question.question_id.clone(),
            problem,
        };
        let spec: CheckSpec = serde_json::from_value(raw.clone()).map_err(|e| {
            bad(format!(
                "{e} (expected kind contains, regex, json_field or rubric)"
            ))
        })?;
        Ok(Some(match spec {
            CheckSpec::Contains { value } if value.trim().is_empty() => {
                return Err(bad("a contains check needs a non-empty value".into()));
            }
            CheckSpec::Contains { value } => AnswerCheck::Contains(value.to_lowercase()),
            CheckSpec::Regex { pattern } => regex::RegexBuilder::new(&pattern)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map(AnswerCheck::Regex)
                .map_err(|e| {
                    let first = e.to_string();
                    let first = first.lines().last().unwrap_or_default().trim().to_owned();
                    bad(format!("pattern {pattern:?} does not compile: {first}"))
                })?,
            CheckSpec::JsonField { path, .. } if path.trim().is_empty() => {
                return Err(bad("a json_field check needs a non-empty path".into()));
            }
            CheckSpec::JsonField { path, equals } => AnswerCheck::JsonField {
                path: path.split('.').map(str::to_owned).collect(),
                equals,
            },
            CheckSpec::Rubric { text } => AnswerCheck::Rubric(text),
        }))
    }

    /// Whether `prediction` passes; `None` for a rubric, which needs a judge.
    pub fn passes(&self, prediction: &str) -> Option<bool> {
        match self {
            AnswerCheck::Contains(value) => Some(prediction.to_lowercase().contains(value)),
            AnswerCheck::Regex(regex) => Some(regex.is_match(prediction)),
            AnswerCheck::JsonField { path, equals } => {
                let Ok(value) = serde_json::from_str::<Value>(prediction.trim()) else {
                    return Some(false);
                };
                Some(field(&value, path) == Some(equals))
            }
            AnswerCheck::Rubric(_) => None,
        }
    }

    /// The check in words, as the reference answer diagnosis reads when a question has no
    /// `answer` (for example `an answer containing "42"`).
    pub fn describe(&self) -> String {
        match self {
            AnswerCheck::Contains(value) => format!("an answer containing {value:?}"),
            AnswerCheck::Regex(regex) => {
                format!("an answer matching the pattern {:?}", regex.as_str())
            }
            AnswerCheck::JsonField { path, equals } => {
                format!("a JSON answer whose {} is {equals}", path.join("."))
            }
            AnswerCheck::Rubric(text) => format!("an answer that meets this rubric: {text}"),
        }
    }

    /// True for a rubric.
    pub fn is_rubric(&self) -> bool {
        matches!(self, AnswerCheck::Rubric(_))
    }
}

/// The value at `path` in `value`: object keys, or array positions written as numbers.
fn field<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |at, segment| match at {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(check: Value) -> GeneratedQuestion {
        let mut q = GeneratedQuestion {
            question_id: "q1".into(),
            ..GeneratedQuestion::default()
        };
        q.extra.insert(CHECK_KEY.into(), check);
        q
    }

    fn check(check: Value) -> AnswerCheck {
        AnswerCheck::of(&question(check)).unwrap().unwrap()
    }

    #[test]
    fn contains_ignores_case() {
        let c = check(serde_json::json!({"kind": "contains", "value": "42 Lines"}));
        assert_eq!(c.passes("There are 42 lines."), Some(true));
        assert_eq!(c.passes("There are 41 lines."), Some(false));
        assert_eq!(c.describe(), "an answer containing \"42 lines\"");
    }

    #[test]
    fn regex_matches_anywhere() {
        let c = check(serde_json::json!({"kind": "regex", "pattern": "^total: \\d+$"}));
        assert_eq!(c.passes("total: 17"), Some(true));
        assert_eq!(c.passes("total: many"), Some(false));
    }

    #[test]
    fn json_field_follows_keys_and_positions() {
        let c = check(serde_json::json!({"kind": "json_field", "path": "rows.1.n", "equals": 3}));
        assert_eq!(c.passes(r#"{"rows":[{"n":1},{"n":3}]}"#), Some(true));
        assert_eq!(c.passes(r#"{"rows":[{"n":1},{"n":"3"}]}"#), Some(false));
        assert_eq!(c.passes(r#"{"rows":[]}"#), Some(false));
        assert_eq!(c.passes("not json"), Some(false));
        assert_eq!(c.describe(), "a JSON answer whose rows.1.n is 3");
    }

    #[test]
    fn a_rubric_is_read_but_scores_nothing() {
        let c = check(serde_json::json!({"kind": "rubric", "text": "polite"}));
        assert!(c.is_rubric());
        assert_eq!(c.passes("anything"), None);
    }

    #[test]
    fn bad_checks_are_typed_errors() {
        let err = |v: Value| AnswerCheck::of(&question(v)).unwrap_err().problem;
        assert!(
            err(serde_json::json!({"kind": "regex", "pattern": "("})).contains("does not compile")
        );
        assert!(err(serde_json::json!({"kind": "equals", "value": "x"})).contains("expected kind"));
        assert!(err(serde_json::json!({"kind": "contains"})).contains("value"));
        assert!(err(serde_json::json!({"kind": "contains", "value": " "})).contains("non-empty"));
        assert!(
            err(serde_json::json!({"kind": "json_field", "path": "", "equals": 1}))
                .contains("path")
        );
        assert!(err(serde_json::json!("contains")).contains("expected kind"));
    }

    #[test]
    fn a_question_without_a_check_has_none() {
        assert!(
            AnswerCheck::of(&GeneratedQuestion::default())
                .unwrap()
                .is_none()
        );
    }
}
