//! The phases of a run, shared by the progress events and the budget's usage per phase.

use serde::{Deserialize, Serialize};

/// A phase of a run: what the loop is busy with between its other events.
/// The budget charges what it meters to the phase in progress
/// ([`crate::Budget::usage_by_phase`]); the order of the variants is the order of
/// an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Phase {
    /// The agent answers questions to learn from or to score (training, holdout).
    Rollout,
    /// The training answers are diagnosed (the LLM judges).
    Diagnose,
    /// Candidates are written (the LLM edits documents).
    Propose,
    /// A candidate and the version it challenges answer the gate questions.
    Gate,
    /// A provisionally accepted version is judged on fresh questions.
    Probation,
    /// Long-term guidance is written from two epochs' answers.
    SlowUpdate,
}

impl Phase {
    /// Every phase, in the order of an epoch.
    pub const ALL: [Phase; 6] = [
        Phase::Rollout,
        Phase::Diagnose,
        Phase::Propose,
        Phase::Gate,
        Phase::Probation,
        Phase::SlowUpdate,
    ];

    /// The phase as its serialized name (`rollout`, …, `slow_update`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Rollout => "rollout",
            Phase::Diagnose => "diagnose",
            Phase::Propose => "propose",
            Phase::Gate => "gate",
            Phase::Probation => "probation",
            Phase::SlowUpdate => "slow_update",
        }
    }

    /// The phase in words, for people (`slow update`).
    pub fn label(self) -> &'static str {
        match self {
            Phase::SlowUpdate => "slow update",
            other => other.as_str(),
        }
    }
}
