//! What a host's event stream becomes: trace steps and one result, every text from the host
//! capped (it is untrusted: the model and the tools it ran wrote it).

use serde_json::{Map, Value, json};

/// Longest text kept of one field (a tool's output, a thought, an error).
pub(crate) const MAX_FIELD_CHARS: usize = 20_000;

/// Longest prediction kept.
pub(crate) const MAX_PREDICTION_CHARS: usize = 100_000;

/// Most steps reported for one question (the protocol's default limit is 1000).
pub(crate) const MAX_STEPS: usize = 500;

/// A host's event stream, read one event at a time.
pub(crate) trait HostStream {
    /// Reads one event.
    fn event(&mut self, event: &Value);
    /// What the run came to, once the host exited (`exit` says how).
    fn finish(self, exit: &str) -> Outcome;
}

/// One tool call of the host.
#[derive(Debug, Default)]
pub(crate) struct Step {
    /// The host's id of the call (pairs the call with its result).
    pub(crate) id: String,
    /// The host's name of the tool.
    pub(crate) tool_name: String,
    /// The call's arguments.
    pub(crate) tool_input: Value,
    /// What the tool returned, or its error text.
    pub(crate) tool_output: String,
    /// Whether the host reported the call as failed.
    pub(crate) is_error: bool,
    /// Whether a result arrived for the call.
    pub(crate) finished: bool,
    /// The model's text before the call.
    pub(crate) thought: String,
}

/// What a host's run of one question came to.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The tool calls, in the order they were made.
    pub(crate) steps: Vec<Step>,
    /// The final answer, when the host gave one.
    pub(crate) prediction: Option<String>,
    /// The host's error, when it reported one (or ended without an answer).
    pub(crate) error: Option<String>,
    /// Extra result fields: token usage, cost, turns.
    pub(crate) extra: Map<String, Value>,
    /// Steps left out past [`MAX_STEPS`].
    pub(crate) dropped_steps: usize,
}

impl Outcome {
    /// Adds a call (or replaces the one with the same id, as a finished call's record does).
    pub(crate) fn record(&mut self, step: Step) {
        if !step.id.is_empty()
            && let Some(known) = self.steps.iter_mut().find(|s| s.id == step.id)
        {
            *known = step;
            return;
        }
        if self.steps.len() >= MAX_STEPS {
            self.dropped_steps += 1;
            return;
        }
        self.steps.push(step);
    }

    /// The call with `id`.
    pub(crate) fn step_mut(&mut self, id: &str) -> Option<&mut Step> {
        self.steps.iter_mut().find(|s| s.id == id)
    }

    /// The protocol lines: a step line per call, then the result.
    pub(crate) fn lines(self, question_id: &str, host: &str) -> Vec<Value> {
        let mut lines = Vec::with_capacity(self.steps.len() + 1);
        for (index, step) in self.steps.into_iter().enumerate() {
            let mut line = json!({
                "type": "step",
                "question_id": question_id,
                "step": index,
                "tool_name": cap(&step.tool_name, 200),
                "tool_input": cap_value(step.tool_input),
                "tool_output": cap(&step.tool_output, MAX_FIELD_CHARS),
            });
            if let Some(fields) = line.as_object_mut() {
                if !step.thought.trim().is_empty() {
                    fields.insert("thought".into(), cap(&step.thought, MAX_FIELD_CHARS).into());
                }
                if step.is_error {
                    fields.insert("is_error".into(), true.into());
                }
                if !step.finished {
                    fields.insert("unfinished".into(), true.into());
                }
            }
            lines.push(line);
        }
        let mut result = Map::new();
        result.insert("type".into(), "result".into());
        result.insert("question_id".into(), question_id.into());
        result.insert("host".into(), host.into());
        match (self.error, self.prediction) {
            (Some(error), prediction) => {
                result.insert("error".into(), cap(&error, MAX_FIELD_CHARS).into());
                result.insert("stop_reason".into(), "error".into());
                if let Some(prediction) = prediction {
                    result.insert(
                        "prediction".into(),
                        cap(&prediction, MAX_PREDICTION_CHARS).into(),
                    );
                }
            }
            (None, Some(prediction)) => {
                result.insert(
                    "prediction".into(),
                    cap(&prediction, MAX_PREDICTION_CHARS).into(),
                );
            }
            (None, None) => {
                result.insert("error".into(), "the host gave no answer".into());
                result.insert("stop_reason".into(), "error".into());
            }
        }
        if self.dropped_steps > 0 {
            result.insert("steps_dropped".into(), self.dropped_steps.into());
        }
        for (key, value) in self.extra {
            result.entry(key).or_insert(value);
        }
        lines.push(Value::Object(result));
        lines
    }
}

/// `text` cut to `max` characters (a note says how many were left out).
pub(crate) fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(max).collect();
    kept.push_str(&format!("… [{} more characters]", total - max));
    kept
}

/// A tool's arguments, kept when their JSON is short enough, else their JSON text cut.
pub(crate) fn cap_value(value: Value) -> Value {
    let text = value.to_string();
    if text.chars().count() <= MAX_FIELD_CHARS {
        value
    } else {
        Value::String(cap(&text, MAX_FIELD_CHARS))
    }
}

/// A tool result's content as text: a string, or the text blocks of a list, or its JSON.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::Null => String::new(),
        Value::String(text) => cap(text, MAX_FIELD_CHARS),
        Value::Array(blocks) => {
            let mut out = String::new();
            for block in blocks {
                if out.chars().count() > MAX_FIELD_CHARS {
                    break;
                }
                match block.get("text").and_then(Value::as_str) {
                    Some(text) => {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(&cap(text, MAX_FIELD_CHARS));
                    }
                    None => {
                        let kind = block.get("type").and_then(Value::as_str).unwrap_or("block");
                        out.push_str(&format!("[{}]", cap(kind, 40)));
                    }
                }
            }
            cap(&out, MAX_FIELD_CHARS)
        }
        other => cap(&other.to_string(), MAX_FIELD_CHARS),
    }
}

/// Copies the numbers among `keys` of `from` into `extra` under `prefix` + key.
pub(crate) fn copy_numbers(
    from: &Value,
    keys: &[&str],
    prefix: &str,
    extra: &mut Map<String, Value>,
) {
    for key in keys {
        if let Some(number) = from.get(*key).filter(|v| v.is_number()) {
            extra.insert(format!("{prefix}{key}"), number.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_and_say_so() {
        assert_eq!(cap("abc", 5), "abc");
        assert_eq!(cap("abcdef", 2), "ab… [4 more characters]");
        let big = Value::String("x".repeat(MAX_FIELD_CHARS * 2));
        assert!(
            cap_value(big)
                .as_str()
                .is_some_and(|s| s.ends_with("more characters]"))
        );
    }

    #[test]
    fn an_outcome_without_an_answer_is_an_error() {
        let lines = Outcome::default().lines("q1", "codex");
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["stop_reason"], "error");
        assert_eq!(lines[0]["question_id"], "q1");
    }
}
