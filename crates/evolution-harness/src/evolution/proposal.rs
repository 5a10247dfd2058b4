//! What the loop asks a [`Proposer`] for and what it gets back.

use std::collections::BTreeMap;

use async_trait::async_trait;
use evolution_types::{DiagnosisResult, EvolutionRecord, RejectedEdit};
use serde::{Deserialize, Serialize};

use crate::events::Phases;
use crate::phase::Phase;
use crate::runner::Workspace;

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
    /// Every edit rejected so far, with why: never with a gate outcome
    /// ([`evolution_types::GATE_REJECTED_REASON`]).
    pub rejected: &'a [RejectedEdit],
    /// Where the proposer announces the phases of its work after the first
    /// ([`Proposer::opening_phase`], which the loop announces); what the
    /// budget meters is charged to the phase announced last.
    pub phases: Phases<'a>,
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

    /// The phase the loop announces before calling [`Proposer::propose`]:
    /// [`Phase::Propose`] by default, [`Phase::Diagnose`] for a proposer that
    /// diagnoses first (it then announces [`Phase::Propose`] itself through
    /// [`ProposeRequest::phases`]).
    fn opening_phase(&self) -> Phase {
        Phase::Propose
    }
}
