//! The patch loop shared by every target: ask, rank and clip, apply, validate, retry once
//! with feedback.

use std::fmt::Write as _;

use evolution_types::{
    ChatMessage, ChatOptions, Edit, EditReport, EditStatus, JsonMap, LlmProvider,
};
use serde_json::Value;

use crate::error::EvolveError;
use crate::prompts::EvolvePrompts;
use crate::rank::rank_and_clip;
use crate::replies::UnreadableReply;
use crate::validate::{placeholder_echo, prompt_example_texts};

use super::{
    FEEDBACK_INVALID_CANDIDATE, FEEDBACK_INVALID_JSON, FEEDBACK_NOT_APPLIED, PATCH_ROUNDS,
};

/// The documents of a target after applying edits.
pub(super) struct Applied {
    pub(super) docs: Vec<String>,
    pub(super) edits: Vec<Edit>,
    pub(super) reports: Vec<EditReport>,
}

/// What a target must provide to the patch loop.
pub(super) trait Target: Sync {
    /// The edits and suggestions of a reply to a request tagged `tag`, or why it cannot be
    /// read.
    fn proposals(&self, tag: &str, reply: &str) -> Result<Proposals, UnreadableReply>;
    /// The text the ranker sees.
    fn rank_document(&self) -> String;
    /// The original documents.
    fn originals(&self) -> Vec<&str>;
    /// Applies kept edits to the originals.
    fn apply(&self, edits: Vec<Edit>) -> Applied;
    /// Every failed validation check of a candidate.
    fn validate(&self, applied: &Applied) -> Vec<String>;
}

/// What a readable reply proposes.
pub(super) struct Proposals {
    pub(super) edits: Vec<Edit>,
    pub(super) suggestions: Vec<Value>,
}

pub(super) enum LoopOutcome {
    Success {
        applied: Applied,
        clip_info: JsonMap,
    },
    NoEdits,
    Failed {
        reason: String,
        errors: Vec<String>,
        last: Option<(Applied, JsonMap)>,
    },
}

pub(super) struct LoopResult {
    pub(super) outcome: LoopOutcome,
    pub(super) suggestions: Vec<Value>,
    pub(super) llm_calls: u32,
}

