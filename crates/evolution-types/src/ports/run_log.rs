//! Read port of the experiment log.

use async_trait::async_trait;
use thiserror::Error;

use crate::{Prediction, TraceStep};

/// Why the run log could not answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RunLogError {
    /// No run with that id.
    #[error("no run with id {run_id:?}")]
    RunNotFound {
        /// The requested run.
        run_id: String,
    },
    /// A stored record could not be decoded.
    #[error("corrupt record in run {run_id:?}: {message}")]
    Corrupt {
        /// The run holding the record.
        run_id: String,
        /// What is wrong.
        message: String,
    },
    /// The backing storage failed.
    #[error("run log backend failed: {message}")]
    Backend {
        /// The underlying error, rendered.
        message: String,
    },
}

/// Query port of the run log: predictions and traces of a run.
///
/// Domain methods rather than SQL, so no query language leaks into the kernel.
#[async_trait]
pub trait RunLog: Send + Sync {
    /// Predictions of `run_id`, optionally only for `question_ids`, in question order of the log.
    async fn get_predictions(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<Prediction>, RunLogError>;

    /// Trace steps of `run_id`, optionally only for `question_ids`, ordered by question then step.
    async fn get_traces(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> Result<Vec<TraceStep>, RunLogError>;
}
