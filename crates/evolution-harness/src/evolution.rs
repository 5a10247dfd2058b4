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

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use evolution_types::{
    Checkpoint, CheckpointError, DiagnosisResult, EvolutionRecord, EvolutionResult,
    EvolutionStatus, GeneratedQuestion, LlmProvider, Prediction, RejectedEdit, TargetType,
    VersionedStore,
};
use serde::{Deserialize, Serialize};

use crate::budget::BudgetExceeded;
use crate::events::{Arm, HarnessEvent};
use crate::gatekeeper::{GateRecord, Gatekeeper};
use crate::probation::Probation;
use crate::runner::Workspace;
use crate::slow_update::{ComparisonPair, slow_update};
use crate::validate::{Candidate, DataSplit, ValidationContext, ValidationError, run_arm};

/// The label prefix of the slow update's candidates (`slow-update-<document>`).
pub const SLOW_UPDATE_LABEL: &str = "slow-update";

/// One candidate change: whole documents to write, with the record of how
/// they were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// A short label, unique within the epoch.
    pub label: String,
    /// Document name → full new text.
    pub writes: BTreeMap<String, String>,
    /// How the change was made (its edits feed the blacklist on rejection).
    pub record: EvolutionRecord,
}

/// What a proposer gets to work from.
#[derive(Debug, Clone, Copy)]
pub struct ProposeRequest<'a> {
    /// 0-based epoch.
    pub epoch: u32,
    /// Epochs at most.
    pub max_epochs: u32,
    /// Run id of this epoch's training rollouts (recorded in the run log).
    pub train_run_id: &'a str,
    /// The documents of the current version.
    pub workspace: &'a Workspace,
    /// Every edit rejected so far, with its gate evidence.
    pub rejected: &'a [RejectedEdit],
}

/// What a proposer made for an epoch: the candidates and, when it
/// diagnosed the training run, the diagnosis they came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Proposals {
    /// The candidates, in the order to gate them (none means nothing to change).
    pub proposals: Vec<Proposal>,
    /// The diagnosis of the epoch's training run, stored in the run log by
    /// the loop ([`crate::RunRecorder::record_diagnosis`]).
    pub diagnosis: Option<DiagnosisResult>,
}

impl From<Vec<Proposal>> for Proposals {
    fn from(proposals: Vec<Proposal>) -> Self {
        Proposals {
            proposals,
            diagnosis: None,
        }
    }
}

/// Why a proposer failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProposeError {
    /// Diagnosing the training run failed (its LLM, run log or store, or
    /// unusable settings).
    #[error("proposer failed: diagnosis: {0}")]
    Diagnosis(#[from] evolution_diagnose::DiagnoseError),
    /// The edit-budget schedule cannot give a budget for this epoch.
    #[error("proposer failed: edit budget: {0}")]
    EditBudget(#[from] evolution_evolve::BudgetError),
    /// An evolve call failed (its LLM or its store).
    #[error("proposer failed: evolve {target}: {source}")]
    Evolve {
        /// What was being evolved: `skill`, `system prompt` or `tool`.
        target: &'static str,
        /// The engine's error.
        #[source]
        source: evolution_evolve::EvolveError,
    },
    /// An evolved record's content is not what its kind promises (a tool
    /// record that is not a JSON object of its two prompts).
    #[error("proposer failed: unreadable {what}: {message}")]
    Unreadable {
        /// What could not be read.
        what: &'static str,
        /// Why.
        message: String,
    },
    /// A proposer of another kind (not the kernel's) failed.
    #[error("proposer failed: {message}")]
    Other {
        /// What went wrong.
        message: String,
    },
}

/// Makes candidate changes from an epoch's evidence.
#[async_trait]
pub trait Proposer: Send + Sync {
    /// Proposals for this epoch.
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError>;
}

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
    /// Questions scored once before and once after, never learned from.
    pub holdout: Vec<GeneratedQuestion>,
    /// Questions that judge a provisionally accepted version right after
    /// its accept ([`Probation::judge`]); disjoint from the other three
    /// sets. Empty: a provisional accept stands unwatched, with only the
    /// gate's own bound (`1/e_provisional`, or the e-LOND level under FDR
    /// control).
    pub probation: Vec<GeneratedQuestion>,
    /// Document names that are prompts; every other document is a skill.
    pub prompt_files: BTreeSet<String>,
    /// The slow-update template, or `None` to skip the slow update.
    pub slow_update_template: Option<String>,
    /// The pre-flight estimate, announced in [`HarnessEvent::RunStarted`].
    pub estimate: Option<crate::budget::Estimate>,
}

