//! Reading the inputs of a diagnosis: a question set (a JSON array of
//! questions, or one question per line, JSON lines) and the source trees of
//! the missed-nodes judge. Every problem names the file and the line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use evolution_types::GeneratedQuestion;

use crate::error::{bad_at, line_of};

/// The source trees of a JSON file: an object, source id → tree.
pub(crate) fn read_tree(path: &Path) -> anyhow::Result<BTreeMap<String, serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_at(path, None, format!("cannot read the tree data: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        bad_at(
            path,
            Some(e.line()),
            format!("not a JSON object of source id → tree: {e}"),
        )
    })
}

/// The questions of `path`, in file order. Ids must be present, non-empty and unique.
pub(crate) fn load_questions(path: &Path) -> anyhow::Result<Vec<GeneratedQuestion>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_at(path, None, format!("cannot read the question set: {e}")))?;
    let questions =
        parse_questions(&text).map_err(|(line, problem)| bad_at(path, line, problem))?;
    if questions.is_empty() {
        return Err(bad_at(path, None, "the question set is empty"));
    }
    Ok(questions)
}

/// Parses a question set; an error is the 1-based line (when known) and the problem.
fn parse_questions(text: &str) -> Result<Vec<GeneratedQuestion>, (Option<usize>, String)> {
    let trimmed = text.trim_start();
    let mut questions = Vec::new();
    let mut lines = Vec::new();
    if trimmed.starts_with('[') {
        let values: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|e| {
            (
                Some(e.line()),
                format!("not a JSON array of questions: {e}"),
            )
        })?;
        // Element i starts at the line of its `"question_id"`, when findable.
        let mut from = 0usize;
        for value in values {
            let id = value
                .get("question_id")
                .and_then(|v| v.as_str())
                .unwrap_or("");
            let needle = format!("\"{id}\"");
            let line = text
                .get(from..)
                .and_then(|rest| rest.find(&needle))
                .map(|pos| {
                    from = from.saturating_add(pos).saturating_add(needle.len());
                    line_of(text, from)
                });
            let q: GeneratedQuestion = serde_json::from_value(value)
                .map_err(|e| (line, format!("not a question: {e}")))?;
            questions.push(q);
            lines.push(line);
        }
    } else {
        for (index, line) in text.lines().enumerate() {
            let number = index.saturating_add(1);
            if line.trim().is_empty() {
                continue;
            }
            let q: GeneratedQuestion = serde_json::from_str(line)
                .map_err(|e| (Some(number), format!("not a question: {e}")))?;
            questions.push(q);
            lines.push(Some(number));
        }
    }
    let mut seen = BTreeSet::new();
    for (q, line) in questions.iter().zip(&lines) {
        if q.question_id.trim().is_empty() {
            return Err((*line, "a question has an empty question_id".to_owned()));
        }
        if !seen.insert(q.question_id.as_str()) {
            return Err((
                *line,
                format!("question_id {:?} appears twice", q.question_id),
            ));
        }
    }
    Ok(questions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_and_arrays_parse_alike() {
        let lines = "{\"question_id\":\"a\",\"task_type\":\"t\",\"question\":\"q\",\"answer\":\"x\"}\n\n{\"question_id\":\"b\"}\n";
        let array = "[\n {\"question_id\":\"a\",\"task_type\":\"t\",\"question\":\"q\",\"answer\":\"x\"},\n {\"question_id\":\"b\"}\n]";
        let a = parse_questions(lines).unwrap();
        let b = parse_questions(array).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].answer, "x");
    }

    #[test]
    fn problems_name_the_line() {
        let err = parse_questions("{\"question_id\":\"a\"}\nnot json\n").unwrap_err();
        assert_eq!(err.0, Some(2));
        let err =
            parse_questions("{\"question_id\":\"a\"}\n{\"question_id\":\"a\"}\n").unwrap_err();
        assert_eq!(err, (Some(2), "question_id \"a\" appears twice".to_owned()));
        let err =
            parse_questions("[\n{\"question_id\":\"a\"},\n{\"question_id\":\"\"}\n]").unwrap_err();
        assert_eq!(err.0, Some(3));
        let err = parse_questions("{\"task_type\":\"t\"}").unwrap_err();
        assert_eq!(err.0, Some(1));
    }
}
