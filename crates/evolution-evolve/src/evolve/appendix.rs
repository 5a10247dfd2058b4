//! Lapse notes into a skill's appendix: appended as they are, or consolidated first when
//! the notes reach the count threshold, pass the size threshold or would overflow the
//! appendix's character limit.

use evolution_patch::{
    APPENDIX_MAX_CHARS, PatchError, append_to_appendix, extract_appendix_notes,
    replace_appendix_notes,
};
use evolution_types::LlmProvider;

use crate::consolidate::consolidate_appendix;
use crate::prompts::EvolvePrompts;

/// When the appendix is consolidated before notes are added.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConsolidatePolicy {
    /// Note count (existing plus new) at which notes are consolidated.
    pub(super) count: usize,
    /// Appendix size in characters (as written, existing plus new notes) above which notes
    /// are consolidated.
    pub(super) chars: usize,
}

/// What adding lapse notes did.
pub(super) struct AppendixOutcome {
    /// The document with the notes written, or why the appendix was left as it was.
    pub(super) doc: Result<String, String>,
    /// LLM calls made (0 or 1).
    pub(super) llm_calls: u32,
    /// What was done, for the record's reason (when `doc` is `Ok`).
    pub(super) note: String,
}

/// Characters the appendix notes of `doc` take as written (`- ` bullets, one per line),
/// counted as the patch engine counts them against [`APPENDIX_MAX_CHARS`].
fn appendix_chars(doc: &str) -> usize {
    let notes = extract_appendix_notes(doc).unwrap_or_default();
    notes
        .iter()
        .map(|n| n.chars().count().saturating_add(2))
        .sum::<usize>()
        .saturating_add(notes.len().saturating_sub(1))
}

/// Adds `notes` to the appendix of `doc`.
///
/// Without a trigger the notes are appended. When existing plus new notes reach
/// `policy.count`, when the appendix would take more than `policy.chars` characters, or
/// when it would overflow [`APPENDIX_MAX_CHARS`], [`consolidate_appendix`] runs first. Its
/// result is kept when it has fewer notes or, for a size trigger, fewer characters (guard
/// G4); otherwise the notes are appended as they are. Only when even that is impossible
/// (the notes do not fit, or the document's markers are malformed) is `doc` an error, the
/// reason the appendix part could not be applied.
pub(super) async fn add_lapse_notes(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    doc: &str,
    notes: &[String],
    policy: ConsolidatePolicy,
) -> AppendixOutcome {
    let failed = |llm_calls, why: String| AppendixOutcome {
        doc: Err(why),
        llm_calls,
        note: String::new(),
    };
    let existing = match extract_appendix_notes(doc) {
        Ok(existing) => existing,
        Err(error) => return failed(0, error.to_string()),
    };
    let appended = match append_to_appendix(doc, notes) {
        Ok(text) => Ok(text),
        Err(PatchError::TooLong { chars, .. }) => Err(chars),
        Err(error) => return failed(0, error.to_string()),
    };
    let size = match &appended {
        Ok(text) => appendix_chars(text),
        Err(chars) => *chars,
    };
    let total = existing.len().saturating_add(notes.len());
    let appended_note = format!("{} lapse note(s) appended to the appendix", notes.len());
    if let Ok(text) = &appended
        && size <= policy.chars
        && total < policy.count
    {
        return AppendixOutcome {
            doc: Ok(text.clone()),
            llm_calls: 0,
            note: appended_note,
        };
    }
    let (trigger, by_size) = if appended.is_err() {
        (
            format!(
                "the appendix would take {size} characters, over its limit of {APPENDIX_MAX_CHARS}"
            ),
            true,
        )
    } else if size > policy.chars {
        (
            format!(
                "the appendix would take {size} characters, over the consolidation size of {}",
                policy.chars
            ),
            true,
        )
    } else {
        (
            format!(
                "{total} notes reach the consolidation threshold of {}",
                policy.count
            ),
            false,
        )
    };
    tracing::info!(%trigger, "consolidating the appendix");
    let combined: Vec<String> = existing.into_iter().chain(notes.iter().cloned()).collect();
    let merged = consolidate_appendix(llm, prompts, &combined).await;
    let llm_calls = merged.llm_calls;
    let refused = match merged.fallback {
        Some(why) => why,
        None => match replace_appendix_notes(doc, &merged.notes) {
            Ok(text) => {
                let after = appendix_chars(&text);
                if merged.notes.len() < combined.len() || (by_size && after < size) {
                    return AppendixOutcome {
                        doc: Ok(text),
                        llm_calls,
                        note: format!(
                            "appendix consolidated from {} to {} notes ({size} to {after} characters)",
                            combined.len(),
                            merged.notes.len()
                        ),
                    };
                }
                if by_size {
                    "not fewer notes or characters".to_owned()
                } else {
                    "not fewer notes".to_owned()
                }
            }
            Err(error) => format!("the consolidated notes cannot be written: {error}"),
        },
    };
    match appended {
        Ok(text) => AppendixOutcome {
            doc: Ok(text),
            llm_calls,
            note: format!("{appended_note} (consolidation refused: {refused})"),
        },
        Err(_) => failed(
            llm_calls,
            format!("{trigger}, and consolidation did not make it fit ({refused})"),
        ),
    }
}
