//! Write port of the versioned documents.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::StoreError;

/// One entry of a store's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// The version's id.
    pub version: String,
    /// The version it was derived from (`None` for the first).
    pub parent: Option<String>,
    /// Why it was written (for example the gate evidence of an accept).
    pub message: String,
}

/// A store of immutable document versions with a movable "current" pointer:
/// what the app layer writes accepted candidates to and rolls back.
pub trait VersionedStore: Send + Sync {
    /// The current version's id.
    ///
    /// # Errors
    /// A backend failure.
    fn current_version(&self) -> Result<String, StoreError>;

    /// Every document of `version`.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown version; a backend failure.
    fn documents(&self, version: &str) -> Result<BTreeMap<String, String>, StoreError>;

    /// Writes a new version: the current documents with `writes` applied,
    /// makes it current, and returns its id. All or nothing.
    ///
    /// # Errors
    /// [`StoreError::InvalidName`] for a bad document name; a backend failure.
    fn advance(
        &self,
        writes: &BTreeMap<String, String>,
        message: &str,
    ) -> Result<String, StoreError>;

    /// Makes an earlier version current again (its history entry stays).
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown version; a backend failure.
    fn rollback(&self, to: &str) -> Result<(), StoreError>;

    /// Every version ever written, oldest first.
    ///
    /// # Errors
    /// A backend failure.
    fn history(&self) -> Result<Vec<VersionInfo>, StoreError>;
}
