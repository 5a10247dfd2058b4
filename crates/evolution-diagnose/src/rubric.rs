//! The rubric judge: whether an agent's answer meets the rubric a question carries instead of a
//! reference answer (a recurring task mined from real sessions often has no single right text).
//!
//! The judge is one LLM call rendered from the `rubric` template of [`DiagnosePrompts`] (built
//! in, or the caller's override) with four placeholders: `{{question_id}}`, `{{question}}`,
//! `{{rubric}}` and `{{prediction}}`, each cut to a bound of its own so that a runaway answer
//! cannot make the prompt unbounded. The reply must be a JSON object with a JSON boolean
//! `passed` and, optionally, a string `reason`: it is read with the crate's JSON reader
//! ([`crate::json::extract_json_from_response`]), but `"yes"`, `1` or a missing `passed` are
//! not a verdict. An unreadable reply is retried like every judge's ([`call_judge`]) and then
//! returned as [`JudgeError::Unparseable`]: the caller must not score it as a wrong answer.
//!
//! The rubric goes to the judge only; whoever runs the agent keeps it from the agent.

use evolution_types::template::{render_with, truncate_chars};
use evolution_types::{ChatMessage, JsonMap, LlmProvider};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::JudgeError;
use crate::judges::{call_judge, judge_options};
use crate::prompts::DiagnosePrompts;

/// Most characters of the request sent to the judge.
pub const MAX_QUESTION_CHARS: usize = 8_000;
/// Most characters of the rubric sent to the judge.
pub const MAX_RUBRIC_CHARS: usize = 4_000;
/// Most characters of the answer sent to the judge.
pub const MAX_ANSWER_CHARS: usize = 16_000;
/// Most characters of the judge's reason kept.
pub const MAX_REASON_CHARS: usize = 400;
/// Longest question id placed in the prompt, in characters.
const MAX_ID_CHARS: usize = 200;

/// The request tag of the rubric judge's calls (`judge.rubric`).
pub const RUBRIC_TAG: &str = "judge.rubric";

/// One answer to grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RubricCase<'a> {
    /// The question's id (for the judge's context and the logs).
    pub question_id: &'a str,
    /// The request the agent answered.
    pub question: &'a str,
    /// What a passing answer does.
    pub rubric: &'a str,
    /// The agent's answer.
    pub prediction: &'a str,
}

/// The judge's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RubricVerdict {
    /// True when the answer meets the rubric.
    pub passed: bool,
    /// The judge's reason, capped to [`MAX_REASON_CHARS`] (empty when it gave none).
    pub reason: String,
}

/// The rubric judge's prompt for `case`: one user message, every value cut to its bound.
pub fn render_rubric(prompts: &DiagnosePrompts, case: &RubricCase<'_>) -> [ChatMessage; 1] {
    let text = render_with(&prompts.rubric, |name| {
        Some(match name {
            "question_id" => truncate_chars(case.question_id, MAX_ID_CHARS),
            "question" => truncate_chars(case.question, MAX_QUESTION_CHARS),
            "rubric" => truncate_chars(case.rubric, MAX_RUBRIC_CHARS),
            "prediction" => truncate_chars(case.prediction, MAX_ANSWER_CHARS),
            _ => return None,
        })
    });
    [ChatMessage::user(text)]
}

/// Reads a verdict from the judge's reply object: `passed` must be a JSON boolean; `reason`,
/// when present, a string (capped).
///
/// # Errors
/// The problem in words when `passed` is missing or not a boolean, or `reason` is not a string.
pub fn read_rubric_reply(object: &JsonMap) -> Result<RubricVerdict, String> {
    let passed = match object.get("passed") {
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "`passed` must be true or false, not {}",
                truncate_chars(&other.to_string(), 40)
            ));
        }
        None => return Err("reply lacks a boolean `passed`".to_owned()),
    };
    let reason = match object.get("reason") {
        Some(Value::String(s)) => truncate_chars(s.trim(), MAX_REASON_CHARS),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err("`reason` must be a string".to_owned()),
    };
    Ok(RubricVerdict { passed, reason })
}

/// Asks the judge whether `case`'s answer meets its rubric.
///
/// # Errors
/// [`JudgeError::Unparseable`] when every attempt's reply held no verdict (the answer is then
/// unjudged, not wrong); [`JudgeError::Provider`] when the provider failed.
pub async fn judge_rubric(
    llm: &dyn LlmProvider,
    prompts: &DiagnosePrompts,
    case: &RubricCase<'_>,
) -> Result<RubricVerdict, JudgeError> {
    let messages = render_rubric(prompts, case);
    call_judge(llm, &messages, &judge_options("rubric"), read_rubric_reply).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(reply: Value) -> Result<RubricVerdict, String> {
        read_rubric_reply(reply.as_object().unwrap())
    }

    #[test]
    fn only_a_json_boolean_is_a_verdict() {
        let ok = read(serde_json::json!({"passed": true, "reason": " meets it "})).unwrap();
        assert_eq!(
            ok,
            RubricVerdict {
                passed: true,
                reason: "meets it".into()
            }
        );
        assert!(!read(serde_json::json!({"passed": false})).unwrap().passed);
        for bad in [
            serde_json::json!({"passed": "yes"}),
            serde_json::json!({"passed": 1}),
            serde_json::json!({"verdict": true}),
            serde_json::json!({"passed": true, "reason": 3}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn long_values_are_cut_before_they_reach_the_prompt() {
        let answer = "a".repeat(MAX_ANSWER_CHARS + 50);
        let case = RubricCase {
            question_id: "q1",
            question: "list the files",
            rubric: "names every file",
            prediction: &answer,
        };
        let [message] = render_rubric(&DiagnosePrompts::builtin(), &case);
        assert!(message.content.contains("…[50 more chars]"));
        assert!(message.content.contains("names every file"));
        let long_reason = "r".repeat(MAX_REASON_CHARS * 2);
        let verdict = read(serde_json::json!({"passed": true, "reason": long_reason})).unwrap();
        assert!(verdict.reason.chars().count() < MAX_REASON_CHARS + 30);
    }
}
