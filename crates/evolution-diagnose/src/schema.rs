//! JSON Schemas of the judges' replies, keyed by the request tag (`judge.<name>`).
//!
//! Each schema describes a subset of what the judge's reader accepts (the table in the crate
//! docs): every document valid under it is a usable verdict. A provider that decodes under a
//! grammar (a local model) or honours `response_format: json_schema` then never returns an
//! unusable verdict. String and list bounds keep a small model from writing until its token
//! limit.

use serde_json::{Value, json};

/// Tags of the judge requests whose reply has a schema.
pub const REPLY_SCHEMA_TAGS: [&str; 8] = [
    "judge.span",
    "judge.missed_nodes",
    "judge.skill_adherence",
    "judge.confirmation_bias",
    "judge.evidence_sufficiency",
    "judge.defect_vs_lapse",
    "judge.reasoning_sub",
    "judge.rubric",
];

/// Longest free-text field a schema admits, in characters.
const TEXT_CHARS: u64 = 400;
/// Longest identifier or tag, in characters.
const TAG_CHARS: u64 = 80;
/// Most entries of a tag or step list.
const MAX_LIST: u64 = 32;

/// The JSON Schema of the reply to a judge request tagged `tag`, or `None` when no judge of
/// this crate uses that tag.
///
/// ```
/// let schema = evolution_diagnose::reply_schema("judge.defect_vs_lapse").unwrap();
/// assert_eq!(schema["properties"]["category"]["enum"][0], "defect");
/// assert!(evolution_diagnose::reply_schema("evolve.skill").is_none());
/// ```
pub fn reply_schema(tag: &str) -> Option<Value> {
    let score = json!({"type": "number"});
    let schema = match tag {
        "judge.span" => object(
            json!({
                "extraction_completeness": score,
                "hallucination_rate": score,
                "missed_info_tags": tags(),
                "hallucination_tags": tags(),
            }),
            &["extraction_completeness", "hallucination_rate"],
        ),
        "judge.missed_nodes" => object(json!({"missed_nodes": tags()}), &["missed_nodes"]),
        "judge.skill_adherence" => object(
            json!({
                "steps": {
                    "type": "array",
                    "maxItems": MAX_LIST,
                    "items": object(
                        json!({
                            "step": text(),
                            "followed": {"type": "boolean"},
                            "reason": text(),
                        }),
                        &["step", "followed"],
                    ),
                },
                "adherence_rate": score,
            }),
            &["steps"],
        ),
        "judge.confirmation_bias" => object(
            json!({"confirmation_bias": {"type": "boolean"}}),
            &["confirmation_bias"],
        ),
        "judge.evidence_sufficiency" => object(
            json!({"evidence_sufficient": {"type": "boolean"}}),
            &["evidence_sufficient"],
        ),
        "judge.defect_vs_lapse" => object(
            json!({
                "category": {"enum": ["defect", "lapse"]},
                "lapse_note": text(),
            }),
            &["category"],
        ),
        "judge.reasoning_sub" => object(
            json!({"type": {"type": "string", "minLength": 1, "maxLength": TAG_CHARS}}),
            &["type"],
        ),
        "judge.rubric" => object(
            json!({"passed": {"type": "boolean"}, "reason": text()}),
            &["passed"],
        ),
        _ => return None,
    };
    Some(schema)
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn text() -> Value {
    json!({"type": "string", "maxLength": TEXT_CHARS})
}

fn tags() -> Value {
    json!({
        "type": "array",
        "maxItems": MAX_LIST,
        "items": {"type": "string", "maxLength": TAG_CHARS},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_tag_has_an_object_schema_and_others_have_none() {
        for tag in REPLY_SCHEMA_TAGS {
            let schema = reply_schema(tag).unwrap_or_else(|| panic!("{tag}"));
            assert_eq!(schema["type"], "object", "{tag}");
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap_or_default();
                assert!(schema["properties"].get(name).is_some(), "{tag}: {name}");
            }
        }
        assert!(reply_schema("judge.unknown").is_none());
    }
}
