//! The epoch loop: roll out the training questions, ask a [`Proposer`] for
//! candidates, gate each, keep the accepted, blacklist the rejected, write
//! slow-update guidance, and stop by the workflow's stopping rules.
//!
//! Proposals come through a trait so the loop does not depend on how they
//! are made: the kernel's diagnose → evolve pipeline is one proposer, a
//! scripted list in a test is another. The loop state is checkpointed after
//! every step, and every rollout is recorded under a deterministic run id,
//! so a run killed at any point resumes without repeating a rollout or a
//! proposer call.
//!
//! # What one candidate writes, in order
//!
//! A gated candidate reaches the durable state of a run in this order (the
//! names are the test-only [`failpoint`](crate::failpoint)s right after
//! each write):
//!
//! 1. the gate's rollouts, block by block, in the run log (both arms,
//!    under deterministic run ids; a resumed validation reuses the usable
//!    answers and runs the INFRA failures again);
//! 2. `gate-decided`: the checkpoint, holding the decision as
//!    [`LoopState::pending`] together with the e-LOND state that tested
//!    it (one atomic file replace: the test is spent exactly when the
//!    decision is kept);
//! 3. accepts only: `version-written`, the new version's directory in the
//!    store, then `head-moved`, the store's manifest pointing at it;
//! 4. `evolution-recorded`: the evolution record in the run log, with the
//!    version the accept wrote (a record equal to one already there is not
//!    stored twice);
//! 5. `gate-closed`: the checkpoint, holding the gate record and the
//!    candidate counted as judged, the pending decision gone;
//! 6. a provisional accept's probation: its rollouts in the run log, the
//!    verdict in the checkpoint, then a rollback of the store's head on a
//!    `rollback` verdict, then the checkpoint without the probation;
//! 7. once the run has finished, `staged`: the staged proposal written
//!    from the store's final version (by the front end).
//!
//! Resuming after a kill at any point: before 2, the candidate is gated
//! again (its recorded rollouts reused) and e-LOND tests it once; from 2
//! on, the saved decision is carried out ([`Gatekeeper::commit`]): an
//! accept whose version the store already holds keeps it instead of
//! writing it twice, a reject writes nothing. The store's head therefore
//! only ever moves to a version whose accept is in the checkpoint.
//!
//! One file per phase: `epoch` (the training run, the proposer's call, the
//! stopping rules, the holdout scores), `gating` (each candidate against
//! the current version), `watch` (probation of provisional accepts),
//! `guidance` (the slow update's candidates) and `documents` (a version's
//! documents, and rebasing a stale proposal); `proposal` and `state` hold
//! the public types.

mod documents;
mod epoch;
mod gating;
mod guidance;
mod noise;
mod proposal;
mod state;
mod watch;

use std::collections::{BTreeMap, BTreeSet};

use evolution_evolve::preferences::Preferences;
use evolution_types::{
    Checkpoint, CheckpointError, GeneratedQuestion, LlmProvider, VersionedStore,
};

pub use self::proposal::{Proposal, Proposals, ProposeError, ProposeRequest, Proposer};
pub use self::state::{DroppedProposal, EvolutionReport, LoopState, PendingGate, StopReason};
use crate::budget::BudgetExceeded;
use crate::data_split::DataSplit;
use crate::events::{HarnessEvent, Phases};
use crate::gatekeeper::Gatekeeper;
use crate::validate::{ValidationContext, ValidationError};

/// The label prefix of the slow update's candidates (`slow-update-<document>`).
pub const SLOW_UPDATE_LABEL: &str = "slow-update";