/// Why the loop stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A budget cap was reached. The checkpoint holds where the run was:
    /// run again with a larger budget to continue.
    Budget(BudgetExceeded),
    /// `max_epochs` epochs ran.
    MaxEpochs,
    /// Two consecutive epochs proposed the same edits.
    RepeatedEdits,
    /// Two consecutive epochs did not improve training accuracy.
    NoImprovement,
}

/// Where a run is: saved after every step, so a killed run resumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    /// The current epoch (0-based).
    pub epoch: u32,
    /// The version this epoch's training run used, once chosen.
    pub train_version: Option<String>,
    /// This epoch's proposals, once made.
    pub proposals: Option<Vec<Proposal>>,
    /// Proposals of this epoch already judged.
    pub judged: usize,
    /// Whether this epoch's slow-update candidates were already proposed
    /// (they join [`LoopState::proposals`] after the proposer's).
    #[serde(default)]
    pub slow_update_proposed: bool,
    /// The gate's state (FDR, baseline cache).
    pub gatekeeper: Gatekeeper,
    /// Every proposal judged so far.
    pub records: Vec<GateRecord>,
    /// Provisionally accepted versions whose probation has not finished.
    pub probations: Vec<Probation>,
    /// The blacklist.
    pub rejected: Vec<RejectedEdit>,
    /// Training accuracy per finished epoch.
    pub train_accuracy: Vec<f64>,
    /// The proposals' edits per finished epoch (for the repeated-edits rule).
    pub edit_history: Vec<Vec<String>>,
    /// Epochs in a row without improvement or with repeated edits.
    pub stale_epochs: u32,
    /// The version the run started from.
    pub initial_version: String,
    /// Set once the loop has stopped.
    pub stopped: Option<StopReason>,
}

impl LoopState {
    /// The state saved in `checkpoint`, if any.
    ///
    /// # Errors
    /// The checkpoint's own error, or [`CheckpointError::Corrupt`] when the
    /// saved value is not a loop state.
    pub fn load(checkpoint: &dyn Checkpoint) -> Result<Option<LoopState>, CheckpointError> {
        checkpoint
            .load()?
            .map(|value| {
                serde_json::from_value(value).map_err(|e| CheckpointError::Corrupt {
                    message: format!("not a loop state: {e}"),
                })
            })
            .transpose()
    }

    /// Saves this state in `checkpoint`, replacing the previous one.
    ///
    /// # Errors
    /// The checkpoint's own error, or [`CheckpointError::Corrupt`] when the
    /// state cannot be turned into JSON.
    pub fn save(&self, checkpoint: &dyn Checkpoint) -> Result<(), CheckpointError> {
        let value = serde_json::to_value(self).map_err(|e| CheckpointError::Corrupt {
            message: format!("loop state not serialisable: {e}"),
        })?;
        checkpoint.save(&value)
    }
}

/// What a finished run reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionReport {
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Epochs run.
    pub epochs: u32,
    /// The version it started from.
    pub initial_version: String,
    /// The version it ended with.
    pub final_version: String,
    /// Every proposal with its gate record.
    pub records: Vec<GateRecord>,
    /// Holdout accuracy of the initial version (INFRA failures excluded).
    pub holdout_before: Option<f64>,
    /// Holdout accuracy of the final version.
    pub holdout_after: Option<f64>,
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
}

impl std::fmt::Debug for LoopContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopContext").finish_non_exhaustive()
    }
}

fn workspace(
    store: &dyn VersionedStore,
    config: &LoopConfig,
) -> Result<Workspace, ValidationError> {
    let version = store.current_version()?;
    workspace_at(store, config, &version)
}

