//! The store's typed error.

use std::path::PathBuf;

use evolution_types::StoreError;
use thiserror::Error;

use crate::VersionId;

/// Why a store operation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FsStoreError {
    /// The document name is not a plain file name (empty, absolute, `..`, a separator, ...).
    #[error("invalid document name {name:?}: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No document of that name in that version.
    #[error("no document named {name:?} in version {version}")]
    NotFound {
        /// The requested name.
        name: String,
        /// The version that was searched.
        version: VersionId,
    },
    /// The version is not part of this store's history.
    #[error("unknown version {version}")]
    UnknownVersion {
        /// The requested version.
        version: VersionId,
    },
    /// The directory holds no store (no manifest).
    #[error("{} is not a version store (no manifest)", root.display())]
    NotAStore {
        /// The directory that was opened.
        root: PathBuf,
    },
    /// `init` was asked to create a store where one (or other data) already exists.
    #[error("{} already exists and is not empty", root.display())]
    AlreadyExists {
        /// The directory that was given.
        root: PathBuf,
    },
    /// `advance_version` was called without any change.
    #[error("no changes given")]
    NoChanges,
    /// The same document appears twice in one list of changes.
    #[error("document {name:?} is changed twice in one advance")]
    DuplicateChange {
        /// The repeated name.
        name: String,
    },
    /// The store's data is damaged (manifest unreadable, version missing, not UTF-8, ...).
    #[error("store is corrupt: {message}")]
    Corrupt {
        /// What is damaged.
        message: String,
    },
    /// A path the store keeps its own entries in is not a plain directory (a symbolic link,
    /// a file), or holds entries the store did not create; the store refuses to touch it.
    #[error("{} is not the store's own folder ({reason}); nothing was changed", path.display())]
    NotOurs {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file-system operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl FsStoreError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| FsStoreError::Io { op, path, source }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        FsStoreError::Corrupt {
            message: message.into(),
        }
    }
}

impl From<FsStoreError> for StoreError {
    fn from(err: FsStoreError) -> Self {
        match err {
            FsStoreError::InvalidName { name, reason } => StoreError::InvalidName {
                name,
                reason: reason.to_owned(),
            },
            FsStoreError::NotFound { name, .. } => StoreError::NotFound { name },
            FsStoreError::UnknownVersion { .. }
            | FsStoreError::NotAStore { .. }
            | FsStoreError::Corrupt { .. } => StoreError::Corrupt {
                message: err.to_string(),
            },
            other => StoreError::Backend {
                message: other.to_string(),
            },
        }
    }
}