/// Settings of the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopConfig {
    /// Prefix of every run id of the loop (training, holdout).
    pub run_name: String,
    /// Epochs at most.
    pub max_epochs: u32,
    /// Questions diagnosis and evolution learn from.
    pub train: Vec<GeneratedQuestion>,
    /// Questions the gate validates on.
    pub gate: Vec<GeneratedQuestion>,
    /// The task types each skill document serves (document name → task types): a
    /// candidate that writes only such documents is gated on the gate questions of the
    /// task types they serve, not on every gate question. A candidate writing any other
    /// document (a prompt) is gated on every gate question. Empty: every candidate is.
    pub gate_scope: BTreeMap<String, BTreeSet<String>>,
    /// Questions scored once before and once after, never learned from.
    pub holdout: Vec<GeneratedQuestion>,
    /// Questions that judge a provisionally accepted version right after
    /// its accept ([`Probation::judge`](crate::Probation::judge)); disjoint from the other three
    /// sets. Empty: a provisional accept stands unwatched, with only the
    /// gate's own bound (`1/e_provisional`, or the e-LOND level under FDR
    /// control).
    pub probation: Vec<GeneratedQuestion>,
    /// Document names that are prompts; every other document is a skill.
    pub prompt_files: BTreeSet<String>,
    /// The slow-update template, or `None` to skip the slow update.
    pub slow_update_template: Option<String>,
    /// The project's house rules: the slow update's prompt carries their text, and a
    /// proposal that breaks one of their checks (against the documents it would replace) is
    /// dropped before it is gated, its reasons in [`EvolutionReport::dropped`] and a
    /// [`HarnessEvent::CandidateDropped`]. [`Preferences::default`] has none. (The
    /// proposer's prompts carry the text through its own templates.)
    pub preferences: Preferences,
    /// The pre-flight estimate, announced in [`HarnessEvent::RunStarted`].
    pub estimate: Option<crate::budget::Estimate>,
}

impl LoopConfig {
    /// The gate questions a candidate writing the documents `written` is gated on: those
    /// whose task type one of them serves ([`LoopConfig::gate_scope`]), or every gate
    /// question when one of them has no scope.
    pub fn gate_questions_for<'a>(
        &self,
        written: impl IntoIterator<Item = &'a String>,
    ) -> Vec<GeneratedQuestion> {
        scoped_questions(&self.gate, &self.gate_scope, written)
    }
}

/// The questions of `questions` whose task type one of the documents `written` serves
/// (`scope`: document name → task types), or all of them when one of the documents has no
/// entry in `scope` (or none is written).
pub fn scoped_questions<'a>(
    questions: &[GeneratedQuestion],
    scope: &BTreeMap<String, BTreeSet<String>>,
    written: impl IntoIterator<Item = &'a String>,
) -> Vec<GeneratedQuestion> {
    let mut tasks: BTreeSet<&str> = BTreeSet::new();
    let mut any = false;
    for name in written {
        any = true;
        match scope.get(name) {
            Some(served) => tasks.extend(served.iter().map(String::as_str)),
            None => return questions.to_vec(),
        }
    }
    if !any {
        return questions.to_vec();
    }
    questions
        .iter()
        .filter(|q| tasks.contains(q.task_type.as_str()))
        .cloned()
        .collect()
}

/// Why the loop stopped without a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopError {
    /// Validation, rollouts, store or budget (a budget stop is a clean stop:
    /// rerun with a larger budget and the same checkpoint to continue).
    #[error(transparent)]
    Validation(#[from] ValidationError),
    /// The proposer failed.
    #[error(transparent)]
    Propose(#[from] ProposeError),
    /// The checkpoint failed.
    #[error("checkpoint failed: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The slow update failed on a malformed document.
    #[error(transparent)]
    SlowUpdate(#[from] crate::slow_update::SlowUpdateError),
}

/// The services of the loop.
#[derive(Clone, Copy)]
pub struct LoopContext<'a> {
    /// Rollouts, recording, budget and events (its `resume_from` is used for resuming).
    pub validation: ValidationContext<'a>,
    /// The versioned documents.
    pub store: &'a dyn VersionedStore,
    /// Makes proposals.
    pub proposer: &'a dyn Proposer,
    /// For the slow update. Wrap it (and the proposer's provider) in
    /// [`crate::MeteredLlm`] over the same [`crate::Budget`] as `validation`
    /// to cap LLM calls, tokens and money, and give both the same
    /// `LlmJournal` (from `evolution-llm-cassette`) so that a resumed run
    /// repeats no finished call.
    pub llm: &'a dyn LlmProvider,
    /// Saves the loop state.
    pub checkpoint: &'a dyn Checkpoint,
    /// A record of tests kept beyond the run, when there is one: each candidate is also
    /// tested at the level it gives and not gated on the questions it excludes
    /// ([`crate::Gatekeeper::decide_with`]).
    pub ledger: Option<&'a dyn crate::ledger::TestLedger>,
}

impl std::fmt::Debug for LoopContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopContext").finish_non_exhaustive()
    }
}

