//! Write port of the run log.

use async_trait::async_trait;
use thiserror::Error;

use crate::{DiagnosisResult, EvolutionResult, QuestionOutcome};

/// Why the run recorder could not write.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A diagnosis or evolution result names a run that was never recorded.
    #[error("run {run_id:?} not found")]
    RunNotFound {
        /// The requested run.
        run_id: String,
    },
    /// The backing storage failed.
    #[error("run recorder backend failed: {message}")]
    Backend {
        /// The underlying error, rendered.
        message: String,
    },
}

/// Write side of the run log: the outcomes of rollouts, and the diagnosis
/// and evolution results the loop made from them.
#[async_trait]
pub trait RunRecorder: Send + Sync {
    /// Records `outcomes` (predictions and traces). A question recorded
    /// again under the same run id replaces the earlier record.
    ///
    /// # Errors
    /// A backend failure; nothing of the batch is kept then.
    async fn record(&self, outcomes: &[QuestionOutcome]) -> Result<(), RecordError>;

    /// Stores a diagnosis under its `run_id` (a run already recorded). A
    /// result equal to one the run already holds is not stored again, so a
    /// resumed run that diagnoses again from the same evidence adds nothing.
    ///
    /// # Errors
    /// [`RecordError::RunNotFound`] for an unknown run; a backend failure.
    async fn record_diagnosis(&self, diagnosis: &DiagnosisResult) -> Result<(), RecordError>;

    /// Stores evolution records under `result.run_id` (the run they were
    /// made from), with the same rule for an equal result.
    ///
    /// # Errors
    /// [`RecordError::RunNotFound`] for an unknown run; a backend failure.
    async fn record_evolution(&self, result: &EvolutionResult) -> Result<(), RecordError>;
}
