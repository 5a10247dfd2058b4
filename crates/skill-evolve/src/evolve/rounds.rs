//! The rounds of `skill-evolve evolve`: the kernel's reflect → meta-reflect
//! loop (`evolution_evolve::reflect`) with the command's flags, a spinner,
//! and its errors and stop reasons in the command's words.

use std::time::Duration;

use evolution_evolve::EditBudgetSchedule;
use evolution_evolve::preferences::Checks;
use evolution_evolve::reflect::{ReflectError, ReflectOptions, Round, StopReason, reflect_loop};
use evolution_harness::PromptTemplates;
use evolution_types::LlmProvider;
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::EvolveArgs;
use evolution_project::error::bad_option;
use evolution_project::evolve::trajectories::Trajectory;

/// What the rounds did: every round, why they stopped, and the LLM calls made.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// The rounds, in order.
    pub(super) rounds: Vec<Round>,
    /// Why the loop stopped.
    pub(super) stop_reason: String,
    /// LLM calls made (retries included).
    pub(super) llm_calls: u32,
}

/// The spinner shown while the rounds run.
fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_message("starting");
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// The rounds with `templates` (the reflect, meta-reflect and ranking
/// prompts, carrying the house rules) and the house rules' `checks` (a round whose
/// candidate breaks one is dropped); returns the last accepted candidate (the original when none)
/// and what the rounds did.
pub(super) async fn evolve_loop(
    llm: &dyn LlmProvider,
    original: &str,
    failures: &[Trajectory],
    args: &EvolveArgs,
    schedule: &EditBudgetSchedule,
    templates: &PromptTemplates,
    checks: &Checks,
) -> anyhow::Result<(String, Outcome)> {
    let options = ReflectOptions {
        rounds: u32::from(args.rounds),
        batch_size: usize::from(args.batch_size),
        schedule: *schedule,
        rank_prompts: templates.evolve.clone(),
        checks: checks.clone(),
    };
    let progress = spinner();
    let result = reflect_loop(
        llm,
        &templates.reflect,
        original,
        failures,
        &options,
        &|message: &str| progress.set_message(message.to_owned()),
    )
    .await;
    progress.finish_and_clear();
    let reflection = result.map_err(|e| match e {
        ReflectError::Budget(e) => bad_option(e.to_string()),
        other => anyhow::Error::new(other),
    })?;
    let stop_reason = match reflection.stop {
        StopReason::RoundsExhausted { rounds } => format!("reached --rounds {rounds}"),
        other => other.to_string(),
    };
    Ok((
        reflection.document,
        Outcome {
            rounds: reflection.rounds,
            stop_reason,
            llm_calls: reflection.llm_calls,
        },
    ))
}