/// Runs the loop to its end (or resumes it from `ctx.checkpoint`).
///
/// Each phase is announced as it begins ([`HarnessEvent::PhaseStarted`]),
/// and the budget charges what it meters to it ([`crate::Budget::usage_by_phase`]):
/// an epoch's training rollouts (`rollout`, subject the run id), the
/// proposer's call (its [`Proposer::opening_phase`], subject the training
/// run id; the kernel's proposer announces `diagnose`, then `propose` per
/// target document), each candidate's gate (`gate`, subject its label),
/// each probation (`probation`, subject the watched version), the slow
/// update per document (`slow_update`), and the holdout rollouts after the
/// last epoch (`rollout`, subject the holdout run id).
///
/// Before any rollout the train, gate, holdout and probation questions
/// must be disjoint ([`DataSplit`]), and every proposal's provenance is the
/// training set, so no candidate is gated or watched on its own evidence. Per epoch: the
/// training questions run on the current version (run id
/// `<run_name>_train_e<epoch>_<version>`); the proposer proposes; each
/// proposal is gated (a proposal whose documents an earlier accept of the
/// same epoch already changed is stale, since it was written against the
/// old text: it is rebased — its edits re-applied to the current text with
/// the patch engine — when it writes one document, its edits are its whole
/// change and each still applies where it asked; otherwise it is skipped);
/// then, from the second epoch on, the slow update
/// compares this epoch's training answers with the previous epoch's for
/// every skill document that changed and writes the guidance as a new
/// version. A provisionally accepted version is on [`Probation`](crate::Probation) at once,
/// before anything else is gated on top of it: it and the version it
/// replaced answer the probation questions ([`LoopConfig::probation`],
/// never the training questions it was written from), and a `rollback`
/// verdict restores the version it replaced ([`Probation::judge`](crate::Probation::judge)); the
/// verdict is kept in the accept's [`GateRecord`](crate::GateRecord).
/// The run stops after `max_epochs`, or when two consecutive
/// epochs proposed the same edits or did not raise training accuracy.
///
/// The run log keeps the evidence: the proposer's diagnosis of each epoch
/// ([`crate::RunRecorder::record_diagnosis`]) and each gated proposal's
/// [`EvolutionRecord`](evolution_types::EvolutionRecord), with `result_version` set to the version its accept
/// wrote ([`crate::RunRecorder::record_evolution`]), both under the
/// epoch's training run id.
///
/// A budget cap is a clean stop: the report says which cap
/// ([`StopReason::Budget`]) and holds what was decided so far; running again
/// with a larger budget and the same checkpoint continues the run.
///
/// # Errors
/// [`LoopError`]; the checkpoint then holds the state to resume from.
pub async fn run_evolution(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    gatekeeper: Gatekeeper,
) -> Result<EvolutionReport, LoopError> {
    let ids =
        |qs: &[GeneratedQuestion]| qs.iter().map(|q| q.question_id.clone()).collect::<Vec<_>>();
    let split = DataSplit::new(
        &ids(&config.train),
        &ids(&config.gate),
        &ids(&config.holdout),
    )?
    .with_probation(&ids(&config.probation))?;
    let provenance: BTreeSet<String> = split.train().clone();
    let vctx = ctx.validation;
    let mut state = match LoopState::load(ctx.checkpoint)? {
        Some(state) => {
            // The caps and the report count what the earlier legs spent.
            vctx.budget.add_earlier(&state.usage, &state.usage_by_phase);
            state
        }
        None => {
            let initial_version = ctx.store.current_version().map_err(ValidationError::from)?;
            vctx.events.emit(&HarnessEvent::RunStarted {
                run_id: config.run_name.clone(),
                estimate: config.estimate.clone(),
            });
            LoopState {
                epoch: 0,
                train_version: None,
                proposals: None,
                judged: 0,
                slow_update_proposed: false,
                gatekeeper,
                records: Vec::new(),
                probations: Vec::new(),
                rejected: Vec::new(),
                train_accuracy: Vec::new(),
                edit_history: Vec::new(),
                stale_epochs: 0,
                initial_version,
                stopped: None,
                pending: None,
                dropped: Vec::new(),
                ranked: false,
                screened: BTreeSet::new(),
                ranked_out: BTreeSet::new(),
                gated_in_epoch: 0,
                usage: crate::budget::Usage::default(),
                usage_by_phase: BTreeMap::new(),
            }
        }
    };
    let driven = drive(ctx, config, &provenance, &mut state).await;
    let (holdout_before, holdout_after, stop_reason) = match driven {
        Ok((before, after)) => {
            state.checkpoint(ctx)?;
            (
                before,
                after,
                state.stopped.clone().unwrap_or(StopReason::MaxEpochs),
            )
        }
        Err(error) => match budget_cause(&error, vctx) {
            Some(exceeded) => {
                // The state saved last is where a run with a larger budget continues; it
                // also keeps what this leg spent after it, so a run again does not pass the
                // cap.
                if let Some(mut saved) = LoopState::load(ctx.checkpoint)? {
                    saved.checkpoint(ctx)?;
                }
                (None, None, StopReason::Budget(exceeded))
            }
            None => return Err(error),
        },
    };
    vctx.events.emit(&HarnessEvent::RunFinished {
        run_id: config.run_name.clone(),
        usage: vctx.budget.usage(),
    });
    Ok(EvolutionReport {
        stop_reason,
        epochs: state.epoch,
        initial_version: state.initial_version.clone(),
        final_version: ctx.store.current_version().map_err(ValidationError::from)?,
        records: state.records.clone(),
        dropped: state.dropped.clone(),
        holdout_before,
        holdout_after,
    })
}

