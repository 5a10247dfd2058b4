//! The per-target evolution functions: skill (branches A/B/C), system
//! prompt and tool prompts.

use std::fmt::Write as _;

use evolution_patch::{
    append_to_appendix, appendix_region_bounds, apply_patch_with_report, extract_appendix_notes,
    replace_appendix_notes, slow_update_region_bounds,
};
use evolution_types::template::render as render_template;
use evolution_types::{
    ChatMessage, ChatOptions, Edit, EditOp, EditReport, EditStatus, EvolutionRecord,
    EvolutionStatus, JsonMap, LlmProvider, Profile, PromptStore, RejectedEdit, SkillCasePack,
    SkillStore, SystemCasePack, TargetType, ToolCasePack, skill_file_for,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::SOURCE_TAG;
use crate::consolidate::consolidate_appendix;
use crate::error::EvolveError;
use crate::format::{budget_text, format_case_samples, format_rejected_edits, format_spans};
use crate::json::parse_llm_json;
use crate::prompts::EvolvePrompts;
use crate::rank::rank_and_clip;
use crate::rewrite::rewrite_from_suggestions;
use crate::validate::{
    extract_section, frontmatter_range, validate_skill, validate_system, validate_tool,
};

/// Rounds of the patch loop: the first attempt plus one retry with feedback
/// (the reference implementation's `range(2)`).
pub const PATCH_ROUNDS: u32 = 2;

/// First line of the feedback sent when a reply was not the expected JSON.
pub const FEEDBACK_INVALID_JSON: &str =
    "Your reply could not be used: it must be one JSON object of the requested shape.";
/// First line of the feedback sent when no proposed edit could be applied.
pub const FEEDBACK_NOT_APPLIED: &str = "None of your edits could be applied to the document:";
/// First line of the feedback sent when the candidate failed validation.
pub const FEEDBACK_INVALID_CANDIDATE: &str =
    "Your edits were applied, but the resulting document failed validation:";

/// How a skill's defects are addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillUpdateMode {
    /// Small edits applied by the patch engine (branch C).
    #[default]
    Patch,
    /// A whole-document rewrite from the suggestions (branch B).
    Rewrite,
}

/// Settings shared by every target of an [`crate::Evolver`].
#[derive(Debug, Clone, PartialEq)]
pub struct EvolveOptions {
    /// Store version the documents are read from; copied into the record.
    pub source_version: String,
    /// Most edits applied per round; `usize::MAX` for no limit.
    pub edit_budget: usize,
    /// Appendix note count (existing plus new) at which notes are consolidated.
    pub consolidate_threshold: usize,
    /// Patch (default) or rewrite, for skills.
    pub skill_update_mode: SkillUpdateMode,
    /// Edits rejected earlier; those for the evolved file are shown to the LLM.
    pub rejected: Vec<RejectedEdit>,
    /// Frozen sections and other domain constants.
    pub profile: Profile,
    /// File name of the system prompt in the prompt store.
    pub system_prompt_file: String,
}

impl Default for EvolveOptions {
    /// Budget 8, consolidation at 6 notes, patch mode, `system.md`.
    fn default() -> Self {
        EvolveOptions {
            source_version: String::new(),
            edit_budget: 8,
            consolidate_threshold: 6,
            skill_update_mode: SkillUpdateMode::Patch,
            rejected: Vec::new(),
            profile: Profile::default(),
            system_prompt_file: "system.md".to_owned(),
        }
    }
}

// ---------------------------------------------------------------------------
// The patch loop shared by the three targets.

/// The documents of a target after applying edits.
struct Applied {
    docs: Vec<String>,
    edits: Vec<Edit>,
    reports: Vec<EditReport>,
}

/// What a target must provide to the patch loop.
trait Target: Sync {
    /// The edits a reply proposes, or why the reply has the wrong shape.
    fn proposals(&self, reply: &JsonMap) -> Result<Vec<Edit>, String>;
    /// The text the ranker sees.
    fn rank_document(&self) -> String;
    /// The original documents.
    fn originals(&self) -> Vec<&str>;
    /// Applies kept edits to the originals.
    fn apply(&self, edits: Vec<Edit>) -> Applied;
    /// Every failed validation check of a candidate.
    fn validate(&self, applied: &Applied) -> Vec<String>;
}

