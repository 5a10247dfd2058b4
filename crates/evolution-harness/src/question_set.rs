//! Question sets: a JSON array of questions, or one question per line (JSON
//! lines), read into [`GeneratedQuestion`]s in one pass over the text.
//!
//! Every problem names the 1-based line it was found on. For an array, an
//! element's line is the line of its `question_id` value (where a reader
//! looks for it), found by searching only that element's own text, so the
//! time stays linear in the size of the set however many questions it holds.

use std::collections::HashSet;

use evolution_types::GeneratedQuestion;

use crate::check::AnswerCheck;
use serde_json::Value;
use serde_json::value::RawValue;

/// Why a question set could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
pub struct QuestionSetError {
    /// The 1-based line of the problem, when known.
    pub line: Option<usize>,
    /// What is wrong, in one sentence.
    pub problem: String,
}

impl QuestionSetError {
    fn at(line: Option<usize>, problem: impl Into<String>) -> Self {
        QuestionSetError {
            line,
            problem: problem.into(),
        }
    }
}

/// Parses a question set: a JSON array when the text starts with `[`, JSON
/// lines otherwise (blank lines skipped). Ids must be present, non-empty and
/// unique, and a question's `check`, when present, must be usable (see
/// [`AnswerCheck`]: an unknown kind, a missing field or a regular expression that does not
/// compile is refused here, with its line). An empty set is not an error here; the caller
/// decides.
///
/// # Errors
/// [`QuestionSetError`] with the line of the first problem: text that is not
/// JSON, an element that is not a question, an empty or repeated id, a bad check.
pub fn parse_question_set(text: &str) -> Result<Vec<GeneratedQuestion>, QuestionSetError> {
    let (questions, lines) = if text.trim_start().starts_with('[') {
        parse_array(text)?
    } else {
        parse_lines(text)?
    };
    let mut seen = HashSet::with_capacity(questions.len());
    for (q, line) in questions.iter().zip(&lines) {
        if q.question_id.trim().is_empty() {
            return Err(QuestionSetError::at(
                *line,
                "a question has an empty question_id",
            ));
        }
        if !seen.insert(q.question_id.as_str()) {
            return Err(QuestionSetError::at(
                *line,
                format!("question_id {:?} appears twice", q.question_id),
            ));
        }
        AnswerCheck::of(q).map_err(|e| QuestionSetError::at(*line, e.to_string()))?;
    }
    Ok(questions)
}

/// Questions with the line each was found on.
type Located = (Vec<GeneratedQuestion>, Vec<Option<usize>>);

fn parse_lines(text: &str) -> Result<Located, QuestionSetError> {
    let mut questions = Vec::new();
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index.saturating_add(1);
        if line.trim().is_empty() {
            continue;
        }
        let q: GeneratedQuestion = serde_json::from_str(line)
            .map_err(|e| QuestionSetError::at(Some(number), format!("not a question: {e}")))?;
        questions.push(q);
        lines.push(Some(number));
    }
    Ok((questions, lines))
}

fn parse_array(text: &str) -> Result<Located, QuestionSetError> {
    // Borrowed raw elements: each is a slice of `text`, so its offset is known.
    let elements: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| {
        QuestionSetError::at(
            Some(e.line()),
            format!("not a JSON array of questions: {e}"),
        )
    })?;
    let mut questions = Vec::with_capacity(elements.len());
    let mut lines = Vec::with_capacity(elements.len());
    let mut counter = LineCounter::new(text);
    for element in elements {
        let raw = element.get();
        let start = raw.as_ptr().addr().saturating_sub(text.as_ptr().addr());
        let value: Value = serde_json::from_str(raw).map_err(|e| {
            QuestionSetError::at(counter.line_at(start), format!("not a question: {e}"))
        })?;
        let id = value
            .get("question_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        let needle = format!("\"{id}\"");
        let at = raw
            .find(&needle)
            .map_or(start, |pos| start.saturating_add(pos));
        let line = counter.line_at(at);
        let q: GeneratedQuestion = serde_json::from_value(value)
            .map_err(|e| QuestionSetError::at(line, format!("not a question: {e}")))?;
        questions.push(q);
        lines.push(line);
    }
    Ok((questions, lines))
}

