//! JSON Schemas of the replies this crate asks for, keyed by the request tag.
//!
//! Each schema describes a subset of what the tag's reader in [`replies`](crate::replies)
//! accepts (see the crate docs, "JSON contract of the replies"): every document valid under
//! the schema is a readable reply (a property test generates documents from each schema and
//! reads them). A provider that decodes under a grammar (a local model)
//! or honours `response_format: json_schema` can then only produce replies the pipeline reads.
//! String and list bounds keep a small model from writing until its token limit; they are
//! generous for real use.

use serde_json::{Value, json};

/// Tags of the requests this crate makes whose reply has a schema.
pub const REPLY_SCHEMA_TAGS: [&str; 6] = [
    "evolve.skill",
    "evolve.system",
    "evolve.tool",
    "evolve.rank",
    "evolve.consolidate",
    "evolve.rewrite",
];

/// Longest edit anchor a schema admits, in characters.
const TARGET_CHARS: u64 = 500;
/// Longest edit payload a schema admits, in characters.
const CONTENT_CHARS: u64 = 2000;
/// Longest free-text note (reason, suggestion, consolidated note), in characters.
const NOTE_CHARS: u64 = 400;
/// Most edits one reply may list (the edit budget clips them further).
const MAX_EDITS: u64 = 16;
/// Most suggestions or notes one reply may list.
const MAX_NOTES: u64 = 8;

/// The JSON Schema of the reply to a request tagged `tag`, or `None` when this crate makes no
/// request with that tag.
///
/// ```
/// let schema = evolution_evolve::reply_schema("evolve.rank").unwrap();
/// assert_eq!(schema["required"][0], "ranking");
/// assert!(evolution_evolve::reply_schema("judge.span").is_none());
/// ```
pub fn reply_schema(tag: &str) -> Option<Value> {
    let schema = match tag {
        "evolve.skill" | "evolve.system" => json!({
            "type": "object",
            "properties": {
                "suggestions": notes(),
                "edits": edits(),
            },
            "required": ["edits"],
        }),
        "evolve.tool" => json!({
            "type": "object",
            "properties": {
                "suggestions": notes(),
                "extract_edits": edits(),
                "verify_edits": edits(),
            },
            "required": ["extract_edits", "verify_edits"],
        }),
        "evolve.rank" => json!({
            "type": "object",
            "properties": {
                "ranking": {"type": "array", "items": {"type": "integer"}, "maxItems": MAX_EDITS * 4},
            },
            "required": ["ranking"],
        }),
        "evolve.consolidate" => json!({
            "type": "object",
            "properties": {"notes": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": NOTE_CHARS},
                "minItems": 1,
                "maxItems": MAX_NOTES,
            }},
            "required": ["notes"],
        }),
        "evolve.rewrite" => json!({
            "type": "object",
            "properties": {"rewritten": {"type": "string", "minLength": 1}},
            "required": ["rewritten"],
        }),
        _ => return None,
    };
    Some(schema)
}

/// A list of short free-text notes.
fn notes() -> Value {
    json!({
        "type": "array",
        "items": {"type": "string", "maxLength": NOTE_CHARS},
        "maxItems": MAX_NOTES,
    })
}

/// A list of edits in SkillOpt's wire format, with an optional reason each.
fn edits() -> Value {
    json!({
        "type": "array",
        "maxItems": MAX_EDITS,
        "items": {
            "type": "object",
            "properties": {
                "op": {"enum": ["append", "insert_after", "replace", "delete"]},
                "target": {"type": "string", "maxLength": TARGET_CHARS},
                "content": {"type": "string", "maxLength": CONTENT_CHARS},
                "reason": {"type": "string", "maxLength": NOTE_CHARS},
            },
            "required": ["op", "target", "content"],
        },
    })
}

#[cfg(test)]
mod tests {
    use evolution_types::EditOp;

    use super::*;

    #[test]
    fn edit_lists_admit_exactly_the_engine_ops_and_unknown_tags_have_none() {
        let ops: Vec<&str> = [
            EditOp::Append,
            EditOp::InsertAfter,
            EditOp::Replace,
            EditOp::Delete,
        ]
        .iter()
        .map(|op| op.as_str())
        .collect();
        for (tag, list) in [
            ("evolve.skill", "edits"),
            ("evolve.system", "edits"),
            ("evolve.tool", "extract_edits"),
            ("evolve.tool", "verify_edits"),
        ] {
            let schema = reply_schema(tag).unwrap_or(Value::Null);
            let listed = &schema["properties"][list]["items"]["properties"]["op"]["enum"];
            assert_eq!(*listed, json!(ops), "{tag}/{list}");
        }
        assert!(REPLY_SCHEMA_TAGS.iter().all(|t| reply_schema(t).is_some()));
        assert!(reply_schema("evolve.unknown").is_none());
    }
}