fn workspace_at(
    store: &dyn VersionedStore,
    config: &LoopConfig,
    version: &str,
) -> Result<Workspace, ValidationError> {
    let mut ws = Workspace::new(version);
    for (name, text) in store.documents(version)? {
        if config.prompt_files.contains(&name) {
            ws.prompts.insert(name, text);
        } else {
            ws.skills.insert(name, text);
        }
    }
    Ok(ws)
}

fn with_writes(
    base: &Workspace,
    label: &str,
    writes: &BTreeMap<String, String>,
    config: &LoopConfig,
) -> Workspace {
    let mut ws = base.clone();
    ws.version = label.to_owned();
    for (name, text) in writes {
        if config.prompt_files.contains(name) {
            ws.prompts.insert(name.clone(), text.clone());
        } else {
            ws.skills.insert(name.clone(), text.clone());
        }
    }
    ws
}

fn document<'w>(ws: &'w Workspace, name: &str) -> Option<&'w String> {
    ws.skills.get(name).or_else(|| ws.prompts.get(name))
}

/// A stale proposal's change carried over to the current documents: when
/// it writes one document, its record's target, its edits are its whole
/// change (re-applied to the text it was written against they give its
/// text) and each of them still applies where it asked on the current
/// text, the result is the new write. `None` otherwise: the proposal is
/// skipped.
fn rebase(
    proposal: &Proposal,
    then: &Workspace,
    now: &Workspace,
) -> Option<BTreeMap<String, String>> {
    let mut writes = proposal.writes.iter();
    let (name, written) = writes.next()?;
    let record = &proposal.record;
    if writes.next().is_some() || *name != record.target_file || record.edits.is_empty() {
        return None;
    }
    let applied = |text: &str| {
        let (out, reports) = evolution_patch::apply_patch_with_report(text, &record.edits, &[]);
        let clean = reports
            .iter()
            .all(|r| r.status.kind() == evolution_types::EditStatusKind::Applied);
        clean.then_some(out)
    };
    if applied(document(then, name)?)? != *written {
        return None;
    }
    let current = document(now, name)?;
    let rebased = applied(current)?;
    (rebased != *current).then(|| BTreeMap::from([(name.clone(), rebased)]))
}

fn accuracy(predictions: &BTreeMap<String, Prediction>) -> Option<f64> {
    let usable: Vec<bool> = predictions
        .values()
        .filter(|p| !crate::validate::is_failure(p))
        .map(|p| p.correct)
        .collect();
    if usable.is_empty() {
        return None;
    }
    let right = usable.iter().filter(|c| **c).count();
    #[expect(
        clippy::cast_precision_loss,
        reason = "question counts stay far below 2^53, where the cast is exact"
    )]
    Some(right as f64 / usable.len() as f64)
}

fn edit_key(proposals: &[Proposal]) -> Vec<String> {
    let mut keys: Vec<String> = proposals
        .iter()
        .flat_map(|p| {
            p.record.edits.iter().map(|e| {
                format!(
                    "{}|{}|{}|{}",
                    p.record.target_file,
                    e.op.as_str(),
                    e.target,
                    e.content
                )
            })
        })
        .collect();
    keys.sort();
    keys
}

