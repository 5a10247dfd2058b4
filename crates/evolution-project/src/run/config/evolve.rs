//! `[evolve]`: the edit budget schedule, the system prompt to evolve, how skills are updated
//! and when appendix notes are merged, checked with the command's flags winning.

use evolution_evolve::{EditBudgetSchedule, EvolveOptions, SkillUpdateMode};
use evolution_patch::APPENDIX_MAX_CHARS;
use serde::Deserialize;
use toml::Spanned;

use super::{EditSchedule, RunOptions, Source};
use crate::error::bad_option;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EvolveSection {
    schedule: Option<EditSchedule>,
    max_edits: Option<usize>,
    min_edits: Option<usize>,
    system_prompt: Option<Spanned<String>>,
    skill_update: Option<SkillUpdateMode>,
    consolidate_notes: Option<Spanned<usize>>,
    consolidate_chars: Option<Spanned<usize>>,
}

/// The checked `[evolve]` keys (flags winning).
pub(super) struct EvolveChecked {
    pub(super) schedule: EditBudgetSchedule,
    pub(super) schedule_text: String,
    pub(super) system_prompt: String,
    pub(super) skill_update: SkillUpdateMode,
    pub(super) consolidate_notes: usize,
    pub(super) consolidate_chars: usize,
}

/// `[evolve]`: the edit budget schedule and the system prompt's name.
pub(super) fn check_evolve(
    src: &Source<'_>,
    args: &RunOptions,
    evolve: &EvolveSection,
    max_epochs: u32,
    prompt_files: &[String],
) -> anyhow::Result<EvolveChecked> {
    let schedule_arg = args
        .schedule
        .or(evolve.schedule)
        .unwrap_or(EditSchedule::Constant);
    let max_edits = args.max_edits.or(evolve.max_edits).unwrap_or(8);
    let min_edits = args.min_edits.or(evolve.min_edits).unwrap_or(2);
    let schedule = schedule_arg.schedule(max_edits, min_edits);
    schedule
        .budget_at(0, u64::from(max_epochs))
        .map_err(|e| bad_option(format!("max_edits/min_edits (flags or [evolve]): {e}")))?;
    let schedule_text = match schedule_arg {
        EditSchedule::Constant => format!("constant, {max_edits} edits per candidate"),
        EditSchedule::Linear => format!("linear, {max_edits} → {min_edits} edits per candidate"),
        EditSchedule::Cosine => format!("cosine, {max_edits} → {min_edits} edits per candidate"),
        EditSchedule::Autonomous => "autonomous, no edit limit".to_owned(),
    };
    let system_prompt = match &evolve.system_prompt {
        Some(name) => {
            let text = name.get_ref().trim();
            if text.is_empty() || text.contains(['/', '\\']) {
                return Err(src.at(
                    name.span(),
                    "[evolve] system_prompt must be a file name in the prompts folder".to_owned(),
                ));
            }
            if !prompt_files.is_empty() && !prompt_files.iter().any(|f| f == text) {
                return Err(src.at(
                    name.span(),
                    format!(
                        "[evolve] system_prompt {text:?} is not in the prompts folder (it holds {})",
                        prompt_files.join(", ")
                    ),
                ));
            }
            text.to_owned()
        }
        None => EvolveOptions::default().system_prompt_file,
    };
    let defaults = EvolveOptions::default();
    let consolidate_notes = match &evolve.consolidate_notes {
        Some(n) if *n.get_ref() < 2 => {
            return Err(src.at(
                n.span(),
                format!(
                    "[evolve] consolidate_notes must be at least 2 (notes are merged into fewer), \
                     not {}",
                    n.get_ref()
                ),
            ));
        }
        Some(n) => *n.get_ref(),
        None => defaults.consolidate_threshold,
    };
    let consolidate_chars = match &evolve.consolidate_chars {
        Some(n) if !(1..=APPENDIX_MAX_CHARS).contains(n.get_ref()) => {
            return Err(src.at(
                n.span(),
                format!(
                    "[evolve] consolidate_chars must be 1 to {APPENDIX_MAX_CHARS} (the appendix \
                     limit, past which notes are always consolidated), not {}",
                    n.get_ref()
                ),
            ));
        }
        Some(n) => *n.get_ref(),
        None => defaults.consolidate_chars,
    };
    Ok(EvolveChecked {
        schedule,
        schedule_text,
        system_prompt,
        skill_update: evolve.skill_update.unwrap_or_default(),
        consolidate_notes,
        consolidate_chars,
    })
}