/// Line numbers of increasing byte offsets, counting each newline once.
struct LineCounter<'a> {
    text: &'a [u8],
    /// Bytes counted so far.
    counted: usize,
    /// Newlines in them.
    newlines: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> Self {
        LineCounter {
            text: text.as_bytes(),
            counted: 0,
            newlines: 0,
        }
    }

    /// The 1-based line of byte `pos`; offsets must not go backwards (an
    /// earlier one is answered with the line reached so far).
    fn line_at(&mut self, pos: usize) -> Option<usize> {
        let end = pos.min(self.text.len());
        if end > self.counted {
            let fresh = self.text.get(self.counted..end).unwrap_or_default();
            let found = fresh.iter().filter(|&&b| b == b'\n').count();
            self.newlines = self.newlines.saturating_add(found);
            self.counted = end;
        }
        Some(self.newlines.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of_error(text: &str) -> Option<usize> {
        parse_question_set(text)
            .map(|_| None)
            .unwrap_or_else(|e| e.line)
    }

    #[test]
    fn json_lines_and_arrays_parse_alike() {
        let lines = "{\"question_id\":\"a\",\"task_type\":\"t\",\"question\":\"q\",\"answer\":\"x\"}\n\n{\"question_id\":\"b\"}\n";
        let array = "[\n {\"question_id\":\"a\",\"task_type\":\"t\",\"question\":\"q\",\"answer\":\"x\"},\n {\"question_id\":\"b\"}\n]";
        let a = parse_question_set(lines).unwrap();
        let b = parse_question_set(array).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].answer, "x");
    }

    #[test]
    fn problems_name_the_line() {
        assert_eq!(
            line_of_error("{\"question_id\":\"a\"}\nnot json\n"),
            Some(2)
        );
        let err =
            parse_question_set("{\"question_id\":\"a\"}\n{\"question_id\":\"a\"}\n").unwrap_err();
        assert_eq!(
            err,
            QuestionSetError::at(Some(2), "question_id \"a\" appears twice")
        );
        assert_eq!(
            line_of_error("[\n{\"question_id\":\"a\"},\n{\"question_id\":\"\"}\n]"),
            Some(3)
        );
        assert_eq!(line_of_error("{\"task_type\":\"t\"}"), Some(1));
        assert_eq!(
            line_of_error("[\n{\"question_id\":\"a\"},\n{\"x\":1,\n]"),
            Some(4)
        );
    }

    /// A pretty-printed array of many questions: the shape whose line numbers
    /// used to be counted from the start of the text for every element.
    #[test]
    fn array_lines_are_those_of_each_question_id() {
        let n = 300;
        let mut text = String::from("[\n");
        for i in 0..n {
            let comma = if i + 1 < n { "," } else { "" };
            text.push_str(&format!(
                "  {{\n    \"task_type\": \"t\",\n    \"question_id\": \"q{i}\"\n  }}{comma}\n"
            ));
        }
        text.push_str("]\n");
        assert_eq!(parse_question_set(&text).unwrap().len(), n);
        // Element i's id is on line 2 + 4 i + 2; a repeat of q7 as the last id names its line.
        let last = format!("\"q{}\"", n - 1);
        let repeated = text.replacen(&last, "\"q7\"", 1);
        let err = parse_question_set(&repeated).unwrap_err();
        assert_eq!(err.line, Some(2 + 4 * (n - 1) + 2));
        assert_eq!(err.problem, "question_id \"q7\" appears twice");
        // A wrongly typed field names the element's id line too.
        let bad = text.replacen("\"task_type\": \"t\"", "\"task_type\": 5", 1);
        assert_eq!(line_of_error(&bad), Some(4));
    }

    #[test]
    fn a_bad_check_names_its_line() {
        let text = "{\"question_id\":\"a\",\"check\":{\"kind\":\"contains\",\"value\":\"x\"}}\n{\"question_id\":\"b\",\"check\":{\"kind\":\"regex\",\"pattern\":\"[\"}}\n";
        let err = parse_question_set(text).unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(
            err.problem.contains("question \"b\" has a bad check"),
            "{}",
            err.problem
        );
    }

    #[test]
    fn an_id_written_with_escapes_falls_back_to_the_element_line() {
        let text = "[\n{\"question_id\":\"a\"},\n{\"question_id\":\"\\u0061\"}\n]";
        assert_eq!(line_of_error(text), Some(3));
    }
}
