//! Reading the inputs of a diagnosis: a question set (a JSON array of
//! questions, or one question per line, JSON lines) and the source trees of
//! the missed-nodes judge. Every problem names the file and the line.

use std::collections::BTreeMap;
use std::path::Path;

use evolution_harness::parse_question_set;
use evolution_types::GeneratedQuestion;

use crate::error::bad_at;
use crate::input::{InputKind, read_input_text};

/// The source trees of a JSON file: an object, source id → tree.
pub fn read_tree(path: &Path) -> anyhow::Result<BTreeMap<String, serde_json::Value>> {
    let text = read_input_text(path, InputKind::SourceTrees)?;
    serde_json::from_str(&text).map_err(|e| {
        bad_at(
            path,
            Some(e.line()),
            format!("not a JSON object of source id → tree: {e}"),
        )
    })
}

/// The questions of `path`, in file order. Ids must be present, non-empty and unique.
pub fn load_questions(path: &Path) -> anyhow::Result<Vec<GeneratedQuestion>> {
    let text = read_input_text(path, InputKind::QuestionSet)?;
    let questions = parse_question_set(&text).map_err(|e| bad_at(path, e.line, e.problem))?;
    if questions.is_empty() {
        return Err(bad_at(path, None, "the question set is empty"));
    }
    Ok(questions)
}
