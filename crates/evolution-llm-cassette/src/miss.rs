//! What changed in a request a cassette does not hold: the recording closest
//! to it (the same tag first), and how the two differ — the model, the
//! options, the number of messages, or where a message's text parts from the
//! recorded one. Read from the file only when a replay misses, so a cassette
//! costs no extra memory while it answers.

use std::path::Path;

use evolution_types::{ChatMessage, ChatOptions};
use serde_json::Value;

use crate::entry::{Entry, keyed_options};

/// Characters of context shown before the first differing character.
const BEFORE: usize = 24;
/// Characters shown from the first differing character on.
const AFTER: usize = 40;

/// One sentence on how the request differs from the closest recording of
/// the cassette at `path`; `None` when the file cannot be read again.
pub(crate) async fn explain(
    path: &Path,
    model: &str,
    messages: &[ChatMessage],
    options: &ChatOptions,
) -> Option<String> {
    let bytes = tokio::fs::read(path).await.ok()?;
    let entries: Vec<(usize, Entry)> = bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| {
            let entry = serde_json::from_slice::<Entry>(line).ok()?;
            Some((i.saturating_add(1), entry))
        })
        .collect();
    Some(describe(&entries, model, messages, options))
}

/// How the request differs from the closest of `entries` (line, entry).
fn describe(
    entries: &[(usize, Entry)],
    model: &str,
    messages: &[ChatMessage],
    options: &ChatOptions,
) -> String {
    let tag = options.tag.as_deref();
    let same_tag = tag.is_some() && entries.iter().any(|(_, e)| e.tag.as_deref() == tag);
    let mut best: Option<(Score, usize, &Entry)> = None;
    for (line, entry) in entries {
        if same_tag && entry.tag.as_deref() != tag {
            continue;
        }
        let score = score(entry, model, messages, options);
        if best.as_ref().is_none_or(|(b, _, _)| score > *b) {
            best = Some((score, *line, entry));
        }
    }
    let Some((_, line, entry)) = best else {
        return "the cassette holds no recording to compare with".to_owned();
    };
    let whose = match (same_tag, tag) {
        (true, Some(tag)) => format!("the closest recording of tag {tag:?} (line {line})"),
        _ => format!("the closest recording (line {line})"),
    };
    let changes = differences(entry, model, messages, options);
    if changes.is_empty() {
        format!("{whose} asks the same; the key differs in a field the comparison does not show")
    } else {
        format!("compared with {whose}, {}", changes.join("; "))
    }
}

/// Higher is closer: identical messages at the same places, then the length
/// of the common start of the first differing message, then equal options,
/// then the same model.
type Score = (usize, usize, bool, bool);

fn score(entry: &Entry, model: &str, messages: &[ChatMessage], options: &ChatOptions) -> Score {
    let same = entry
        .messages
        .iter()
        .zip(messages)
        .filter(|(a, b)| a == b)
        .count();
    let prefix = entry
        .messages
        .iter()
        .zip(messages)
        .find(|(a, b)| a != b)
        .map_or(0, |(a, b)| common_prefix_chars(&a.content, &b.content));
    (
        same,
        prefix,
        options_value(&entry.options) == options_value(options),
        entry.model == model,
    )
}

/// Every difference between the recording and the request, one phrase each.
fn differences(
    entry: &Entry,
    model: &str,
    messages: &[ChatMessage],
    options: &ChatOptions,
) -> Vec<String> {
    let mut out = Vec::new();
    if entry.model != model {
        out.push(format!(
            "the model changed: recorded {:?}, now {model:?}",
            entry.model
        ));
    }
    let changed_options = changed_keys(&options_value(&entry.options), &options_value(options));
    if !changed_options.is_empty() {
        out.push(format!(
            "the call's options changed ({})",
            changed_options.join(", ")
        ));
    }
    if entry.messages.len() != messages.len() {
        out.push(format!(
            "the number of messages changed: recorded {}, now {}",
            entry.messages.len(),
            messages.len()
        ));
    }
    let total = messages.len();
    for (index, (recorded, now)) in entry.messages.iter().zip(messages).enumerate() {
        let number = index.saturating_add(1);
        if recorded.role != now.role {
            out.push(format!(
                "message {number} of {total} changed role: recorded {:?}, now {:?}",
                recorded.role, now.role
            ));
        } else if recorded.content != now.content {
            out.push(text_change(number, total, now, &recorded.content));
        }
    }
    out
}

/// Where message `number` (the request's `now`) parts from the recorded text.
fn text_change(number: usize, total: usize, now: &ChatMessage, recorded: &str) -> String {
    let at = common_prefix_chars(recorded, &now.content);
    let line = now
        .content
        .chars()
        .take(at)
        .filter(|c| *c == '\n')
        .count()
        .saturating_add(1);
    format!(
        "message {number} of {total} ({}) changed from line {line}, character {}: recorded \
         {:?}, now {:?}",
        serde_json::to_value(now.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("{:?}", now.role)),
        at.saturating_add(1),
        excerpt(recorded, at),
        excerpt(&now.content, at),
    )
}

/// The characters of `text` around character `at`, marked `…` where cut.
fn excerpt(text: &str, at: usize) -> String {
    let start = at.saturating_sub(BEFORE);
    let count = text.chars().count();
    let end = at.saturating_add(AFTER).min(count);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(text.chars().skip(start).take(end.saturating_sub(start)));
    if end < count {
        out.push('…');
    }
    out
}

fn common_prefix_chars(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// The options as the key sees them, as a JSON object.
fn options_value(options: &ChatOptions) -> Value {
    serde_json::to_value(keyed_options(options)).unwrap_or(Value::Null)
}

/// The keys whose values differ between two JSON objects, sorted.
fn changed_keys(a: &Value, b: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let a = a.as_object().unwrap_or(&empty);
    let b = b.as_object().unwrap_or(&empty);
    let mut keys: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_mark_what_they_leave_out() {
        let text = "a".repeat(30) + "XYZ" + &"b".repeat(50);
        let shown = excerpt(&text, 30);
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert!(shown.contains("XYZ"), "{shown}");
        assert_eq!(excerpt("short", 2), "short");
    }
}
