//! The loop's saved state and what a finished run reports.

use std::collections::{BTreeMap, BTreeSet};

use evolution_types::{Checkpoint, CheckpointError, RejectedEdit};
use serde::{Deserialize, Serialize};

use crate::budget::{BudgetExceeded, Usage};
use crate::gatekeeper::{GateRecord, Gatekeeper};
use crate::phase::Phase;
use crate::probation::Probation;

use super::Proposal;

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

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Budget(exceeded) => write!(f, "{exceeded}"),
            StopReason::MaxEpochs => f.write_str("every epoch ran"),
            StopReason::RepeatedEdits => f.write_str("two epochs in a row proposed the same edits"),
            StopReason::NoImprovement => {
                f.write_str("two epochs in a row did not improve training accuracy")
            }
        }
    }
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
    /// The gate decision of the proposal being judged, saved before the
    /// store is written: a resumed run carries it out instead of gating the
    /// proposal again.
    #[serde(default)]
    pub pending: Option<PendingGate>,
    /// Every proposal dropped before its gate: it broke a check of the project's
    /// preferences ([`super::LoopConfig::preferences`]), failed the screen, or was not among
    /// the epoch's best ([`crate::Gatekeeper::with_best_per_epoch`]).
    #[serde(default)]
    pub dropped: Vec<DroppedProposal>,
    /// Whether this epoch's proposals were screened and only the best kept
    /// ([`crate::Gatekeeper::with_best_per_epoch`]).
    #[serde(default)]
    pub ranked: bool,
    /// The labels of this epoch's candidates the ranking kept, already screened: the gate
    /// does not screen them again.
    #[serde(default)]
    pub screened: BTreeSet<String>,
    /// The labels of this epoch's candidates the ranking dropped (already recorded in
    /// [`LoopState::dropped`]): the gate skips them.
    #[serde(default)]
    pub ranked_out: BTreeSet<String>,
    /// Candidates of this epoch gated so far (counted against the epoch's cap).
    #[serde(default)]
    pub gated_in_epoch: usize,
    /// What the run had used when this state was saved (every leg of a resumed run), so a
    /// resumed run's caps and report count what earlier legs spent.
    #[serde(default)]
    pub usage: Usage,
    /// The same, per phase.
    #[serde(default)]
    pub usage_by_phase: BTreeMap<Phase, Usage>,
}

/// A proposal dropped before its gate: it broke a check of the project's preferences (no
/// rollout spent), failed the screen, or was not among the epoch's best; no e-LOND level
/// was spent on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedProposal {
    /// Its label, as a gated candidate's (`<run>_e<epoch>_<proposal>`).
    pub candidate: String,
    /// The 0-based epoch that proposed it.
    pub epoch: u32,
    /// Every check it broke, in words: `breaks preference 'max_lines = 120' in notes.md:
    /// 134 lines`.
    pub reasons: Vec<String>,
}

/// A gate decision saved before the store is written: a run killed after
/// it resumes by carrying it out ([`crate::Gatekeeper::commit`]), so the
/// store only ever moves to a version whose accept is recorded, and e-LOND
/// (already charged in the saved [`LoopState::gatekeeper`]) tests the
/// candidate exactly once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingGate {
    /// The decision ([`crate::Gatekeeper::decide`]); `new_version` and
    /// `probation` are not set yet.
    pub record: GateRecord,
    /// Document name → full new text: what an accept writes.
    pub writes: BTreeMap<String, String>,
    /// The version the candidate was gated against, which the store must
    /// still be at (or at the version this accept wrote before a kill).
    pub against: String,
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

    /// Saves this state in the loop's checkpoint with what its budget has used so far.
    pub(super) fn checkpoint(
        &mut self,
        ctx: super::LoopContext<'_>,
    ) -> Result<(), CheckpointError> {
        self.usage = ctx.validation.budget.usage();
        self.usage_by_phase = ctx.validation.budget.usage_by_phase();
        self.save(ctx.checkpoint)
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
    /// Every proposal dropped before its gate for breaking the project's preferences.
    #[serde(default)]
    pub dropped: Vec<DroppedProposal>,
    /// Holdout accuracy of the initial version (INFRA failures excluded).
    pub holdout_before: Option<f64>,
    /// Holdout accuracy of the final version.
    pub holdout_after: Option<f64>,
}
