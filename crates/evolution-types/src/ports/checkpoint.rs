//! Where a long run keeps the state it resumes from.

use thiserror::Error;

/// Why a checkpoint could not be loaded or saved.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// What is saved is not a state the caller can read (a torn or foreign
    /// file, a state of another shape).
    #[error("checkpoint is corrupt: {message}")]
    Corrupt {
        /// What is wrong.
        message: String,
    },
    /// The backing storage failed.
    #[error("checkpoint backend failed: {message}")]
    Backend {
        /// The underlying error, rendered.
        message: String,
    },
}

/// Saves and restores one JSON value: the state a long run resumes from.
///
/// The value is opaque to the implementation; the caller serialises its own
/// state type into it and decodes it back (a value that does not decode is
/// the caller's [`CheckpointError::Corrupt`]).
pub trait Checkpoint: Send + Sync {
    /// The saved state, or `None` when nothing was saved yet.
    ///
    /// # Errors
    /// [`CheckpointError::Corrupt`] when what is saved is not JSON; a
    /// backend failure.
    fn load(&self) -> Result<Option<serde_json::Value>, CheckpointError>;

    /// Saves `state`, replacing the previous one. A save either happens
    /// whole or leaves the previous state.
    ///
    /// # Errors
    /// A backend failure.
    fn save(&self, state: &serde_json::Value) -> Result<(), CheckpointError>;
}