/// Runs the loop to its end (or resumes it from `ctx.checkpoint`).
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
/// version. A provisionally accepted version is on [`Probation`] at once,
/// before anything else is gated on top of it: it and the version it
/// replaced answer the probation questions ([`LoopConfig::probation`],
/// never the training questions it was written from), and a `rollback`
/// verdict restores the version it replaced ([`Probation::judge`]); the
/// verdict is kept in the accept's [`GateRecord`].
/// The run stops after `max_epochs`, or when two consecutive
/// epochs proposed the same edits or did not raise training accuracy.
///
/// The run log keeps the evidence: the proposer's diagnosis of each epoch
/// ([`crate::RunRecorder::record_diagnosis`]) and each gated proposal's
/// [`EvolutionRecord`], with `result_version` set to the version its accept
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
        Some(state) => state,
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
            }
        }
    };
    let driven = drive(ctx, config, &provenance, &mut state).await;
    let (holdout_before, holdout_after, stop_reason) = match driven {
        Ok((before, after)) => (
            before,
            after,
            state.stopped.clone().unwrap_or(StopReason::MaxEpochs),
        ),
        Err(error) => match budget_cause(&error, vctx) {
            Some(exceeded) => (None, None, StopReason::Budget(exceeded)),
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
        holdout_before,
        holdout_after,
    })
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
    let save = |state: &LoopState| state.save(ctx.checkpoint).map_err(LoopError::Checkpoint);
    let vctx = ctx.validation;
    let mut previous_train: Option<(Workspace, BTreeMap<String, Prediction>)> = None;

    while state.stopped.is_none() {
        let epoch = state.epoch;
        let train_version = match &state.train_version {
            Some(version) => version.clone(),
            None => {
                let version = ctx.store.current_version().map_err(ValidationError::from)?;
                state.train_version = Some(version.clone());
                save(state)?;
                version
            }
        };
        let train_ws = workspace_at(ctx.store, config, &train_version)?;
        let train_run_id = format!("{}_train_e{epoch}_{}", config.run_name, train_ws.version);
        let (train, _) = run_arm(vctx, &train_run_id, &train_ws, &config.train, Arm::Plain).await?;

        if state.proposals.is_none() {
            let Proposals {
                mut proposals,
                diagnosis,
            } = ctx
                .proposer
                .propose(ProposeRequest {
                    epoch,
                    max_epochs: config.max_epochs,
                    train_run_id: &train_run_id,
                    workspace: &train_ws,
                    rejected: &state.rejected,
                })
                .await?;
            for p in &mut proposals {
                p.record.source_version.clone_from(&train_ws.version);
            }
            if let Some(diagnosis) = &diagnosis {
                vctx.recorder
                    .record_diagnosis(diagnosis)
                    .await
                    .map_err(ValidationError::from)?;
            }
            state.proposals = Some(proposals);
            state.judged = 0;
            save(state)?;
        }
        loop {
            let proposals = state.proposals.clone().unwrap_or_default();
            settle_probations(ctx, config, provenance, state).await?;
            while let Some(proposal) = proposals.get(state.judged) {
                gate_proposal(
                    ctx,
                    config,
                    provenance,
                    state,
                    proposal,
                    &train_ws,
                    &train_run_id,
                )
                .await?;
                state.judged = state.judged.saturating_add(1);
                save(state)?;
                settle_probations(ctx, config, provenance, state).await?;
            }
            // The slow update's guidance is a candidate like any other: it
            // is proposed once per epoch, after the proposer's candidates,
            // and gated before it can become the baseline.
            if state.slow_update_proposed {
                break;
            }
            let previous = match (&config.slow_update_template, epoch.checked_sub(1)) {
                (Some(_), Some(prev)) => match previous_train.take() {
                    Some(previous) => Some(previous),
                    None => previous_epoch_train(vctx, config, ctx.store, prev).await?,
                },
                _ => None,
            };
            let guidance = match (&config.slow_update_template, &previous) {
                (Some(template), Some((prev_ws, prev_answers))) => {
                    slow_update_proposals(ctx, config, template, prev_ws, prev_answers, &train)
                        .await?
                }
                _ => Vec::new(),
            };
            state
                .proposals
                .get_or_insert_with(Vec::new)
                .extend(guidance);
            state.slow_update_proposed = true;
            save(state)?;
        }
        previous_train = Some((train_ws.clone(), train.clone()));

        // Stop rules.
        let acc = accuracy(&train).unwrap_or(0.0);
        let edits = edit_key(&state.proposals.clone().unwrap_or_default());
        let repeated = state.edit_history.last() == Some(&edits);
        let improved = state.train_accuracy.last().is_none_or(|last| acc > *last);
        state.stale_epochs = if repeated || !improved {
            state.stale_epochs.saturating_add(1)
        } else {
            0
        };
        state.train_accuracy.push(acc);
        state.edit_history.push(edits);
        state.epoch = epoch.saturating_add(1);
        state.proposals = None;
        state.train_version = None;
        state.judged = 0;
        state.slow_update_proposed = false;
        if state.epoch >= config.max_epochs {
            state.stopped = Some(StopReason::MaxEpochs);
        } else if state.stale_epochs >= 2 {
            state.stopped = Some(if repeated {
                StopReason::RepeatedEdits
            } else {
                StopReason::NoImprovement
            });
        }
        save(state)?;
    }

    let final_ws = workspace(ctx.store, config)?;
    let (holdout_before, holdout_after) = if config.holdout.is_empty() {
        (None, None)
    } else {
        let initial = workspace_at(ctx.store, config, &state.initial_version)?;
        let before_id = format!("{}_holdout_{}", config.run_name, initial.version);
        let after_id = format!("{}_holdout_{}", config.run_name, final_ws.version);
        let (before, _) = run_arm(vctx, &before_id, &initial, &config.holdout, Arm::Plain).await?;
        let (after, _) = run_arm(vctx, &after_id, &final_ws, &config.holdout, Arm::Plain).await?;
        (accuracy(&before), accuracy(&after))
    };
    Ok((holdout_before, holdout_after))
}

