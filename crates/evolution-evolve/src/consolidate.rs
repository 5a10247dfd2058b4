//! `consolidate_appendix`: merge a long list of appendix notes into fewer
//! notes, keeping the original list whenever the merge fails or would not help.

use std::fmt::Write as _;

use evolution_types::{ChatMessage, ChatOptions, LlmProvider};

use crate::prompts::EvolvePrompts;
use crate::replies::ConsolidateReply;

/// What [`consolidate_appendix`] returned and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consolidation {
    /// The notes to keep: consolidated, or the input unchanged.
    pub notes: Vec<String>,
    /// LLM calls made (0 or 1).
    pub llm_calls: u32,
    /// Why the input was returned unchanged, when it was.
    pub fallback: Option<String>,
}

/// Asks the LLM to merge `notes` into fewer, behind three guards (the
/// fourth belongs to the caller).
///
/// - G1: fewer than two notes are returned as they are, without a call.
/// - G2: the result must be a non-empty list of non-blank strings no longer
///   than the input, else the input is returned.
/// - G3: any failure — a provider error of any class included, because
///   consolidation is an optional tidy-up — returns the input.
/// - G4 (caller): [`crate::Evolver::skill`] keeps the consolidation only when it
///   is strictly shorter than its input.
///
/// The `consolidate_system` template is sent as the system message with
/// `{{count}}` and `{{notes}}` (numbered lines) filled in; the same numbered
/// notes go in the user message. The reply must be `{"notes": ["…", …]}`.
pub async fn consolidate_appendix(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    notes: &[String],
) -> Consolidation {
    let unchanged = |llm_calls, reason: String| Consolidation {
        notes: notes.to_vec(),
        llm_calls,
        fallback: Some(reason),
    };
    if notes.len() < 2 {
        return unchanged(0, "fewer than two notes".to_owned());
    }
    let mut listed = String::new();
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(listed, "{}. {note}", i.saturating_add(1));
    }
    let count = notes.len().to_string();
    let system = prompts.render(
        &prompts.consolidate_system,
        &[("count", &count), ("notes", &listed)],
    );
    let messages = [
        ChatMessage::system(system),
        ChatMessage::user(listed.clone()),
    ];
    const TAG: &str = "evolve.consolidate";
    let options = ChatOptions::json().with_tag(TAG);
    let reply = match llm.chat(&messages, &options).await {
        Ok(reply) => reply,
        Err(error) => {
            tracing::warn!(%error, "appendix consolidation failed; keeping the notes");
            return unchanged(1, format!("the consolidation call failed: {error}"));
        }
    };
    let merged = match ConsolidateReply::read(TAG, &reply.content) {
        Ok(read) => read.notes,
        Err(unreadable) => return unchanged(1, unreadable.to_string()),
    };
    if merged.iter().any(String::is_empty) {
        return unchanged(1, "a consolidated note is blank".to_owned());
    }
    if merged.is_empty() {
        return unchanged(1, "the consolidation returned no notes".to_owned());
    }
    if merged.len() > notes.len() {
        return unchanged(
            1,
            format!(
                "the consolidation returned {} notes for {} (more, not fewer)",
                merged.len(),
                notes.len()
            ),
        );
    }
    Consolidation {
        notes: merged,
        llm_calls: 1,
        fallback: None,
    }
}