enum LoopOutcome {
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

struct LoopResult {
    outcome: LoopOutcome,
    suggestions: Vec<Value>,
    llm_calls: u32,
}

async fn run_patch_loop(
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
    for round in 1..=PATCH_ROUNDS {
        llm_calls = llm_calls.saturating_add(1);
        let reply = match llm.chat(&messages, &options).await {
            Ok(reply) => Some(reply.content),
            Err(error) if error.is_content() => None,
            Err(error) => return Err(error.into()),
        };
        let parsed = reply.as_deref().and_then(parse_llm_json);
        let proposals = match &parsed {
            None => Err("the reply is not a JSON object".to_owned()),
            Some(map) => target.proposals(map),
        };
        let feedback;
        let edits = match proposals {
            Err(why) => {
                tracing::info!(round, %why, "evolve reply unusable");
                feedback = format!("{FEEDBACK_INVALID_JSON}\n- {why}");
                failure = LoopOutcome::Failed {
                    reason: format!("round {round}: {why}"),
                    errors: Vec::new(),
                    last: None,
                };
                next_turn(&mut messages, reply, feedback);
                continue;
            }
            Ok(edits) => edits,
        };
        if let Some(Value::Array(items)) = parsed.as_ref().and_then(|m| m.get("suggestions")) {
            suggestions.clone_from(items);
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

/// Reads `key` as a list of edits; `Ok(None)` when the key is absent.
fn edits_at(reply: &JsonMap, key: &str) -> Result<Option<Vec<Edit>>, String> {
    let Some(value) = reply.get(key) else {
        return Ok(None);
    };
    let Value::Array(items) = value else {
        return Err(format!("`{key}` must be a list of edit objects"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            serde_json::from_value::<Edit>(item.clone()).map_err(|error| {
                format!(
                    "`{key}` item {} is not an edit object ({error})",
                    i.saturating_add(1)
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn region_text(
    text: &str,
    bounds: Result<Option<std::ops::Range<usize>>, impl std::fmt::Display>,
) -> Option<&str> {
    bounds.ok().flatten().and_then(|range| text.get(range))
}

// ---------------------------------------------------------------------------
// Skill and system targets: one document, one edit list.

/// Checks a candidate against its original, returning every failed check.
type Validator<'a> = Box<dyn Fn(&str, &str) -> Vec<String> + Send + Sync + 'a>;

struct SingleDoc<'a> {
    original: &'a str,
    protected: Vec<String>,
    validate: Validator<'a>,
}

impl Target for SingleDoc<'_> {
    fn proposals(&self, reply: &JsonMap) -> Result<Vec<Edit>, String> {
        edits_at(reply, "edits")?.ok_or_else(|| "the reply has no `edits` list".to_owned())
    }
    fn rank_document(&self) -> String {
        self.original.to_owned()
    }
    fn originals(&self) -> Vec<&str> {
        vec![self.original]
    }
    fn apply(&self, edits: Vec<Edit>) -> Applied {
        let spans: Vec<&str> = self.protected.iter().map(String::as_str).collect();
        let (doc, reports) = apply_patch_with_report(self.original, &edits, &spans);
        Applied {
            docs: vec![doc],
            edits,
            reports,
        }
    }
    fn validate(&self, applied: &Applied) -> Vec<String> {
        let candidate = applied.docs.first().map_or("", String::as_str);
        (self.validate)(self.original, candidate)
    }
}

fn skill_protected(doc: &str) -> Vec<String> {
    let mut spans = Vec::new();
    if let Some(front) = frontmatter_range(doc).and_then(|r| doc.get(r)) {
        spans.push(front.to_owned());
    }
    spans.extend(region_text(doc, appendix_region_bounds(doc)).map(str::to_owned));
    spans.extend(region_text(doc, slow_update_region_bounds(doc)).map(str::to_owned));
    spans
}

fn sections_protected<'a>(doc: &str, titles: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut spans: Vec<String> = titles
        .into_iter()
        .filter_map(|title| extract_section(doc, title))
        .map(str::to_owned)
        .collect();
    spans.extend(region_text(doc, appendix_region_bounds(doc)).map(str::to_owned));
    spans
}

fn relevant_rejected(rejected: &[RejectedEdit], files: &[&str]) -> String {
    let relevant: Vec<RejectedEdit> = rejected
        .iter()
        .filter(|r| files.contains(&r.target_file.as_str()))
        .cloned()
        .collect();
    format_rejected_edits(&relevant)
}

fn stats_text(stats: &JsonMap) -> String {
    serde_json::to_string_pretty(stats).unwrap_or_default()
}

/// Records a patch loop's outcome for the system and tool targets; `evolved` renders the
/// accepted documents as the record's `evolved_content`.
fn finish_patch_record(
    record: &mut EvolutionRecord,
    result: LoopResult,
    evolved: impl FnOnce(&[String]) -> String,
) {
    record.llm_calls = result.llm_calls;
    record.suggestions = result.suggestions;
    match result.outcome {
        LoopOutcome::Success { applied, clip_info } => {
            record.status = EvolutionStatus::Accepted;
            record.evolved_content = evolved(&applied.docs);
            record.reason = "patch applied and validated".to_owned();
            fill_from_attempt(record, applied, clip_info);
        }
        LoopOutcome::NoEdits => record.reason = "the LLM proposed no edits".to_owned(),
        LoopOutcome::Failed {
            reason,
            errors,
            last,
        } => {
            record.status = EvolutionStatus::Rejected;
            record.reason = format!("rejected after {PATCH_ROUNDS} rounds ({reason})");
            record.validation_errors = errors;
            if let Some((applied, clip_info)) = last {
                fill_from_attempt(record, applied, clip_info);
            }
        }
    }
}

fn fill_from_attempt(record: &mut EvolutionRecord, applied: Applied, clip_info: JsonMap) {
    record.edits = applied.edits;
    record.apply_report = applied.reports;
    record.clip_info = clip_info;
}

// ---------------------------------------------------------------------------
// Skills.

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
/// notes reach `consolidate_threshold`, [`consolidate_appendix`] runs and
/// its result is kept only when strictly shorter (guard G4).
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
    if lapse_only {
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
    let mut candidate = body.clone().unwrap_or_else(|| original.clone());
    let mut appendix_note = String::new();
    if !lapse_notes.is_empty() {
        match add_lapse_notes(
            llm,
            prompts,
            &candidate,
            &lapse_notes,
            options.consolidate_threshold,
        )
        .await
        {
            (Ok(doc), calls, note) => {
                record.llm_calls = record.llm_calls.saturating_add(calls);
                candidate = doc;
                appendix_note = note;
            }
            (Err(error), calls, _) => {
                record.llm_calls = record.llm_calls.saturating_add(calls);
                record.status = EvolutionStatus::Rejected;
                record.reason = format!("appendix: {error}; nothing applied");
                record.validation_errors.push(format!("appendix: {error}"));
                record.evolved_content = original;
                return Ok(record);
            }
        }
    }

    let branch = if lapse_only { "lapse-only" } else { "" };
    let mut parts: Vec<String> = Vec::new();
    if !branch.is_empty() {
        parts.push(branch.to_owned());
    }
    if !defect_note.is_empty() {
        parts.push(defect_note);
    }
    if !appendix_note.is_empty() {
        parts.push(appendix_note);
    }
    record.reason = parts.join("; ");
    if candidate == original {
        record.status = if defect_failed {
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
    render_template(
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
    let options = ChatOptions::json().with_tag("evolve.skill");
    record.llm_calls = record.llm_calls.saturating_add(1);
    let reply = match llm.chat(&[ChatMessage::user(prompt)], &options).await {
        Ok(reply) => reply.content,
        Err(error) if error.is_content() => String::new(),
        Err(error) => return Err(error.into()),
    };
    let Some(map) = parse_llm_json(&reply) else {
        return Ok((
            None,
            "rewrite: the reflection reply is not a JSON object".to_owned(),
            true,
        ));
    };
    let edits = edits_at(&map, "edits").ok().flatten().unwrap_or_default();
    let suggestions = match map.get("suggestions") {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
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

/// Appends lapse notes, consolidating at the threshold (G4 here). Returns the
/// document or an error text, the calls made, and a reason fragment.
async fn add_lapse_notes(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    doc: &str,
    notes: &[String],
    threshold: usize,
) -> (Result<String, String>, u32, String) {
    let existing = match extract_appendix_notes(doc) {
        Ok(existing) => existing,
        Err(error) => return (Err(error.to_string()), 0, String::new()),
    };
    let total = existing.len().saturating_add(notes.len());
    if total < threshold {
        let doc = append_to_appendix(doc, notes).map_err(|e| e.to_string());
        return (
            doc,
            0,
            format!("{} lapse note(s) appended to the appendix", notes.len()),
        );
    }
    let combined: Vec<String> = existing.into_iter().chain(notes.iter().cloned()).collect();
    let merged = consolidate_appendix(llm, prompts, &combined).await;
    if merged.notes.len() < combined.len() {
        let doc = replace_appendix_notes(doc, &merged.notes).map_err(|e| e.to_string());
        let note = format!(
            "appendix consolidated from {} to {} notes",
            combined.len(),
            merged.notes.len()
        );
        return (doc, merged.llm_calls, note);
    }
    // G4: a consolidation that is not strictly shorter is refused.
    let why = merged
        .fallback
        .unwrap_or_else(|| "not fewer notes".to_owned());
    let doc = append_to_appendix(doc, notes).map_err(|e| e.to_string());
    let note = format!(
        "{} lapse note(s) appended to the appendix (consolidation refused: {why})",
        notes.len()
    );
    (doc, merged.llm_calls, note)
}

// ---------------------------------------------------------------------------
// The system prompt.

/// Evolves the system prompt from the cross-task pack (branch C only: no
/// lapse notes, no rewrite, no appendix writes).
///
/// The profile's frozen `##` sections and the appendix are protected and
/// [`validate_system`] checks the candidate. A pack without failure cases is
/// `Skipped` without a call.
pub(crate) async fn evolve_system_prompt(
    llm: &dyn LlmProvider,
    pack: &SystemCasePack,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let span = tracing::info_span!("evolve_system", file = %options.system_prompt_file);
    let record = system_inner(llm, pack, store, prompts, options)
        .instrument(span)
        .await?;
    tracing::info!(file = %record.target_file, status = ?record.status, calls = record.llm_calls, reason = %record.reason, "system prompt evolved");
    Ok(record)
}

async fn system_inner(
    llm: &dyn LlmProvider,
    pack: &SystemCasePack,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let file = options.system_prompt_file.clone();
    let original = store
        .read_prompt(&file)
        .map_err(|source| EvolveError::Store {
            file: file.clone(),
            source,
        })?;
    let mut record = EvolutionRecord::new(
        file.clone(),
        TargetType::System,
        original.clone(),
        options.source_version.clone(),
    );
    if pack.failure_cases.is_empty() {
        record.reason = "no behaviour-pattern failures: nothing to evolve".to_owned();
        return Ok(record);
    }
    let profile = &options.profile;
    let frozen = profile
        .frozen_system_sections
        .iter()
        .map(|t| format!("## {t}"))
        .collect::<Vec<_>>()
        .join(", ");
    let prompt = render_template(
        &prompts.evolve_system,
        &[
            ("system_prompt", &original),
            ("frozen_sections", &frozen),
            ("stats", &stats_text(&pack.stats)),
            ("failure_cases", &format_case_samples(&pack.failure_cases)),
            ("success_cases", &format_case_samples(&pack.success_cases)),
            (
                "rejected_edits",
                &relevant_rejected(&options.rejected, &[&file]),
            ),
            ("edit_budget", &budget_text(options.edit_budget)),
        ],
    );
    let target = SingleDoc {
        original: &original,
        protected: sections_protected(&original, &profile.frozen_system_sections),
        validate: Box::new(move |a, b| validate_system(a, b, profile).errors),
    };
    let result = run_patch_loop(
        llm,
        prompts,
        &target,
        prompt,
        "evolve.system",
        options.edit_budget,
    )
    .await?;
    finish_patch_record(&mut record, result, |docs| {
        docs.first().cloned().unwrap_or_default()
    });
    Ok(record)
}

// ---------------------------------------------------------------------------
// Tool prompts.

struct ToolDocs<'a> {
    extract_file: &'a str,
    verify_file: &'a str,
    extract: &'a str,
    verify: &'a str,
    profile: &'a Profile,
}

const EXTRACT: &str = "extract";
const VERIFY: &str = "verify";

impl ToolDocs<'_> {
    fn protected(&self, doc: &str) -> Vec<String> {
        sections_protected(doc, [&self.profile.tool_output_format_section])
    }
}

impl Target for ToolDocs<'_> {
    fn proposals(&self, reply: &JsonMap) -> Result<Vec<Edit>, String> {
        let extract = edits_at(reply, "extract_edits")?;
        let verify = edits_at(reply, "verify_edits")?;
        if extract.is_none() && verify.is_none() {
            return Err("the reply has neither `extract_edits` nor `verify_edits`".to_owned());
        }
        // Pool both lists under one budget, tagging each edit with its file.
        fn tag(src: &'static str) -> impl Fn(Edit) -> Edit {
            move |mut e: Edit| {
                e.extra.insert(SOURCE_TAG.to_owned(), json!(src));
                e
            }
        }
        Ok(extract
            .unwrap_or_default()
            .into_iter()
            .map(tag(EXTRACT))
            .chain(verify.unwrap_or_default().into_iter().map(tag(VERIFY)))
            .collect())
    }
    fn rank_document(&self) -> String {
        format!(
            "=== {} (extract) ===\n{}\n\n=== {} (verify) ===\n{}",
            self.extract_file, self.extract, self.verify_file, self.verify
        )
    }
    fn originals(&self) -> Vec<&str> {
        vec![self.extract, self.verify]
    }
    fn apply(&self, edits: Vec<Edit>) -> Applied {
        // Split the pooled edits back by their tag, apply per file, and put
        // the reports back in pool order.
        let is_verify = |e: &Edit| e.extra.get(SOURCE_TAG).and_then(Value::as_str) == Some(VERIFY);
        let (verify_edits, extract_edits): (Vec<&Edit>, Vec<&Edit>) =
            edits.iter().partition(|e| is_verify(e));
        let run = |doc: &str, list: Vec<&Edit>| {
            let owned: Vec<Edit> = list.into_iter().cloned().collect();
            let spans = self.protected(doc);
            let spans: Vec<&str> = spans.iter().map(String::as_str).collect();
            apply_patch_with_report(doc, &owned, &spans)
        };
        let (extract_doc, extract_reports) = run(self.extract, extract_edits);
        let (verify_doc, verify_reports) = run(self.verify, verify_edits);
        let (mut next_extract, mut next_verify) =
            (extract_reports.into_iter(), verify_reports.into_iter());
        let reports = edits
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let report = if is_verify(e) {
                    next_verify.next()
                } else {
                    next_extract.next()
                };
                report.map(|mut r| {
                    r.index = i.saturating_add(1);
                    r
                })
            })
            .collect();
        Applied {
            docs: vec![extract_doc, verify_doc],
            edits,
            reports,
        }
    }
    fn validate(&self, applied: &Applied) -> Vec<String> {
        let extract = applied.docs.first().map_or("", String::as_str);
        let verify = applied.docs.get(1).map_or("", String::as_str);
        validate_tool(self.extract, extract, self.verify, verify, self.profile).errors
    }
}

fn tool_contents(extract: &str, verify: &str) -> String {
    json!({ EXTRACT: extract, VERIFY: verify }).to_string()
}

/// The extract and verify prompt files of a tool: the first of the pack's
/// `target_files` ending in `_extract.md` / `_verify.md`, else
/// `<tool>_extract.md` / `<tool>_verify.md`.
pub fn tool_prompt_files(pack: &ToolCasePack) -> (String, String) {
    let find = |suffix: &str| {
        pack.target_files
            .iter()
            .find(|f| f.ends_with(suffix))
            .cloned()
            .unwrap_or_else(|| format!("{}{suffix}", pack.tool_name))
    };
    (find("_extract.md"), find("_verify.md"))
}

/// Evolves a tool's extract and verify prompts together.
///
/// The `evolve_tool` reply's `extract_edits` and `verify_edits` are pooled
/// (each tagged in `extra["_src"]`) so that one budget and one ranking cover
/// both, then split back by the tag and applied per file with the
/// output-format section and the appendix protected; [`validate_tool`]
/// checks both. `original_content` and `evolved_content` are JSON
/// `{"extract": …, "verify": …}`; `target_file` is the extract file. A pack
/// without failure spans is `Skipped` without a call.
pub(crate) async fn evolve_single_tool(
    llm: &dyn LlmProvider,
    pack: &ToolCasePack,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let span = tracing::info_span!("evolve_tool", tool = %pack.tool_name);
    let record = tool_inner(llm, pack, store, prompts, options)
        .instrument(span)
        .await?;
    tracing::info!(file = %record.target_file, status = ?record.status, calls = record.llm_calls, reason = %record.reason, "tool prompts evolved");
    Ok(record)
}

async fn tool_inner(
    llm: &dyn LlmProvider,
    pack: &ToolCasePack,
    store: &dyn PromptStore,
    prompts: &EvolvePrompts,
    options: &EvolveOptions,
) -> Result<EvolutionRecord, EvolveError> {
    let (extract_file, verify_file) = tool_prompt_files(pack);
    let read = |file: &str| {
        store
            .read_prompt(file)
            .map_err(|source| EvolveError::Store {
                file: file.to_owned(),
                source,
            })
    };
    let extract = read(&extract_file)?;
    let verify = read(&verify_file)?;
    let mut record = EvolutionRecord::new(
        extract_file.clone(),
        TargetType::Tool,
        tool_contents(&extract, &verify),
        options.source_version.clone(),
    );
    if pack.failure_spans.is_empty() {
        record.reason = "no failure spans: nothing to evolve".to_owned();
        return Ok(record);
    }
    let profile = &options.profile;
    let frozen = format!("## {}", profile.tool_output_format_section);
    let prompt = render_template(
        &prompts.evolve_tool,
        &[
            ("tool_name", &pack.tool_name),
            ("extract_file", &extract_file),
            ("extract_prompt", &extract),
            ("verify_file", &verify_file),
            ("verify_prompt", &verify),
            ("frozen_section", &frozen),
            ("stats", &stats_text(&pack.stats)),
            ("failure_spans", &format_spans(&pack.failure_spans)),
            ("success_spans", &format_spans(&pack.success_spans)),
            (
                "rejected_edits",
                &relevant_rejected(&options.rejected, &[&extract_file, &verify_file]),
            ),
            ("edit_budget", &budget_text(options.edit_budget)),
        ],
    );
    let target = ToolDocs {
        extract_file: &extract_file,
        verify_file: &verify_file,
        extract: &extract,
        verify: &verify,
        profile,
    };
    let result = run_patch_loop(
        llm,
        prompts,
        &target,
        prompt,
        "evolve.tool",
        options.edit_budget,
    )
    .await?;
    finish_patch_record(&mut record, result, |docs| {
        let doc = |i: usize| docs.get(i).map_or("", String::as_str);
        tool_contents(doc(0), doc(1))
    });
    Ok(record)
}
