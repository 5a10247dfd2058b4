//! `rank_and_clip`: keep at most the budget of edits, chosen by an LLM
//! ranking, with two fallbacks.

use evolution_types::{ChatMessage, ChatOptions, Edit, JsonMap, LlmError, LlmProvider};
use serde_json::{Value, json};

use crate::format::budget_text;
use crate::prompts::EvolvePrompts;
use crate::replies::RankReply;

/// The edits kept by [`rank_and_clip`] and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct ClipOutcome {
    /// The kept edits: in ranking order after an LLM ranking, else in their
    /// original order.
    pub edits: Vec<Edit>,
    /// What happened: `n_proposed`, `max_edits` (`null` when unlimited),
    /// `method` (`passthrough`, `llm_rank` or `fallback_first_n`),
    /// `selected` (original 0-based indices kept) and, for the fallback,
    /// `fallback_reason`.
    pub info: JsonMap,
    /// LLM calls made (0 or 1).
    pub llm_calls: u32,
}

/// The indices of a ranking reply that [`rank_and_clip`] accepts, in order.
///
/// Only JSON integers count (`true`, `1.0`, `"1"` do not: the reference implementation's
/// `type(idx) is int`), only those in `0..n_edits`, each once; at most
/// `max_edits` are kept.
pub fn select_top_edits(ranking: &[Value], n_edits: usize, max_edits: usize) -> Vec<usize> {
    let mut selected: Vec<usize> = Vec::new();
    for value in ranking {
        if selected.len() >= max_edits {
            break;
        }
        let Some(index) = value.as_u64().and_then(|i| usize::try_from(i).ok()) else {
            continue;
        };
        if index < n_edits && !selected.contains(&index) {
            selected.push(index);
        }
    }
    selected
}

/// Keeps at most `max_edits` of `edits` (`usize::MAX` = unlimited).
///
/// Within budget the edits pass through without a call. Over budget the
/// `evolve_rank` prompt is sent with `{{document}}`, `{{edits}}` (a JSON
/// array of `{"index", "op", "target", "content"}`), `{{n_edits}}` and
/// `{{max_edits}}`, and must answer `{"ranking": [i, j, …]}` with 0-based
/// indices, most important first. [`select_top_edits`] filters that list;
/// when nothing usable remains — or the reply is not JSON, or the provider
/// reports a content failure — the first `max_edits` edits in their original
/// order are kept. Transient and permanent provider errors propagate.
pub async fn rank_and_clip(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    document: &str,
    edits: Vec<Edit>,
    max_edits: usize,
) -> Result<ClipOutcome, LlmError> {
    let n = edits.len();
    let mut info = JsonMap::new();
    info.insert("n_proposed".into(), json!(n));
    info.insert(
        "max_edits".into(),
        if max_edits == usize::MAX {
            Value::Null
        } else {
            json!(max_edits)
        },
    );
    if n <= max_edits {
        info.insert("method".into(), json!("passthrough"));
        info.insert("selected".into(), json!((0..n).collect::<Vec<_>>()));
        return Ok(ClipOutcome {
            edits,
            info,
            llm_calls: 0,
        });
    }
    if max_edits == 0 {
        info.insert("method".into(), json!("passthrough"));
        info.insert("selected".into(), json!([]));
        return Ok(ClipOutcome {
            edits: Vec::new(),
            info,
            llm_calls: 0,
        });
    }
    let listed: Vec<Value> = edits
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut item =
                json!({"index": i, "op": e.op.as_str(), "target": e.target, "content": e.content});
            // Pooled tool edits say which file they are for.
            if let (Some(src), Some(obj)) = (e.extra.get(crate::SOURCE_TAG), item.as_object_mut()) {
                obj.insert("file".into(), src.clone());
            }
            item
        })
        .collect();
    let edits_json = serde_json::to_string_pretty(&listed).unwrap_or_default();
    let n_text = n.to_string();
    let max_text = budget_text(max_edits);
    let prompt = prompts.render(
        &prompts.evolve_rank,
        &[
            ("document", document),
            ("edits", &edits_json),
            ("n_edits", &n_text),
            ("max_edits", &max_text),
        ],
    );
    const TAG: &str = "evolve.rank";
    let options = ChatOptions::json().with_tag(TAG);
    let selected = match llm.chat(&[ChatMessage::user(prompt)], &options).await {
        Ok(reply) => RankReply::read(TAG, &reply.content)
            .map(|reply| select_top_edits(&reply.ranking, n, max_edits))
            .map_err(|unreadable| unreadable.to_string()),
        Err(error) if error.is_content() => Err(format!("the ranking call failed: {error}")),
        Err(error) => return Err(error),
    };
    let (indices, fallback) = match selected {
        Ok(indices) if !indices.is_empty() => (indices, None),
        Ok(_) => (
            (0..max_edits).collect(),
            Some("the ranking named no valid index".to_owned()),
        ),
        Err(reason) => ((0..max_edits).collect(), Some(reason)),
    };
    let method = if fallback.is_some() {
        "fallback_first_n"
    } else {
        "llm_rank"
    };
    info.insert("method".into(), json!(method));
    info.insert("selected".into(), json!(indices));
    if let Some(reason) = fallback {
        tracing::warn!(%reason, "rank_and_clip fell back to the first edits");
        info.insert("fallback_reason".into(), json!(reason));
    }
    let kept = indices
        .iter()
        .filter_map(|&i| edits.get(i).cloned())
        .collect();
    Ok(ClipOutcome {
        edits: kept,
        info,
        llm_calls: 1,
    })
}
