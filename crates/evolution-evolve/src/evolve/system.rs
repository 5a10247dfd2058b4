//! The system prompt: the patch branch with the frozen sections protected.

use evolution_types::{EvolutionRecord, LlmProvider, PromptStore, SystemCasePack, TargetType};
use tracing::Instrument as _;

use crate::error::EvolveError;
use crate::format::{budget_text, format_case_samples};
use crate::prompts::EvolvePrompts;
use crate::validate::validate_system;

use super::EvolveOptions;
use super::patch_loop::run_patch_loop;
use super::single_doc::{
    SingleDoc, finish_patch_record, relevant_rejected, sections_protected, stats_text,
};

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
    let prompt = prompts.render(
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