/// Gates one proposal of the epoch against the current version (rebasing
/// it when an earlier accept changed its documents), records its gate
/// record, its blacklist entries and its evolution record, and starts the
/// probation of a provisional accept.
async fn gate_proposal(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
    proposal: &Proposal,
    train_ws: &Workspace,
    train_run_id: &str,
) -> Result<(), LoopError> {
    let vctx = ctx.validation;
    let epoch = state.epoch;
    let base = workspace(ctx.store, config)?;
    // The documents the proposal was written against: the epoch's training
    // version for the proposer's, the version current when it was written
    // for the slow update's.
    let written_against = if proposal.record.source_version == train_ws.version {
        train_ws.clone()
    } else {
        workspace_at(ctx.store, config, &proposal.record.source_version)?
    };
    let stale = proposal
        .writes
        .keys()
        .any(|name| document(&base, name) != document(&written_against, name));
    let label = format!("{}_e{epoch}_{}", config.run_name, proposal.label);
    let parent = crate::gatekeeper::accepted_earlier(ctx.store, &base.version, &label)
        .map_err(ValidationError::from)?;
    // The documents the proposal is gated against.
    let against = match &parent {
        Some(parent) => workspace_at(ctx.store, config, parent)?,
        None => base.clone(),
    };
    let writes = if parent.is_some() {
        // Accepted before a kill: the current version holds what
        // was accepted (the proposal's writes, rebased or not).
        Some(
            proposal
                .writes
                .keys()
                .filter_map(|name| Some((name.clone(), document(&base, name)?.clone())))
                .collect(),
        )
    } else if stale {
        rebase(proposal, &written_against, &base)
    } else {
        Some(proposal.writes.clone())
    };
    if let Some(writes) = writes {
        let candidate = Candidate {
            label: label.clone(),
            workspace: with_writes(&base, &label, &writes, config),
            provenance: provenance.clone(),
        };
        let record = state
            .gatekeeper
            .judge(vctx, ctx.store, &base, &candidate, &writes, &config.gate)
            .await?;
        state
            .rejected
            .extend(record.rejected_edits(&proposal.record));
        state.probations.extend(record.probation.clone());
        let mut evolution = proposal.record.clone();
        if writes != proposal.writes
            && let Some(text) = writes.get(&evolution.target_file)
        {
            // Rebased: the record says what was gated.
            evolution.original_content = document(&against, &evolution.target_file)
                .cloned()
                .unwrap_or_default();
            evolution.evolved_content.clone_from(text);
        }
        evolution.result_version.clone_from(&record.new_version);
        vctx.recorder
            .record_evolution(&EvolutionResult {
                run_id: train_run_id.to_owned(),
                source_version: proposal.record.source_version.clone(),
                records: vec![evolution],
            })
            .await
            .map_err(ValidationError::from)?;
        state.records.push(record);
    }
    Ok(())
}

