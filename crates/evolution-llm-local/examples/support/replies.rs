//! Requests under JSON schemas and the checks of their replies, shared by the JSON tests
//! (`tests/it/json.rs`, one request per schema) and `cargo xtask bench local` (every
//! prompt, with figures). Included by both with `#[path]`; not an example itself.

use evolution_types::{ChatMessage, ChatOptions};
use serde_json::{Value, json};

/// The evolve-edits contract: a list of edits to a skill file.
pub(crate) fn evolve_edits_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "minItems": 1,
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"enum": ["append", "insert_after", "replace", "delete"]},
                        "target": {"type": "string", "maxLength": 60},
                        "content": {"type": "string", "maxLength": 160}
                    },
                    "required": ["op", "target", "content"]
                }
            }
        },
        "required": ["edits"]
    })
}

/// Requests for edits to a skill file, each worded differently.
pub(crate) const EDIT_PROMPTS: [&str; 20] = [
    "The skill forgets to mention that dates must be ISO 8601. Propose edits.",
    "Add a rule: always answer in English.",
    "Remove the outdated section about Python 2.",
    "Replace the sentence 'Be verbose.' with 'Be concise.'",
    "The agent keeps calling the search tool twice. Fix the instructions.",
    "Insert a step after '## Steps' telling the agent to read the README first.",
    "The output format section lacks an example. Add one.",
    "Delete the duplicated warning about secrets.",
    "Users complain the summaries are too long. Propose a fix.",
    "Append a checklist for code review at the end of the skill.",
    "The skill should ask for clarification when the request is ambiguous.",
    "Rename the heading 'Misc' to 'Notes'.",
    "Add a note that tests must pass before committing.",
    "The agent ignores timezones. Add guidance.",
    "Make the tone friendlier in the greeting line.",
    "The skill lists a deprecated API endpoint /v1/old. Update it to /v2/new.",
    "Add an instruction to cite sources with links.",
    "Remove the line that says 'never use tables'.",
    "Errors from the build are not reported. Add a reporting step.",
    "Propose one small improvement to a skill that writes commit messages.",
];

/// The messages and options of one edits request.
pub(crate) fn edits_request(prompt: &str) -> ([ChatMessage; 2], ChatOptions) {
    let messages = [
        ChatMessage::system(
            "You improve agent skill files. Reply with JSON: \
             {\"edits\":[{\"op\":...,\"target\":...,\"content\":...}]}.",
        ),
        ChatMessage::user(prompt),
    ];
    let options = ChatOptions::default()
        .with_json_schema(evolve_edits_schema())
        .with_max_tokens(900);
    (messages, options)
}

/// Why `reply` is not an object [`evolve_edits_schema`] admits; `None` when it is.
pub(crate) fn edits_reply_error(reply: &str) -> Option<String> {
    let doc: Value = match serde_json::from_str(reply) {
        Ok(doc) => doc,
        Err(err) => return Some(format!("not JSON ({err})")),
    };
    let Some(obj) = doc.as_object().filter(|o| o.len() == 1) else {
        return Some("not an object with one field".to_owned());
    };
    let Some(edits) = obj.get("edits").and_then(Value::as_array) else {
        return Some("no `edits` array".to_owned());
    };
    if !(1..=2).contains(&edits.len()) {
        return Some(format!("{} edits, not 1 or 2", edits.len()));
    }
    for edit in edits {
        let Some(edit) = edit.as_object().filter(|e| e.len() == 3) else {
            return Some("an edit is not an object of three fields".to_owned());
        };
        let op = edit.get("op").and_then(Value::as_str).unwrap_or_default();
        if !["append", "insert_after", "replace", "delete"].contains(&op) {
            return Some(format!("unknown op {op:?}"));
        }
        let within = |field: &str, max: usize| {
            edit.get(field)
                .and_then(Value::as_str)
                .is_some_and(|text| text.chars().count() <= max)
        };
        if !within("target", 60) || !within("content", 160) {
            return Some("a target or content is missing or too long".to_owned());
        }
    }
    None
}

/// Every reply schema the kernel attaches to its calls: the tag and its schema.
pub(crate) fn kernel_schemas() -> Vec<(&'static str, Value)> {
    evolution_evolve::REPLY_SCHEMA_TAGS
        .iter()
        .chain(evolution_diagnose::REPLY_SCHEMA_TAGS.iter())
        .filter_map(|tag| {
            evolution_evolve::reply_schema(tag)
                .or_else(|| evolution_diagnose::reply_schema(tag))
                .map(|schema| (*tag, schema))
        })
        .collect()
}

/// Situations the kernel asks about, each a skill line and an answer that broke it.
pub(crate) const KERNEL_CASES: [(&str, &str, &str); 2] = [
    (
        "# Dates\\nAlways answer with ISO 8601 dates.",
        "03/04/2024",
        "2024-04-03",
    ),
    (
        "# Units\\nGive distances in kilometres.",
        "about 3 miles",
        "4.8 km",
    ),
];

/// The messages and options of one kernel request under `tag`'s schema.
pub(crate) fn kernel_request(
    tag: &str,
    schema: &Value,
    (skill, answered, expected): (&str, &str, &str),
) -> ([ChatMessage; 1], ChatOptions) {
    let prompt = format!(
        "Task `{tag}`. The skill says: '{skill}' The agent answered '{answered}' where \
         '{expected}' was expected. Reply with one short JSON object for this task."
    );
    let options = ChatOptions::default()
        .with_json_schema(schema.clone())
        .with_tag(tag)
        .with_max_tokens(1024);
    ([ChatMessage::user(prompt)], options)
}

/// Why the kernel cannot read `reply` under `schema` (parsed by its JSON reader, every required
/// field present, edits it understands); `None` when it can.
pub(crate) fn kernel_reply_error(schema: &Value, reply: &str) -> Option<String> {
    let Some(doc) = evolution_evolve::parse_llm_json(reply) else {
        return Some("the kernel's JSON reader refuses it".to_owned());
    };
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !doc.contains_key(name) {
            return Some(format!("`{name}` is missing"));
        }
    }
    for key in ["edits", "extract_edits", "verify_edits"] {
        if let Some(edits) = doc.get(key) {
            let edits: Vec<evolution_types::Edit> = match serde_json::from_value(edits.clone()) {
                Ok(edits) => edits,
                Err(err) => return Some(format!("`{key}` are not edits ({err})")),
            };
            if edits
                .iter()
                .any(|e| matches!(e.op, evolution_types::EditOp::Other(_)))
            {
                return Some(format!("`{key}` has an edit of an unknown kind"));
            }
        }
    }
    None
}
