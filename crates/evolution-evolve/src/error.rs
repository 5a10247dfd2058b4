//! Errors of the evolution engine.

use evolution_types::{LlmError, StoreError};

/// Why an evolution could not produce a record at all.
///
/// Content problems (a reply that is not JSON, an edit that misses its
/// target, a candidate that fails validation) are never errors: they are
/// retried and, in the end, reported in a rejected [`evolution_types::EvolutionRecord`].
/// Only failures outside the engine's control surface here, and when one
/// does, nothing has been applied anywhere.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvolveError {
    /// The LLM provider failed with a transient or permanent error.
    #[error("LLM call failed: {0}")]
    Llm(#[from] LlmError),
    /// A store could not return a document.
    #[error("could not read `{file}`: {source}")]
    Store {
        /// The document asked for.
        file: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

/// A budget schedule was given bounds it cannot honour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The budget may only shrink over training: `start` must be at least `end`.
    #[error("edit budget start {start} is below its end {end}; a schedule may only shrink")]
    StartBelowEnd {
        /// The starting budget.
        start: usize,
        /// The final budget.
        end: usize,
    },
}
