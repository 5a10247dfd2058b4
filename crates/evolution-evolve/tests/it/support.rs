//! Shared helpers of the integration tests.

use evolution_evolve::{EvolveOptions, EvolvePrompts, Evolver};
use evolution_testkit::ScriptedLlm;
use evolution_types::{EvolutionRecord, EvolutionStatus, LlmError, LlmErrorKind};

/// Templates that show every placeholder, so snapshots show what was filled in.
pub(crate) fn prompts() -> EvolvePrompts {
    EvolvePrompts {
        evolve_skill: "EVOLVE SKILL {{target_file}} ({{task_type}}), budget {{edit_budget}}\n--- skill ---\n{{skill_content}}\n--- stats ---\n{{stats}}\n--- failures ---\n{{failure_cases}}\n--- successes ---\n{{success_cases}}\n--- lapses ---\n{{lapse_notes}}\n--- rejected ---\n{{rejected_edits}}".to_owned(),
        evolve_system: "EVOLVE SYSTEM, budget {{edit_budget}}, frozen: {{frozen_sections}}\n--- prompt ---\n{{system_prompt}}\n--- stats ---\n{{stats}}\n--- failures ---\n{{failure_cases}}\n--- successes ---\n{{success_cases}}\n--- rejected ---\n{{rejected_edits}}".to_owned(),
        evolve_tool: "EVOLVE TOOL {{tool_name}}, budget {{edit_budget}}, frozen: {{frozen_section}}\n--- {{extract_file}} ---\n{{extract_prompt}}\n--- {{verify_file}} ---\n{{verify_prompt}}\n--- stats ---\n{{stats}}\n--- failures ---\n{{failure_spans}}\n--- successes ---\n{{success_spans}}\n--- rejected ---\n{{rejected_edits}}".to_owned(),
        evolve_rank: "RANK {{n_edits}} edits, keep {{max_edits}}\n--- document ---\n{{document}}\n--- edits ---\n{{edits}}".to_owned(),
        consolidate_system: "CONSOLIDATE {{count}} notes:\n{{notes}}".to_owned(),
        evolve_rewrite: "REWRITE within {{max_chars}} chars\n--- document ---\n{{document}}\n--- suggestions ---\n{{suggestions}}".to_owned(),
        preferences: String::new(),
    }
}

/// A transient provider failure.
pub(crate) fn transient() -> LlmError {
    LlmError::new(LlmErrorKind::ServerError, "upstream 503").with_status(503)
}

/// A content failure (empty reply).
pub(crate) fn empty_reply() -> LlmError {
    LlmError::new(LlmErrorKind::EmptyContent, "empty reply")
}

/// Default options with the reference implementation's profile (Chinese
/// section titles), which the system and tool fixtures are written for.
pub(crate) fn evolve_options() -> evolution_evolve::EvolveOptions {
    evolution_evolve::EvolveOptions {
        profile: evolution_types::Profile::video_qa(),
        ..evolution_evolve::EvolveOptions::default()
    }
}

/// An evolver on the scripted `llm`, with the templates of [`prompts`] and `options`.
pub(crate) fn evolver(llm: &ScriptedLlm, options: EvolveOptions) -> Evolver<'_> {
    Evolver::new(llm)
        .with_prompts(prompts())
        .with_options(options)
}

/// Asserts that `record` was accepted, showing its reason when it was not.
#[track_caller]
pub(crate) fn assert_accepted(record: &EvolutionRecord) {
    assert_eq!(
        record.status,
        EvolutionStatus::Accepted,
        "{}",
        record.reason
    );
}
