//! Errors of the diagnosis pipeline.

use evolution_types::{LlmError, RunLogError, StoreError};

/// Why a judge produced no verdict.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// Every attempt returned a reply that held no usable JSON verdict.
    #[error("unreadable `{tag}` reply after {attempts} attempts: {last}")]
    Unparseable {
        /// The tag of the judge's request (`judge.<name>`; empty when it had none).
        tag: String,
        /// Attempts made.
        attempts: u32,
        /// What was wrong with the last reply.
        last: String,
    },
    /// The provider failed (transient or permanent); never retried here.
    #[error("LLM provider failed: {0}")]
    Provider(#[from] LlmError),
}

/// Why diagnosis could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnoseError {
    /// A value of the [`evolution_types::Profile`] is unusable.
    #[error("invalid profile field `{field}`: {message}")]
    InvalidProfile {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The caller's options are unusable (for example a concurrency of 0).
    #[error("invalid diagnosis options: {0}")]
    InvalidOptions(String),
    /// The LLM provider failed outside what judges absorb.
    #[error("LLM provider failed: {0}")]
    Llm(#[from] LlmError),
    /// The run log failed.
    #[error(transparent)]
    RunLog(#[from] RunLogError),
    /// The skill store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