pub(super) async fn run_patch_loop(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    target: &dyn Target,
    prompt: String,
    tag: &str,
    budget: usize,
) -> Result<LoopResult, EvolveError> {
    let options = ChatOptions::json().with_tag(tag);
    let mut messages = vec![ChatMessage::user(prompt)];
    let mut llm_calls = 0u32;
    let mut suggestions = Vec::new();
    let mut failure = LoopOutcome::NoEdits;
    // The template of `tag` (`evolve.skill` is `evolve_skill`): its reply format's example
    // values are no edit.
    let examples = prompts
        .get(&tag.replace('.', "_"))
        .map(prompt_example_texts)
        .unwrap_or_default();
    for round in 1..=PATCH_ROUNDS {
        llm_calls = llm_calls.saturating_add(1);
        let (reply, proposals) = match llm.chat(&messages, &options).await {
            Ok(reply) => {
                let read = target.proposals(tag, &reply.content);
                (Some(reply.content), read)
            }
            Err(error) if error.is_content() => (
                None,
                Err(UnreadableReply::new(
                    tag,
                    format!("the call returned no usable content ({error})"),
                )),
            ),
            Err(error) => return Err(error.into()),
        };
        let edits = match proposals {
            Err(unreadable) => {
                tracing::info!(round, %unreadable, "evolve reply unusable");
                let feedback = format!("{FEEDBACK_INVALID_JSON}\n- {}", unreadable.why);
                failure = LoopOutcome::Failed {
                    reason: format!("round {round}: {unreadable}"),
                    errors: Vec::new(),
                    last: None,
                };
                next_turn(&mut messages, reply, feedback);
                continue;
            }
            Ok(proposals) => {
                suggestions = proposals.suggestions;
                proposals.edits
            }
        };
        let proposed = edits.len();
        let mut echoes = Vec::new();
        let edits: Vec<Edit> = edits
            .into_iter()
            .filter(|edit| match placeholder_echo(edit, &examples) {
                Some(why) => {
                    echoes.push(why);
                    false
                }
                None => true,
            })
            .collect();
        if proposed > 0 && edits.is_empty() {
            let mut text = FEEDBACK_INVALID_CANDIDATE.to_owned();
            for why in &echoes {
                let _ = write!(text, "\n- {why}");
            }
            text.push_str("\nWrite the edits themselves, in the skill's own words.");
            failure = LoopOutcome::Failed {
                reason: format!("round {round}: every edit repeated the prompt's example text"),
                errors: echoes,
                last: None,
            };
            next_turn(&mut messages, reply, text);
            continue;
        }
        if edits.is_empty() {
            return Ok(LoopResult {
                outcome: LoopOutcome::NoEdits,
                suggestions,
                llm_calls,
            });
        }
        let clip = rank_and_clip(llm, prompts, &target.rank_document(), edits, budget).await?;
        llm_calls = llm_calls.saturating_add(clip.llm_calls);
        let applied = target.apply(clip.edits);
        let changed = applied
            .docs
            .iter()
            .zip(target.originals())
            .any(|(a, b)| a != b);
        if !changed {
            let mut text = FEEDBACK_NOT_APPLIED.to_owned();
            for report in &applied.reports {
                let _ = write!(
                    text,
                    "\n- edit {} ({}) with target {:?}: {}",
                    report.index,
                    report.op,
                    report.target,
                    explain(&report.status)
                );
            }
            text.push_str("\nQuote targets verbatim from the editable text and do not touch protected regions.");
            failure = LoopOutcome::Failed {
                reason: format!("round {round}: no edit could be applied"),
                errors: Vec::new(),
                last: Some((applied, clip.info)),
            };
            next_turn(&mut messages, reply, text);
            continue;
        }
        let errors = target.validate(&applied);
        if errors.is_empty() {
            return Ok(LoopResult {
                outcome: LoopOutcome::Success {
                    applied,
                    clip_info: clip.info,
                },
                suggestions,
                llm_calls,
            });
        }
        let mut text = FEEDBACK_INVALID_CANDIDATE.to_owned();
        for error in &errors {
            let _ = write!(text, "\n- {error}");
        }
        text.push_str("\nPropose edits that keep these checks passing.");
        failure = LoopOutcome::Failed {
            reason: format!("round {round}: the candidate failed validation"),
            errors,
            last: Some((applied, clip.info)),
        };
        next_turn(&mut messages, reply, text);
    }
    Ok(LoopResult {
        outcome: failure,
        suggestions,
        llm_calls,
    })
}

fn next_turn(messages: &mut Vec<ChatMessage>, reply: Option<String>, feedback: String) {
    if let Some(reply) = reply {
        messages.push(ChatMessage::assistant(reply));
    }
    messages.push(ChatMessage::user(feedback));
}

fn explain(status: &EditStatus) -> String {
    let why = match status {
        EditStatus::SkippedReplaceTargetNotFound | EditStatus::SkippedDeleteTargetNotFound => {
            "the target text does not occur in the document"
        }
        EditStatus::SkippedProtected => {
            "the target lies in a protected region (frontmatter, frozen section, appendix or slow-update guidance)"
        }
        EditStatus::SkippedMarkerInPayload => "the edit would create or destroy a region marker",
        EditStatus::SkippedEmptyContent => "the content is empty",
        EditStatus::SkippedInsertAfterMissingTarget
        | EditStatus::SkippedReplaceMissingTarget
        | EditStatus::SkippedDeleteMissingTarget => "the target is empty",
        EditStatus::SkippedUnknownOp => "unknown op (use append, insert_after, replace or delete)",
        _ if status.is_applied() => "applied, but the document did not change",
        _ => "skipped",
    };
    format!("{status} — {why}")
}

pub(super) fn region_text(
    text: &str,
    bounds: Result<Option<std::ops::Range<usize>>, impl std::fmt::Display>,
) -> Option<&str> {
    bounds.ok().flatten().and_then(|range| text.get(range))
}