/// Announces the phases of epoch `epoch` to the run's events, charging its budget.
fn phases(ctx: LoopContext<'_>, epoch: u32) -> Phases<'_> {
    Phases::new(ctx.validation.events, ctx.validation.budget, epoch)
}

/// The budget cap behind `error`, if a cap caused it (directly, or through
/// a proposer whose LLM calls the budget refused).
fn budget_cause(error: &LoopError, vctx: ValidationContext<'_>) -> Option<BudgetExceeded> {
    match error {
        LoopError::Validation(ValidationError::Budget(exceeded)) => Some(exceeded.clone()),
        LoopError::Propose(_) => vctx.budget.stopped(),
        _ => None,
    }
}

/// The epochs, then the holdout scores.
async fn drive(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
) -> Result<(Option<f64>, Option<f64>), LoopError> {
    let mut previous_train = None;
    while state.stopped.is_none() {
        let train = epoch::run_training(ctx, config, state).await?;
        noise::choose_answers(ctx, config, state, &train).await?;
        epoch::propose(ctx, config, state, &train).await?;
        loop {
            gating::gate_pending(ctx, config, provenance, state, &train).await?;
            if state.slow_update_proposed {
                break;
            }
            guidance::propose_slow_update(ctx, config, state, &train, &mut previous_train).await?;
        }
        epoch::finish(ctx, config, state, &train.answers)?;
        previous_train = Some(train);
    }
    epoch::holdout_scores(ctx, config, state).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(id: &str, task: &str) -> GeneratedQuestion {
        GeneratedQuestion {
            question_id: id.to_owned(),
            task_type: task.to_owned(),
            ..GeneratedQuestion::default()
        }
    }

    #[test]
    fn a_skills_candidate_is_gated_on_the_task_types_it_serves() {
        let gate = vec![
            question("a", "refund"),
            question("b", "billing"),
            question("c", "refund"),
            question("d", "other"),
        ];
        let scope = BTreeMap::from([
            (
                "refunds.md".to_owned(),
                BTreeSet::from(["refund".to_owned()]),
            ),
            (
                "billing.md".to_owned(),
                BTreeSet::from(["billing".to_owned(), "other".to_owned()]),
            ),
        ]);
        let ids = |written: &[&str]| -> Vec<String> {
            let written: Vec<String> = written.iter().map(|w| (*w).to_owned()).collect();
            scoped_questions(&gate, &scope, &written)
                .into_iter()
                .map(|q| q.question_id)
                .collect()
        };
        assert_eq!(ids(&["refunds.md"]), ["a", "c"]);
        assert_eq!(ids(&["billing.md"]), ["b", "d"]);
        assert_eq!(ids(&["refunds.md", "billing.md"]), ["a", "b", "c", "d"]);
        // A prompt serves every task type; so does a candidate that writes nothing.
        assert_eq!(ids(&["refunds.md", "system.md"]).len(), 4);
        assert_eq!(ids(&[]).len(), 4);
    }
}
