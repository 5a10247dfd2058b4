//! `parse_llm_json`: the evolve engine's two-level JSON reader.

use evolution_types::JsonMap;

/// Reads a JSON object from an LLM reply, or `None`.
///
/// Two levels, as the reference implementation's `_parse_llm_json`: first the body of the first
/// fenced block opened with exactly `` ```json ``; then the whole reply,
/// trimmed. Plain `` ``` `` fences are not looked into, no repair is tried,
/// and a value that is not an object (a list, a string, a number) counts as
/// a failure. Never fails and never panics.
pub fn parse_llm_json(text: &str) -> Option<JsonMap> {
    if let Some(body) = json_fence_body(text)
        && let Some(map) = parse_object(body)
    {
        return Some(map);
    }
    parse_object(text.trim())
}

fn json_fence_body(text: &str) -> Option<&str> {
    const OPEN: &str = "```json";
    let start = text.find(OPEN)?.saturating_add(OPEN.len());
    let rest = text.get(start..)?;
    let end = rest.find("```")?;
    rest.get(..end).map(str::trim)
}

fn parse_object(text: &str) -> Option<JsonMap> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Some(map),
        _ => None,
    }
}
