//! Answer checks: a question may carry a `check` that scores a prediction instead of an exact
//! match with its `answer`, so that a task with many right answers (a mined, recurring
//! request) can still be replayed behind the gate.
//!
//! The kinds, as written in a question set:
//!
//! - `{"kind":"contains","value":"42"}`: the prediction contains the value, ignoring case;
//! - `{"kind":"not_contains","value":"--force"}`: the prediction does not contain the value,
//!   ignoring case (what a user said an answer must not do);
//! - `{"kind":"regex","pattern":"^ok\\b"}`: the pattern matches somewhere in the prediction
//!   (Rust `regex` syntax; a pattern that does not compile is refused when the set is read);
//! - `{"kind":"json_field","path":"result.count","equals":3}`: the prediction is JSON and the
//!   value at the dotted path (array positions as numbers) equals `equals`;
//! - `{"kind":"exact","value":"42","ignore_case":false}`: the whole prediction, trimmed,
//!   equals the value (trimmed too); `ignore_case` (default `false`) compares in lower case;
//! - `{"kind":"section_present","heading":"Summary"}`: the prediction has a Markdown heading
//!   with that title (see below);
//! - `{"kind":"section_contains","heading":"Summary","value":"42"}`: the section under such a
//!   heading contains the value, ignoring case;
//! - `{"kind":"min_chars","chars":200}` / `{"kind":"max_chars","chars":1200}`: the trimmed
//!   prediction has at least / at most that many characters;
//! - `{"kind":"no_refusal"}`: the prediction does not open with a refusal
//!   ([`REFUSAL_OPENINGS`]);
//! - `{"kind":"tool_called","tool":"lookup_order"}`: a step of the agent's trace called that
//!   tool (its `tool_name`, compared exactly);
//! - `{"kind":"all_of","checks":[…]}`: every check of the list passes (not nested, at most one
//!   rubric), so a question can carry a format check and a content check;
//! - `{"kind":"rubric","text":"…"}`: a rubric for a judge. It can be read and written, but it
//!   scores nothing here: [`AnswerCheck::passes`] returns `None`. A caller with an LLM judges
//!   it (`skill-evolve run` asks `evolution_diagnose::rubric`'s judge after the agent answers).
//!
//! A section is found by an ATX heading (`#` to `######`, then a space) outside fenced code;
//! titles are compared ignoring case, surrounding `*`/`_` and a trailing colon, and a section
//! runs to the next heading of the same or a higher level.
//!
//! Every check is pure: it reads the prediction and the trace it is given, nothing else.

mod markdown;
#[cfg(test)]
mod tests;

use evolution_types::{GeneratedQuestion, TraceStep};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key of a question that holds its check.
pub const CHECK_KEY: &str = "check";

/// Largest compiled size of a check's regular expression, in bytes.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// How an answer that refuses the task opens: `no_refusal` fails an answer that starts with
/// one of these (ignoring case, leading spaces, quote and emphasis marks; `’` reads as `'`),
/// followed by the answer's end or a character that is not a letter or digit.
pub const REFUSAL_OPENINGS: [&str; 17] = [
    "i can't",
    "i cannot",
    "i can not",
    "i won't",
    "i will not",
    "i'm sorry",
    "i am sorry",
    "sorry",
    "i apologize",
    "i'm unable",
    "i am unable",
    "i'm not able",
    "i am not able",
    "i must decline",
    "unfortunately, i can't",
    "unfortunately, i cannot",
    "as an ai",
];

/// The kinds of check, as a question set names them.
const KINDS: &str = "contains, not_contains, regex, json_field, exact, section_present, section_contains, \
                     min_chars, max_chars, no_refusal, tool_called, all_of or rubric";

/// A check as written in a question set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum CheckSpec {
    Contains {
        value: String,
    },
    NotContains {
        value: String,
    },
    Regex {
        pattern: String,
    },
    JsonField {
        path: String,
        equals: Value,
    },
    Rubric {
        text: String,
    },
    Exact {
        value: String,
        #[serde(default)]
        ignore_case: bool,
    },
    SectionPresent {
        heading: String,
    },
    SectionContains {
        heading: String,
        value: String,
    },
    MinChars {
        chars: usize,
    },
    MaxChars {
        chars: usize,
    },
    NoRefusal {},
    ToolCalled {
        tool: String,
    },
    AllOf {
        checks: Vec<CheckSpec>,
    },
}

