//! The bookkeeping of an epoch: its training run, the proposer's call, the
//! stopping rules at its end, and the holdout scores after the last one.

use std::collections::BTreeMap;

use evolution_types::Prediction;

use super::documents::{workspace, workspace_at};
use super::{LoopConfig, LoopContext, LoopError, LoopState, Proposal, Proposals, ProposeRequest};
use super::{StopReason, ValidationError};
use crate::events::Arm;
use crate::phase::Phase;
use crate::runner::Workspace;
use crate::validate::run_arm;

/// An epoch's training rollouts: the documents they ran on, their run id and
/// the answers by question id.
#[derive(Debug, Clone)]
pub(super) struct TrainingRun {
    /// The documents of the training version.
    pub(super) workspace: Workspace,
    /// `<run_name>_train_e<epoch>_<version>`.
    pub(super) run_id: String,
    /// Question id → the answer.
    pub(super) answers: BTreeMap<String, Prediction>,
}

/// The run id of epoch `epoch`'s training rollouts on `version`.
pub(super) fn train_run_id(config: &LoopConfig, epoch: u32, version: &str) -> String {
    format!("{}_train_e{epoch}_{version}", config.run_name)
}

/// Runs the training questions on this epoch's training version: the one
/// chosen before a kill, else the current version (chosen and saved now).
pub(super) async fn run_training(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    state: &mut LoopState,
) -> Result<TrainingRun, LoopError> {
    let train_version = match &state.train_version {
        Some(version) => version.clone(),
        None => {
            let version = ctx.store.current_version().map_err(ValidationError::from)?;
            state.train_version = Some(version.clone());
            state.checkpoint(ctx)?;
            version
        }
    };
    let workspace = workspace_at(ctx.store, config, &train_version)?;
    let run_id = train_run_id(config, state.epoch, &workspace.version);
    super::phases(ctx, state.epoch).start(Phase::Rollout, &run_id);
    let (answers, _) = run_arm(
        ctx.validation,
        &run_id,
        &workspace,
        &config.train,
        Arm::Plain,
    )
    .await?;
    Ok(TrainingRun {
        workspace,
        run_id,
        answers,
    })
}

/// Asks the proposer for this epoch's candidates, unless it was asked
/// before a kill: each is stamped with the training version it was written
/// against, the diagnosis it came from is recorded, and the state is saved
/// with nothing judged yet.
pub(super) async fn propose(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    state: &mut LoopState,
    train: &TrainingRun,
) -> Result<(), LoopError> {
    if state.proposals.is_some() {
        return Ok(());
    }
    let phases = super::phases(ctx, state.epoch);
    phases.start(ctx.proposer.opening_phase(), &train.run_id);
    let Proposals {
        mut proposals,
        diagnosis,
    } = ctx
        .proposer
        .propose(ProposeRequest {
            epoch: state.epoch,
            max_epochs: config.max_epochs,
            train_run_id: &train.run_id,
            workspace: &train.workspace,
            rejected: &state.rejected,
            phases,
        })
        .await?;
    for p in &mut proposals {
        p.record.source_version.clone_from(&train.workspace.version);
    }
    if let Some(diagnosis) = &diagnosis {
        ctx.validation
            .recorder
            .record_diagnosis(diagnosis)
            .await
            .map_err(ValidationError::from)?;
    }
    state.proposals = Some(proposals);
    state.judged = 0;
    state.checkpoint(ctx)?;
    Ok(())
}

/// Closes the epoch once every candidate is judged: records its training
/// accuracy and edits, applies the stopping rules (`max_epochs`; two stale
/// epochs in a row, by repeated edits or no improvement), moves on to the
/// next epoch and saves the state.
pub(super) fn finish(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    state: &mut LoopState,
    train_answers: &BTreeMap<String, Prediction>,
) -> Result<(), LoopError> {
    let acc = accuracy(train_answers).unwrap_or(0.0);
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
    state.epoch = state.epoch.saturating_add(1);
    state.proposals = None;
    state.train_version = None;
    state.judged = 0;
    state.slow_update_proposed = false;
    state.ranked = false;
    state.screened.clear();
    state.ranked_out.clear();
    state.gated_in_epoch = 0;
    if state.epoch >= config.max_epochs {
        state.stopped = Some(StopReason::MaxEpochs);
    } else if state.stale_epochs >= 2 {
        state.stopped = Some(if repeated {
            StopReason::RepeatedEdits
        } else {
            StopReason::NoImprovement
        });
    }
    state.checkpoint(ctx)?;
    Ok(())
}

/// Holdout accuracy of the initial and the final version (both `None`
/// without holdout questions).
pub(super) async fn holdout_scores(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    state: &LoopState,
) -> Result<(Option<f64>, Option<f64>), LoopError> {
    let vctx = ctx.validation;
    let final_ws = workspace(ctx.store, config)?;
    if config.holdout.is_empty() {
        return Ok((None, None));
    }
    let initial = workspace_at(ctx.store, config, &state.initial_version)?;
    let before_id = format!("{}_holdout_{}", config.run_name, initial.version);
    let after_id = format!("{}_holdout_{}", config.run_name, final_ws.version);
    let phases = super::phases(ctx, state.epoch);
    phases.start(Phase::Rollout, &before_id);
    let (before, _) = run_arm(vctx, &before_id, &initial, &config.holdout, Arm::Plain).await?;
    phases.start(Phase::Rollout, &after_id);
    let (after, _) = run_arm(vctx, &after_id, &final_ws, &config.holdout, Arm::Plain).await?;
    Ok((accuracy(&before), accuracy(&after)))
}

/// The share of right answers among the usable ones (INFRA failures left
/// out); `None` when none is usable.
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

/// The proposals' edits as sorted keys, to compare two epochs' edits.
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
