//! Skill files: the patch branch, the rewrite branch and lapse notes in the appendix.

use evolution_patch::{appendix_region_bounds, slow_update_region_bounds};
use evolution_types::{
    ChatMessage, ChatOptions, Edit, EditOp, EditReport, EditStatus, EvolutionRecord,
    EvolutionStatus, JsonMap, LlmProvider, SkillCasePack, SkillStore, TargetType, skill_file_for,
};
use serde_json::json;
use tracing::Instrument as _;

use crate::error::EvolveError;
use crate::format::{budget_text, format_case_samples};
use crate::prompts::EvolvePrompts;
use crate::replies::{EditsReply, UnreadableReply};
use crate::rewrite::rewrite_from_suggestions;
use crate::validate::validate_skill;

use super::appendix::{ConsolidatePolicy, add_lapse_notes};
use super::patch_loop::{LoopOutcome, region_text, run_patch_loop};
use super::single_doc::{
    SingleDoc, fill_from_attempt, relevant_rejected, skill_protected, stats_text,
};
use super::{EvolveOptions, PATCH_ROUNDS, SkillUpdateMode};

/// Evolves one skill file from its case pack.
///
/// The target is `pack.target_file`, or [`skill_file_for`] of the task
/// type (with the profile's choices) when that is empty. Without failure cases and lapse notes nothing
/// is called and the record is `Skipped`. Otherwise, for failure cases:
///
/// - **C, patch** (default): the `evolve_skill` prompt, then rank-and-clip
///   to the budget, apply with the frontmatter, appendix and slow-update
///   protected, and [`validate_skill`]; a round that fails (not JSON, no
///   applicable edit, invalid candidate) is retried once with feedback.
/// - **B, rewrite**: one `evolve_skill` call for suggestions and edits, then
///   [`rewrite_from_suggestions`]; the rewrite must keep the appendix and
///   slow-update regions byte-equal and pass [`validate_skill`].
///
/// When that produced no candidate and the pack has lapse notes, branch
/// **A** (lapse only) takes over: one synthesized `applied_append` report per
/// note, so that a caller does not mistake the round for a no-op. In every
/// branch the lapse notes then go to the appendix; when existing plus new
/// notes reach `consolidate_threshold`, would take more than `consolidate_chars`
/// characters or would overflow the appendix limit,
/// [`consolidate_appendix`](crate::consolidate::consolidate_appendix) runs and its result is
/// kept only when strictly shorter (guard G4). Notes that cannot be written (they still do
/// not fit, or the markers are malformed) never cost the body candidate: it is kept and the
/// reason says the appendix part was not applied and why.
///
/// Provider and store errors propagate; the record is built only at the end,
/// so an error leaves nothing behind.
pub(crate) async fn evolve_single_skill(
    llm: &dyn LlmProvider,
    pack: &SkillCasePack,
    store: &dyn SkillStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let span =
        tracing::info_span!("evolve_skill", task_type = %pack.task_type, file = %pack.target_file);
    let record = skill_inner(llm, pack, store, prompts, options)
        .instrument(span)
        .await?;
    tracing::info!(file = %record.target_file, status = ?record.status, calls = record.llm_calls, reason = %record.reason, "skill evolved");
    Ok(record)
}