/// A question's check, ready to score.
#[derive(Debug, Clone)]
pub enum AnswerCheck {
    /// The prediction contains this text (compared in lower case).
    Contains(String),
    /// The prediction does not contain this text (compared in lower case).
    NotContains(String),
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
    /// The trimmed prediction equals `value` (trimmed).
    Exact {
        /// The expected answer, trimmed (in lower case when `ignore_case`).
        value: String,
        /// Compare in lower case.
        ignore_case: bool,
    },
    /// The prediction has a Markdown heading with this title (normalized, see the module).
    SectionPresent(String),
    /// A section of the prediction under this heading contains `value`, ignoring case.
    SectionContains {
        /// The heading's title, normalized.
        heading: String,
        /// The text looked for, in lower case.
        value: String,
    },
    /// The trimmed prediction has at least this many characters.
    MinChars(usize),
    /// The trimmed prediction has at most this many characters.
    MaxChars(usize),
    /// The prediction does not open with one of the [`REFUSAL_OPENINGS`].
    NoRefusal,
    /// A step of the trace called this tool.
    ToolCalled(String),
    /// Every check passes (none of them an `AllOf`; at most one a rubric).
    AllOf(Vec<AnswerCheck>),
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
    /// [`CheckError`] when the check is not one of the kinds or misses a field; has an empty
    /// `contains`, `exact`, `section_contains` value, heading, `tool_called` tool or
    /// `json_field` path; a heading written with its `#`s; a character bound of 0; a pattern
    /// that does not compile; or is an `all_of` that is empty, nested, holds more than one
    /// rubric, or bounds the length so that no answer passes.
    pub fn of(question: &GeneratedQuestion) -> Result<Option<AnswerCheck>, CheckError> {
        let Some(raw) = question.extra.get(CHECK_KEY) else {
            return Ok(None);
        };
        let bad = |problem: String| CheckError {
            question_id: question.question_id.clone(),
            problem,
        };
        let spec: CheckSpec = serde_json::from_value(raw.clone())
            .map_err(|e| bad(format!("{e} (expected kind {KINDS})")))?;
        compile(spec, false).map(Some).map_err(bad)
    }

    /// Whether the answer `prediction`, reached by the trace `steps`, passes; `None` when
    /// only a rubric is left to decide (a rubric alone, or an `all_of` whose other checks all
    /// pass), which needs a judge.
    pub fn passes(&self, prediction: &str, steps: &[TraceStep]) -> Option<bool> {
        match self {
            AnswerCheck::Contains(value) => Some(prediction.to_lowercase().contains(value)),
            AnswerCheck::NotContains(value) => Some(!prediction.to_lowercase().contains(value)),
            AnswerCheck::Regex(regex) => Some(regex.is_match(prediction)),
            AnswerCheck::JsonField { path, equals } => {
                let Ok(value) = serde_json::from_str::<Value>(prediction.trim()) else {
                    return Some(false);
                };
                Some(field(&value, path) == Some(equals))
            }
            AnswerCheck::Rubric(_) => None,
            AnswerCheck::Exact { value, ignore_case } => {
                let answer = prediction.trim();
                Some(if *ignore_case {
                    answer.to_lowercase() == *value
                } else {
                    answer == value
                })
            }
            AnswerCheck::SectionPresent(heading) => {
                Some(!markdown::sections(prediction, heading).is_empty())
            }
            AnswerCheck::SectionContains { heading, value } => Some(
                markdown::sections(prediction, heading)
                    .iter()
                    .any(|body| body.to_lowercase().contains(value)),
            ),
            AnswerCheck::MinChars(min) => Some(prediction.trim().chars().count() >= *min),
            AnswerCheck::MaxChars(max) => Some(prediction.trim().chars().nth(*max).is_none()),
            AnswerCheck::NoRefusal => Some(!is_refusal(prediction)),
            AnswerCheck::ToolCalled(tool) => Some(steps.iter().any(|s| s.tool_name == *tool)),
            AnswerCheck::AllOf(checks) => {
                let mut judged = Some(true);
                for check in checks {
                    match check.passes(prediction, steps) {
                        Some(false) => return Some(false),
                        None => judged = None,
                        Some(true) => {}
                    }
                }
                judged
            }
        }
    }

