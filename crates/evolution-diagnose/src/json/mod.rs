//! Reading JSON objects out of LLM replies.
//!
//! Two entry points with the reference implementation's strategies, each a named function:
//! [`extract_json_from_response`] (fenced block → outermost braces → repair;
//! failure is an error) for judge replies, and [`parse_json_object`]
//! (strict parse → repair; failure is `None`) for an agent's step output.
//! Both drop `<think>…</think>` blocks first (a judge reply that is one JSON object as a
//! whole is taken before that, its strings untouched) and both reject anything that is not a
//! JSON object.

mod repair;

use std::borrow::Cow;
use std::sync::LazyLock;

use evolution_types::JsonMap;
use regex::Regex;
use serde_json::Value;

/// Why no JSON object could be read from a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// The reply is empty (or held only a `<think>` block).
    #[error("the reply is empty")]
    Empty,
    /// The reply is JSON, but an array or a scalar rather than an object.
    #[error("the reply is a JSON {found}, not an object")]
    NotAnObject {
        /// What the reply held: `array`, `string`, `number`, `bool` or `null`.
        found: &'static str,
    },
    /// Neither parsing nor repair found an object with at least one member.
    #[error("no JSON object could be read or repaired from the reply")]
    NoObject,
}

static FENCE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?s)```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```").ok());

/// Removes `<think>…</think>` reasoning blocks from a reply.
///
/// An unclosed `<think>` removes everything after it (the reply was cut off
/// while thinking); a `</think>` without an opening tag removes everything
/// before it (some servers drop the opening tag).
pub fn strip_think_blocks(text: &str) -> Cow<'_, str> {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    if !text.contains(OPEN) && !text.contains(CLOSE) {
        return Cow::Borrowed(text);
    }
    let mut rest = text;
    // A leading close tag without an opening one.
    if let (Some(close), open) = (rest.find(CLOSE), rest.find(OPEN))
        && open.is_none_or(|open| close < open)
    {
        rest = rest.get(close + CLOSE.len()..).unwrap_or_default();
    }
    let mut out = String::with_capacity(rest.len());
    while let Some(open) = rest.find(OPEN) {
        out.push_str(rest.get(..open).unwrap_or_default());
        let after = rest.get(open + OPEN.len()..).unwrap_or_default();
        match after.find(CLOSE) {
            Some(close) => rest = after.get(close + CLOSE.len()..).unwrap_or_default(),
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Strategy 1: the first fenced code block (with or without `json`) that parses as an object.
pub fn parse_fenced_block(text: &str) -> Option<JsonMap> {
    let fence = FENCE.as_ref()?;
    fence
        .captures_iter(text)
        .filter_map(|c| c.get(1))
        .find_map(|m| strict_object(m.as_str()))
}

/// Strategy 2: the text from the first `{` to the last `}`, parsed strictly.
pub fn parse_outermost_braces(text: &str) -> Option<JsonMap> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end < start {
        return None;
    }
    strict_object(text.get(start..=end)?)
}

/// Strategy 3: lenient repair of the first object in the text.
///
/// Fixes what models get wrong (see the crate docs); an object repaired to
/// no members at all counts as a failure, so that noise is not read as an
/// empty verdict.
///
/// When the first `{` opens nothing readable (a brace in prose, such as
/// `the set {x} ...`), the next ones are tried, up to [`MAX_REPAIR_STARTS`].
pub fn repair_json_object(text: &str) -> Option<JsonMap> {
    text.match_indices(['{', '｛'])
        .take(MAX_REPAIR_STARTS)
        .find_map(|(at, _)| {
            repair::repair_object(text.get(at..)?).filter(|object| !object.is_empty())
        })
}

/// Most opening braces [`repair_json_object`] tries as the object's start.
pub const MAX_REPAIR_STARTS: usize = 8;

fn strict_object(text: &str) -> Option<JsonMap> {
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Reads the JSON object a judge replied with.
///
/// A reply that is one JSON object as a whole is taken as it is, so that its strings may
/// quote a think tag or a fence (a reply decoded under the judge's schema is always such a
/// reply). Otherwise, after dropping `<think>` blocks, tries in order: a fenced code block,
/// the outermost braces, then repair (of the fenced block's content when there is one, else
/// of the whole reply). Arrays and scalars are failures.
pub fn extract_json_from_response(text: &str) -> Result<JsonMap, JsonError> {
    if let Some(object) = strict_object(text) {
        return Ok(object);
    }
    let text = strip_think_blocks(text);
    let text = text.trim();
    if text.is_empty() {
        return Err(JsonError::Empty);
    }
    if let Some(object) = parse_fenced_block(text) {
        return Ok(object);
    }
    if let Some(object) = parse_outermost_braces(text) {
        return Ok(object);
    }
    let fenced = FENCE.as_ref().and_then(|fence| {
        fence
            .captures_iter(text)
            .filter_map(|c| c.get(1))
            .map(|m| m.as_str())
            .find(|block| block.contains('{') || block.contains('｛'))
    });
    if let Some(object) = fenced.and_then(repair_json_object) {
        return Ok(object);
    }
    if let Some(object) = repair_json_object(text) {
        return Ok(object);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) if !value.is_object() => Err(JsonError::NotAnObject {
            found: kind_name(&value),
        }),
        _ => Err(JsonError::NoObject),
    }
}

/// Reads an agent's step output as a JSON object: strict parse, then repair.
///
/// `None` when neither yields an object (the reference implementation's `_parse_json_object`).
pub fn parse_json_object(text: &str) -> Option<JsonMap> {
    let text = strip_think_blocks(text);
    strict_object(&text).or_else(|| repair_json_object(&text))
}