async fn skill_inner(
    llm: &dyn LlmProvider,
    pack: &SkillCasePack,
    store: &dyn SkillStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let target_file = if pack.target_file.is_empty() {
        let files = store
            .list_skill_files()
            .map_err(|source| EvolveError::Store {
                file: format!("(skill for task type {:?})", pack.task_type),
                source,
            })?;
        skill_file_for(
            &files,
            &pack.task_type,
            &options.profile.task_skill_files,
            &options.profile.default_skill_file,
        )
    } else {
        pack.target_file.clone()
    };
    let original = store
        .read_skill(&target_file)
        .map_err(|source| EvolveError::Store {
            file: target_file.clone(),
            source,
        })?;
    let mut record = EvolutionRecord::new(
        target_file.clone(),
        TargetType::Skill,
        original.clone(),
        options.source_version.clone(),
    );
    let lapse_notes: Vec<String> = pack
        .lapse_notes
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    if pack.failure_cases.is_empty() && lapse_notes.is_empty() {
        record.reason = "no failure cases and no lapse notes: nothing to evolve".to_owned();
        return Ok(record);
    }

    // The defect branch (B or C) yields a body candidate, or why not.
    let mut body: Option<String> = None;
    let mut defect_note = String::new();
    let mut defect_failed = false;
    if !pack.failure_cases.is_empty() {
        let prompt = skill_prompt(
            prompts,
            pack,
            &target_file,
            &original,
            &lapse_notes,
            options,
        );
        match options.skill_update_mode {
            SkillUpdateMode::Patch => {
                let target = SingleDoc {
                    original: &original,
                    protected: skill_protected(&original),
                    validate: Box::new(|a, b| validate_skill(a, b).errors),
                };
                let result = run_patch_loop(
                    llm,
                    prompts,
                    &target,
                    prompt,
                    "evolve.skill",
                    options.edit_budget,
                )
                .await?;
                record.llm_calls = record.llm_calls.saturating_add(result.llm_calls);
                record.suggestions = result.suggestions;
                match result.outcome {
                    LoopOutcome::Success { applied, clip_info } => {
                        body = applied.docs.first().cloned();
                        defect_note = format!(
                            "patch: {} edit(s) applied and validated",
                            applied
                                .reports
                                .iter()
                                .filter(|r| r.status.is_applied())
                                .count()
                        );
                        fill_from_attempt(&mut record, applied, clip_info);
                    }
                    LoopOutcome::NoEdits => {
                        defect_note = "patch: the LLM proposed no edits".to_owned()
                    }
                    LoopOutcome::Failed {
                        reason,
                        errors,
                        last,
                    } => {
                        defect_failed = true;
                        defect_note =
                            format!("patch rejected after {PATCH_ROUNDS} rounds ({reason})");
                        record.validation_errors = errors;
                        if let Some((applied, clip_info)) = last {
                            fill_from_attempt(&mut record, applied, clip_info);
                        }
                    }
                }
            }
            SkillUpdateMode::Rewrite => {
                let (candidate, note, failed) =
                    rewrite_branch(llm, prompts, &original, prompt, &mut record).await?;
                body = candidate;
                defect_note = note;
                defect_failed = failed;
            }
        }
    }

    let lapse_only = body.is_none() && !lapse_notes.is_empty();
    let mut candidate = body.clone().unwrap_or_else(|| original.clone());
    let mut appendix_note = String::new();
    let mut appendix_failed = false;
    if !lapse_notes.is_empty() {
        let policy = ConsolidatePolicy {
            count: options.consolidate_threshold,
            chars: options.consolidate_chars,
        };
        let outcome = add_lapse_notes(llm, prompts, &candidate, &lapse_notes, policy).await;
        record.llm_calls = record.llm_calls.saturating_add(outcome.llm_calls);
        match outcome.doc {
            Ok(doc) => {
                candidate = doc;
                appendix_note = outcome.note;
            }
            // The body candidate stays: only the appendix part is left out, and said so.
            Err(why) => {
                appendix_failed = true;
                appendix_note = format!("appendix not applied: {why}");
            }
        }
    }
    if lapse_only && !appendix_failed {
        // Branch A: the body is unchanged; synthesize one applied report per note.
        record.clip_info = JsonMap::new();
        record
            .clip_info
            .insert("method".into(), json!("lapse_only"));
        record.edits = lapse_notes.iter().map(Edit::append).collect();
        record.apply_report = lapse_notes
            .iter()
            .enumerate()
            .map(|(i, note)| EditReport {
                index: i.saturating_add(1),
                op: EditOp::Append,
                status: EditStatus::AppliedAppend,
                target: String::new(),
                content_preview: note.chars().take(200).collect(),
            })
            .collect();
    }

    let branch = if lapse_only { "lapse-only" } else { "" };
    let mut parts: Vec<String> = Vec::new();
    if !branch.is_empty() {
        parts.push(branch.to_owned());
    }
    if !defect_note.is_empty() {
        parts.push(defect_note);
    }
    if appendix_failed && candidate == original {
        record.validation_errors.push(appendix_note.clone());
    }
    if !appendix_note.is_empty() {
        parts.push(appendix_note);
    }
    record.reason = parts.join("; ");
    if candidate == original {
        record.status = if defect_failed || appendix_failed {
            EvolutionStatus::Rejected
        } else {
            EvolutionStatus::Skipped
        };
        if record.reason.is_empty() {
            record.reason = "nothing changed".to_owned();
        } else {
            record.reason.push_str("; nothing changed");
        }
    } else {
        record.status = EvolutionStatus::Accepted;
        record.evolved_content = candidate;
    }
    Ok(record)
}

