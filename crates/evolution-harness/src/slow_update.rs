//! The slow update: at an epoch
//! boundary, compare the previous and current skill on the same questions
//! and ask the LLM for long-term guidance, regressions first.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use evolution_gate::{QuadrantClassification, classify_quadrants};
use evolution_patch::{PatchError, RegionError, replace_slow_update, slow_update_inner};
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider};
use serde::{Deserialize, Serialize};

use evolution_evolve::preferences::{Preferences, render_with_preferences};

/// Label of wrong-before, right-now questions.
pub const IMPROVED: &str = "improved";
/// Label of right-before, wrong-now questions.
pub const REGRESSED: &str = "regressed";
/// Label of wrong-in-both questions.
pub const PERSISTENT_FAIL: &str = "persistent_fail";
/// Label of right-in-both questions.
pub const STABLE_SUCCESS: &str = "stable_success";

/// Questions listed per quadrant in the prompt; the rest are counted.
pub const PAIRS_PER_QUADRANT: usize = 20;

/// One question answered by both epochs' skills.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ComparisonPair {
    /// The question's id.
    pub question_id: String,
    /// The question text.
    pub question: String,
    /// The reference answer.
    pub answer: String,
    /// The previous skill's answer.
    pub previous_prediction: String,
    /// Whether it was right.
    pub previous_correct: bool,
    /// The current skill's answer.
    pub current_prediction: String,
    /// Whether it is right.
    pub current_correct: bool,
}

/// The result of a slow update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowUpdate {
    /// The current skill with the new guidance (unchanged when `updated` is false).
    pub content: String,
    /// The guidance now in force.
    pub guidance: String,
    /// The guidance before.
    pub previous_guidance: String,
    /// Whether the guidance changed hands (false: the previous one was kept).
    pub updated: bool,
    /// Why the previous guidance was kept, when it was.
    pub kept_because: Option<String>,
    /// The four quadrants of the comparison.
    pub quadrants: QuadrantClassification,
}

/// Why the slow update could not run at all. LLM failures are not errors:
/// they keep the previous guidance.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SlowUpdateError {
    /// A question appears twice in the comparison.
    #[error("question {0:?} appears twice in the comparison")]
    DuplicateQuestion(String),
    /// The current skill's slow-update markers are malformed.
    #[error("the current skill's slow-update region is malformed: {0}")]
    Region(#[from] RegionError),
}

fn format_quadrant(
    out: &mut String,
    label: &str,
    ids: &[String],
    pairs: &BTreeMap<&str, &ComparisonPair>,
) {
    if ids.is_empty() {
        out.push_str("(none)\n");
        return;
    }
    for id in ids.iter().take(PAIRS_PER_QUADRANT) {
        if let Some(p) = pairs.get(id.as_str()) {
            let _ = writeln!(
                out,
                "- [{label}] {id}: {}\n  reference: {}\n  before: {}\n  now: {}",
                p.question, p.answer, p.previous_prediction, p.current_prediction
            );
        }
    }
    let rest = ids.len().saturating_sub(PAIRS_PER_QUADRANT);
    if rest > 0 {
        let _ = writeln!(out, "- … and {rest} more {label} questions");
    }
}

/// The quadrants and their prompt text. Kept apart from the LLM call so a
/// bad comparison is an error, never mistaken for a bad reply.
fn format_comparison_pairs(
    pairs: &[ComparisonPair],
) -> Result<(QuadrantClassification, [String; 3]), SlowUpdateError> {
    let mut seen = BTreeSet::new();
    let mut by_id = BTreeMap::new();
    let mut observed = BTreeMap::new();
    for p in pairs {
        if !seen.insert(p.question_id.as_str()) {
            return Err(SlowUpdateError::DuplicateQuestion(p.question_id.clone()));
        }
        by_id.insert(p.question_id.as_str(), p);
        observed.insert(
            p.question_id.clone(),
            (p.previous_correct, p.current_correct),
        );
    }
    let quadrants = classify_quadrants(&observed);
    let mut texts: [String; 3] = Default::default();
    for (text, (label, ids)) in texts.iter_mut().zip([
        (REGRESSED, &quadrants.regressions),
        (PERSISTENT_FAIL, &quadrants.persistent_fails),
        (IMPROVED, &quadrants.improvements),
    ]) {
        format_quadrant(text, label, ids, &by_id);
    }
    Ok((quadrants, texts))
}

/// Unwraps a reply that is one fenced block; otherwise returns it trimmed.
fn guidance_of(reply: &str) -> &str {
    let trimmed = reply.trim();
    if let Some(body) = trimmed.strip_prefix("```")
        && let Some(body) = body.strip_suffix("```")
    {
        let body = body.split_once('\n').map_or("", |(_, rest)| rest);
        return body.trim();
    }
    trimmed
}

/// Runs the slow update.
///
/// Renders `template` (placeholders: see [`crate::SLOW_UPDATE`]) with the
/// comparison — regressions first, persistent failures next, then
/// improvements, at most [`PAIRS_PER_QUADRANT`] listed each — and the house rules of
/// `preferences` (`{{preferences}}`, or appended when the template does not use it; nothing
/// without preferences), sends it as one user message, and writes the reply into the current skill's slow-update
/// region. An LLM error, an empty reply, or a reply the region refuses
/// (a marker inside it, over the length limit) keeps the previous guidance
/// and the current skill unchanged, with the reason in `kept_because`.
///
/// # Errors
/// [`SlowUpdateError`] for a comparison listing a question twice or a
/// current skill with malformed markers, before any LLM call.
pub async fn slow_update(
    llm: &dyn LlmProvider,
    template: &str,
    preferences: &Preferences,
    previous_skill: &str,
    current_skill: &str,
    pairs: &[ComparisonPair],
) -> Result<SlowUpdate, SlowUpdateError> {
    let (quadrants, [regressions, persistent, improvements]) = format_comparison_pairs(pairs)?;
    let previous_guidance = slow_update_inner(current_skill)?
        .unwrap_or_default()
        .to_owned();
    let stable = quadrants.stable_successes.len().to_string();
    let section = preferences.prompt_section();
    let prompt = render_with_preferences(
        template,
        &[
            ("previous_skill", previous_skill),
            ("current_skill", current_skill),
            ("regressions", &regressions),
            ("persistent_fails", &persistent),
            ("improvements", &improvements),
            ("stable_count", &stable),
            ("previous_guidance", &previous_guidance),
        ],
        &section,
    );
    let keep = |reason: String, quadrants: QuadrantClassification| SlowUpdate {
        content: current_skill.to_owned(),
        guidance: previous_guidance.clone(),
        previous_guidance: previous_guidance.clone(),
        updated: false,
        kept_because: Some(reason),
        quadrants,
    };
    let options = ChatOptions::default().with_tag("slow_update");
    let reply = match llm.chat(&[ChatMessage::user(prompt)], &options).await {
        Ok(reply) => reply,
        Err(error) => return Ok(keep(describe(&error), quadrants)),
    };
    let guidance = guidance_of(&reply.content);
    if guidance.is_empty() {
        return Ok(keep("the reply was empty".to_owned(), quadrants));
    }
    match replace_slow_update(current_skill, guidance) {
        Ok(content) => Ok(SlowUpdate {
            content,
            guidance: guidance.to_owned(),
            previous_guidance,
            updated: true,
            kept_because: None,
            quadrants,
        }),
        Err(PatchError::Region(error)) => Err(error.into()),
        Err(error) => Ok(keep(format!("the reply was refused: {error}"), quadrants)),
    }
}

fn describe(error: &LlmError) -> String {
    format!("the LLM call failed: {error}")
}