    /// The check in words, as the reference answer diagnosis reads when a question has no
    /// `answer` (for example `an answer containing "42"`).
    pub fn describe(&self) -> String {
        match self {
            AnswerCheck::Contains(value) => format!("an answer containing {value:?}"),
            AnswerCheck::NotContains(value) => format!("an answer not containing {value:?}"),
            AnswerCheck::Regex(regex) => {
                format!("an answer matching the pattern {:?}", regex.as_str())
            }
            AnswerCheck::JsonField { path, equals } => {
                format!("a JSON answer whose {} is {equals}", path.join("."))
            }
            AnswerCheck::Rubric(text) => format!("an answer that meets this rubric: {text}"),
            AnswerCheck::Exact { value, ignore_case } => format!(
                "exactly the answer {value:?}{}",
                if *ignore_case { ", ignoring case" } else { "" }
            ),
            AnswerCheck::SectionPresent(heading) => {
                format!("an answer with a section headed {heading:?}")
            }
            AnswerCheck::SectionContains { heading, value } => {
                format!("an answer whose section headed {heading:?} contains {value:?}")
            }
            AnswerCheck::MinChars(min) => format!("an answer of at least {min} characters"),
            AnswerCheck::MaxChars(max) => format!("an answer of at most {max} characters"),
            AnswerCheck::NoRefusal => "an answer that does not refuse the task".to_owned(),
            AnswerCheck::ToolCalled(tool) => {
                format!("an answer reached by calling the tool {tool:?}")
            }
            AnswerCheck::AllOf(checks) => checks
                .iter()
                .map(AnswerCheck::describe)
                .collect::<Vec<_>>()
                .join("; and "),
        }
    }

    /// True for a rubric alone.
    pub fn is_rubric(&self) -> bool {
        matches!(self, AnswerCheck::Rubric(_))
    }

    /// The rubric a judge must decide: the check's own, or that of one of its `all_of`.
    pub fn rubric(&self) -> Option<&str> {
        match self {
            AnswerCheck::Rubric(text) => Some(text),
            AnswerCheck::AllOf(checks) => checks.iter().find_map(AnswerCheck::rubric),
            _ => None,
        }
    }

    /// True when the check looks only at the answer's form or the agent's tool calls
    /// (`section_present`, `min_chars`, `max_chars`, `no_refusal`, `tool_called`, or an
    /// `all_of` of only these): a skill can teach an agent to pass it without a right answer.
    pub fn is_form_only(&self) -> bool {
        match self {
            AnswerCheck::SectionPresent(_)
            | AnswerCheck::MinChars(_)
            | AnswerCheck::MaxChars(_)
            | AnswerCheck::NoRefusal
            | AnswerCheck::ToolCalled(_) => true,
            AnswerCheck::AllOf(checks) => checks.iter().all(AnswerCheck::is_form_only),
            AnswerCheck::Contains(_)
            | AnswerCheck::NotContains(_)
            | AnswerCheck::Regex(_)
            | AnswerCheck::JsonField { .. }
            | AnswerCheck::Rubric(_)
            | AnswerCheck::Exact { .. }
            | AnswerCheck::SectionContains { .. } => false,
        }
    }
}