fn skill_prompt(
    prompts: &EvolvePrompts,
    pack: &SkillCasePack,
    target_file: &str,
    original: &str,
    lapse_notes: &[String],
    options: &EvolveOptions,
) -> String {
    let lapses = if lapse_notes.is_empty() {
        "(none)".to_owned()
    } else {
        lapse_notes
            .iter()
            .map(|n| format!("- {n}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    prompts.render(
        &prompts.evolve_skill,
        &[
            ("task_type", &pack.task_type),
            ("target_file", target_file),
            ("skill_content", original),
            ("stats", &stats_text(&pack.stats)),
            ("failure_cases", &format_case_samples(&pack.failure_cases)),
            ("success_cases", &format_case_samples(&pack.success_cases)),
            ("lapse_notes", &lapses),
            (
                "rejected_edits",
                &relevant_rejected(&options.rejected, &[target_file]),
            ),
            ("edit_budget", &budget_text(options.edit_budget)),
        ],
    )
}

/// Branch B. Returns the candidate (if any), a reason fragment, and whether
/// the branch failed (as opposed to having nothing to do).
async fn rewrite_branch(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    original: &str,
    prompt: String,
    record: &mut EvolutionRecord,
) -> Result<(Option<String>, String, bool), EvolveError> {
    const TAG: &str = "evolve.skill";
    let options = ChatOptions::json().with_tag(TAG);
    record.llm_calls = record.llm_calls.saturating_add(1);
    let read = match llm.chat(&[ChatMessage::user(prompt)], &options).await {
        Ok(reply) => EditsReply::read(TAG, &reply.content),
        Err(error) if error.is_content() => Err(UnreadableReply::new(
            TAG,
            format!("the call returned no usable content ({error})"),
        )),
        Err(error) => return Err(error.into()),
    };
    // A reply that cannot be read is a failure of the branch, never "no edits".
    let EditsReply { suggestions, edits } = match read {
        Ok(reply) => reply,
        Err(unreadable) => return Ok((None, format!("rewrite: {unreadable}"), true)),
    };
    record.suggestions.clone_from(&suggestions);
    record.edits.clone_from(&edits);
    if edits.is_empty() && suggestions.is_empty() {
        return Ok((None, "rewrite: the LLM proposed no edits".to_owned(), false));
    }
    let mut guidance = suggestions;
    guidance.extend(edits.iter().filter_map(|e| serde_json::to_value(e).ok()));
    let rewrite = rewrite_from_suggestions(llm, prompts, original, &guidance).await?;
    record.llm_calls = record.llm_calls.saturating_add(rewrite.llm_calls);
    record.clip_info.insert("method".into(), json!("rewrite"));
    let text = match rewrite.outcome {
        Ok(text) => text,
        Err(reason) => return Ok((None, format!("rewrite declined: {reason}"), true)),
    };
    let mut errors = validate_skill(original, &text).errors;
    for (name, before, after) in [
        (
            "appendix",
            region_text(original, appendix_region_bounds(original)),
            region_text(&text, appendix_region_bounds(&text)),
        ),
        (
            "slow-update guidance",
            region_text(original, slow_update_region_bounds(original)),
            region_text(&text, slow_update_region_bounds(&text)),
        ),
    ] {
        if before != after {
            errors.push(format!("rewrite: the {name} region was changed"));
        }
    }
    if errors.is_empty() {
        Ok((
            Some(text),
            "rewrite: whole document rewritten and validated".to_owned(),
            false,
        ))
    } else {
        record.validation_errors = errors;
        Ok((None, "rewrite rejected by validation".to_owned(), true))
    }
}