/// The slow update's candidates: for every skill document that changed
/// since the previous epoch's training version, the guidance the LLM
/// writes from the comparison of the two epochs' training answers, as a
/// proposal labelled `slow-update-<document>` written against the current
/// version. Documents whose guidance the LLM left unchanged propose nothing.
async fn slow_update_proposals(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    template: &str,
    prev_ws: &Workspace,
    prev_answers: &BTreeMap<String, Prediction>,
    train: &BTreeMap<String, Prediction>,
) -> Result<Vec<Proposal>, LoopError> {
    let pairs: Vec<ComparisonPair> = config
        .train
        .iter()
        .filter_map(|q| {
            let before = prev_answers.get(&q.question_id)?;
            let now = train.get(&q.question_id)?;
            Some(ComparisonPair {
                question_id: q.question_id.clone(),
                question: q.question.clone(),
                answer: q.answer.clone(),
                previous_prediction: before.prediction.clone(),
                previous_correct: before.correct,
                current_prediction: now.prediction.clone(),
                current_correct: now.correct,
            })
        })
        .collect();
    let current = workspace(ctx.store, config)?;
    let mut proposals = Vec::new();
    for (name, text) in &current.skills {
        let Some(before) = prev_ws.skills.get(name).filter(|b| *b != text) else {
            continue;
        };
        let update = slow_update(ctx.llm, template, before, text, &pairs).await?;
        if !update.updated || update.content == *text {
            continue;
        }
        let mut record = EvolutionRecord::new(
            name.clone(),
            TargetType::Skill,
            text.clone(),
            current.version.clone(),
        );
        record.evolved_content.clone_from(&update.content);
        record.status = EvolutionStatus::Accepted;
        record.reason = "slow update: long-term guidance from two epochs' training answers".into();
        proposals.push(Proposal {
            label: format!("{SLOW_UPDATE_LABEL}-{name}"),
            writes: BTreeMap::from([(name.clone(), update.content)]),
            record,
        });
    }
    Ok(proposals)
}

/// Judges every pending probation on the probation pool, right after the
/// provisional accept that started it (or, after a kill, when the loop
/// resumes), before anything else is gated on top of it. A `rollback`
/// verdict restores the version it replaced (when the watched version is
/// still current, so a rollback already done before a kill is not done
/// twice); every verdict ends the watch and is kept in the accept's
/// [`GateRecord::probation`]. With an empty pool the watch ends
/// `unverified` at once.
async fn settle_probations(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
) -> Result<(), LoopError> {
    while let Some(mut watch) = state.probations.first().cloned() {
        let previous = workspace_at(ctx.store, config, &watch.previous_version)?;
        let watched = workspace_at(ctx.store, config, &watch.version)?;
        let verdict = watch
            .judge(
                ctx.validation,
                state.gatekeeper.config(),
                &previous,
                &watched,
                provenance,
                &config.probation,
            )
            .await?;
        if verdict == evolution_gate::ProbationVerdict::Rollback {
            watch
                .settle(
                    ctx.store,
                    &evolution_gate::Gate::new(*state.gatekeeper.params())
                        .map_err(ValidationError::from)?,
                )
                .map_err(ValidationError::from)?;
        }
        if let Some(record) = state
            .records
            .iter_mut()
            .rev()
            .find(|r| r.new_version.as_deref() == Some(watch.version.as_str()))
        {
            record.probation = Some(watch);
        }
        state.probations.remove(0);
        state.save(ctx.checkpoint)?;
    }
    Ok(())
}

/// The previous epoch's training answers, read back from the run log after a resume.
async fn previous_epoch_train(
    vctx: ValidationContext<'_>,
    config: &LoopConfig,
    store: &dyn VersionedStore,
    epoch: u32,
) -> Result<Option<(Workspace, BTreeMap<String, Prediction>)>, LoopError> {
    let Some(log) = vctx.resume_from else {
        return Ok(None);
    };
    let prefix = format!("{}_train_e{epoch}_", config.run_name);
    for info in store
        .history()
        .map_err(ValidationError::from)?
        .into_iter()
        .rev()
    {
        let run_id = format!("{prefix}{}", info.version);
        if let Ok(found) = log.get_predictions(&run_id, None).await
            && !found.is_empty()
        {
            let ws = workspace_at(store, config, &info.version)?;
            let answers = found
                .into_iter()
                .map(|p| (p.question_id.clone(), p))
                .collect();
            return Ok(Some((ws, answers)));
        }
    }
    Ok(None)
}
