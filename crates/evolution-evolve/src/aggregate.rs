//! `aggregate_patches`: the aggregation step of the reflect loop, merging the patches of several
//! reflection batches.

use std::collections::HashMap;

use evolution_types::{Edit, JsonMap};
use serde::{Deserialize, Serialize};

/// One revision suggestion of a reflection (the reflect step).
///
/// Read from an object with the fields below, or from a plain string, which
/// becomes the [`instruction`](Suggestion::instruction): the kernel's reply
/// schemas (`reply_schema("evolve.skill")`) ask for suggestions as short
/// notes, and a reply that follows them must still be read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(from = "SuggestionReply")]
pub struct Suggestion {
    /// `add_rule`, `modify_step`, `fix_context`, `rewrite_section`, …
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Short title.
    #[serde(default)]
    pub title: String,
    /// What to change.
    #[serde(default)]
    pub instruction: String,
    /// `high`, `medium` or `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_hint: Option<String>,
    /// How many failed trajectories support it (1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support_count: Option<u32>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// A suggestion as a reply may write it: a note, or an object.
#[derive(Deserialize)]
#[serde(untagged)]
enum SuggestionReply {
    Note(String),
    Object(SuggestionObject),
}

/// The object form of [`Suggestion`], field for field.
#[derive(Deserialize)]
struct SuggestionObject {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    instruction: String,
    #[serde(default)]
    priority_hint: Option<String>,
    #[serde(default)]
    support_count: Option<u32>,
    #[serde(flatten)]
    extra: JsonMap,
}

impl From<SuggestionReply> for Suggestion {
    fn from(reply: SuggestionReply) -> Self {
        match reply {
            SuggestionReply::Note(instruction) => Suggestion {
                instruction,
                ..Suggestion::default()
            },
            SuggestionReply::Object(o) => Suggestion {
                kind: o.kind,
                title: o.title,
                instruction: o.instruction,
                priority_hint: o.priority_hint,
                support_count: o.support_count,
                extra: o.extra,
            },
        }
    }
}

/// The suggestions and edits one reflection batch produced, or the merged
/// result of several.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Patch {
    /// Revision suggestions.
    #[serde(default)]
    pub suggestions: Vec<Suggestion>,
    /// Concrete edits.
    #[serde(default)]
    pub edits: Vec<Edit>,
    /// The reflections' reasoning, one paragraph per batch.
    #[serde(default)]
    pub reasoning: String,
}

/// Merges the patches of several batches into one.
///
/// Suggestions with the same type and title (compared case- and
/// whitespace-insensitively; the instruction stands in for an empty title)
/// are one suggestion; edits with the same operation, target and content
/// (content compared case- and whitespace-insensitively) are one edit, so two
/// different rules anchored on one line stay two edits. The first
/// occurrence is kept, its `support_count` becomes the sum of the merged
/// counts (each counting 1 when absent), and both lists are sorted by
/// support, highest first, ties in first-seen order. Reasonings are joined
/// with blank lines.
pub fn aggregate_patches(batches: &[Patch]) -> Patch {
    let mut suggestions: Vec<Suggestion> = Vec::new();
    let mut suggestion_keys: HashMap<(String, String), usize> = HashMap::new();
    let mut edits: Vec<Edit> = Vec::new();
    let mut edit_keys: HashMap<(String, String, String), usize> = HashMap::new();
    let mut reasoning: Vec<&str> = Vec::new();
    for batch in batches {
        for s in &batch.suggestions {
            let title = if s.title.trim().is_empty() {
                &s.instruction
            } else {
                &s.title
            };
            let key = (normalize(&s.kind), normalize(title));
            merge(&mut suggestions, &mut suggestion_keys, key, s, |s| {
                &mut s.support_count
            });
        }
        for e in &batch.edits {
            let key = (
                e.op.as_str().to_owned(),
                e.target.clone(),
                normalize(&e.content),
            );
            merge(&mut edits, &mut edit_keys, key, e, |e| &mut e.support_count);
        }
        let text = batch.reasoning.trim();
        if !text.is_empty() {
            reasoning.push(text);
        }
    }
    // Stable sorts keep first-seen order among equal supports.
    suggestions.sort_by_key(|s| std::cmp::Reverse(s.support_count.unwrap_or(1)));
    edits.sort_by_key(|e| std::cmp::Reverse(e.support_count.unwrap_or(1)));
    Patch {
        suggestions,
        edits,
        reasoning: reasoning.join("\n\n"),
    }
}

fn merge<T: Clone, K: std::hash::Hash + Eq>(
    items: &mut Vec<T>,
    keys: &mut HashMap<K, usize>,
    key: K,
    item: &T,
    support: impl Fn(&mut T) -> &mut Option<u32>,
) {
    let mut incoming = item.clone();
    let count = support(&mut incoming).unwrap_or(1);
    match keys.get(&key).and_then(|&i| items.get_mut(i)) {
        Some(existing) => {
            let slot = support(existing);
            *slot = Some(slot.unwrap_or(1).saturating_add(count));
        }
        None => {
            *support(&mut incoming) = Some(count);
            keys.insert(key, items.len());
            items.push(incoming);
        }
    }
}

fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}