/// `spec` made ready to score (`nested` inside an `all_of`), or what is wrong with it.
fn compile(spec: CheckSpec, nested: bool) -> Result<AnswerCheck, String> {
    let non_empty = |text: &str, what: &str| {
        if text.trim().is_empty() {
            Err(format!("{what} must not be empty"))
        } else {
            Ok(())
        }
    };
    let heading = |text: &str| {
        non_empty(text, "a section check's heading")?;
        if text.trim_start().starts_with('#') {
            return Err(format!(
                "write the heading's title without its #s (not {text:?})"
            ));
        }
        Ok(markdown::normalize_title(text))
    };
    let bound = |chars: usize, kind: &str| {
        if chars == 0 {
            Err(format!("a {kind} check needs chars of at least 1"))
        } else {
            Ok(chars)
        }
    };
    Ok(match spec {
        CheckSpec::Contains { value } => {
            non_empty(&value, "a contains check's value")?;
            AnswerCheck::Contains(value.to_lowercase())
        }
        CheckSpec::NotContains { value } => {
            non_empty(&value, "a not_contains check's value")?;
            AnswerCheck::NotContains(value.to_lowercase())
        }
        CheckSpec::Regex { pattern } => regex::RegexBuilder::new(&pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map(AnswerCheck::Regex)
            .map_err(|e| {
                let first = e.to_string();
                let first = first.lines().last().unwrap_or_default().trim().to_owned();
                format!("pattern {pattern:?} does not compile: {first}")
            })?,
        CheckSpec::JsonField { path, equals } => {
            non_empty(&path, "a json_field check's path")?;
            AnswerCheck::JsonField {
                path: path.split('.').map(str::to_owned).collect(),
                equals,
            }
        }
        CheckSpec::Rubric { text } => AnswerCheck::Rubric(text),
        CheckSpec::Exact { value, ignore_case } => {
            non_empty(&value, "an exact check's value")?;
            let value = value.trim();
            AnswerCheck::Exact {
                value: if ignore_case {
                    value.to_lowercase()
                } else {
                    value.to_owned()
                },
                ignore_case,
            }
        }
        CheckSpec::SectionPresent { heading: title } => {
            AnswerCheck::SectionPresent(heading(&title)?)
        }
        CheckSpec::SectionContains {
            heading: title,
            value,
        } => {
            let heading = heading(&title)?;
            non_empty(&value, "a section_contains check's value")?;
            AnswerCheck::SectionContains {
                heading,
                value: value.to_lowercase(),
            }
        }
        CheckSpec::MinChars { chars } => AnswerCheck::MinChars(bound(chars, "min_chars")?),
        CheckSpec::MaxChars { chars } => AnswerCheck::MaxChars(bound(chars, "max_chars")?),
        CheckSpec::NoRefusal {} => AnswerCheck::NoRefusal,
        CheckSpec::ToolCalled { tool } => {
            non_empty(&tool, "a tool_called check's tool")?;
            AnswerCheck::ToolCalled(tool)
        }
        CheckSpec::AllOf { .. } if nested => {
            return Err(
                "an all_of inside an all_of adds nothing: list its checks in the outer one"
                    .to_owned(),
            );
        }
        CheckSpec::AllOf { checks } => all_of(checks)?,
    })
}

/// The checks of an `all_of`, each compiled and the list checked as a whole.
fn all_of(specs: Vec<CheckSpec>) -> Result<AnswerCheck, String> {
    if specs.is_empty() {
        return Err("an all_of needs at least one check".to_owned());
    }
    let mut checks = Vec::with_capacity(specs.len());
    for (index, spec) in specs.into_iter().enumerate() {
        let check = compile(spec, true).map_err(|problem| {
            format!("check {} of the all_of: {problem}", index.saturating_add(1))
        })?;
        checks.push(check);
    }
    if checks.iter().filter(|c| c.is_rubric()).count() > 1 {
        return Err("an all_of holds at most one rubric (a judge decides one)".to_owned());
    }
    let min = checks.iter().find_map(|c| match c {
        AnswerCheck::MinChars(n) => Some(*n),
        _ => None,
    });
    let max = checks.iter().find_map(|c| match c {
        AnswerCheck::MaxChars(n) => Some(*n),
        _ => None,
    });
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        return Err(format!(
            "min_chars {min} is above max_chars {max}: no answer passes"
        ));
    }
    Ok(AnswerCheck::AllOf(checks))
}

/// True when `prediction` opens with one of the [`REFUSAL_OPENINGS`].
fn is_refusal(prediction: &str) -> bool {
    let opening: String = prediction
        .trim_start_matches(|c: char| c.is_whitespace() || "*_>\"'`".contains(c))
        .chars()
        .take(64)
        .map(|c| if c == '\u{2019}' { '\'' } else { c })
        .collect::<String>()
        .to_lowercase();
    REFUSAL_OPENINGS.iter().any(|refusal| {
        opening
            .strip_prefix(refusal)
            .is_some_and(|rest| !rest.starts_with(char::is_alphanumeric))
    })
}

/// The value at `path` in `value`: object keys, or array positions written as numbers.
fn field<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |at, segment| match at {
        Value::Object(map) => map.get(segment),
        Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}
