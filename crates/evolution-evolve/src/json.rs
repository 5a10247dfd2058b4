//! `parse_llm_json`: the evolve engine's two-level JSON reader.

use evolution_types::JsonMap;

/// Reads a JSON object from an LLM reply, or `None`.
///
/// Two levels, as the reference implementation's `_parse_llm_json`: the body of the first
/// fenced block opened with exactly `` ```json ``, and the whole reply, trimmed. Plain
/// `` ``` `` fences are not looked into, no repair is tried, and a value that is not an
/// object (a list, a string, a number) counts as a failure. Never fails and never panics.
///
/// Two deliberate differences, so that a reply whose strings quote fences (an edit adding a
/// JSON example to a skill, say) is still read: a reply that is one JSON object as a whole
/// is taken as it is before any fence is looked for, and a `` ``` `` inside a fenced
/// object's strings does not end the block (each closing fence is tried in turn until the
/// body reads as an object).
pub fn parse_llm_json(text: &str) -> Option<JsonMap> {
    parse_object(text.trim()).or_else(|| json_fence_object(text))
}

fn json_fence_object(text: &str) -> Option<JsonMap> {
    const OPEN: &str = "```json";
    let start = text.find(OPEN)?.saturating_add(OPEN.len());
    let rest = text.get(start..)?;
    rest.match_indices("```")
        .find_map(|(end, _)| rest.get(..end).and_then(|body| parse_object(body.trim())))
}

fn parse_object(text: &str) -> Option<JsonMap> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Some(map),
        _ => None,
    }
}
