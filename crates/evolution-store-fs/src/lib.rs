//! Versioned skill and prompt stores on disk: the adapter behind the kernel's
//! [`SkillStore`](evolution_types::SkillStore) and [`PromptStore`](evolution_types::PromptStore) ports,
//! the app layer's [`VersionedStore`](evolution_types::VersionedStore) write port
//! ([`FsVersionedStore`]) and its [`Checkpoint`](evolution_types::Checkpoint) port
//! ([`FileCheckpoint`], one JSON file replaced atomically).
//!
//! A store is a directory of immutable versions plus one manifest that points at the current
//! version (the store resolves that pointer; the kernel never sees version numbers).
//! [`FsStore::advance_version`] copies the current version into a staging directory,
//! applies the changes, syncs and renames it into place, and only then replaces the manifest
//! atomically (temporary file, fsync, rename, fsync of the directory). A process killed at any
//! point therefore leaves the store at the old version or the new one, never a mix. Writers
//! serialize on an exclusive file lock; readers take no lock. Document names are plain file
//! names: paths, `..` and absolute names are refused with a typed error.
//!
//! What the store may delete: inside its root, temporary manifests (`.manifest.json.*`), and in
//! `staging/` and `versions/` only entries named exactly as it names its versions
//! (`v000001`, …) that the manifest does not keep. It never follows a symbolic link to
//! delete: a `staging/` or `versions/` that is a link or a file is refused
//! ([`FsStoreError::NotOurs`]), any other entry there is left alone, and `init` refuses a
//! folder whose `staging/` or `versions/` holds entries it did not name.

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod checkpoint;
mod diff;
mod error;
mod manifest;
mod name;
mod private;
mod store;
mod versioned;

pub use crate::checkpoint::FileCheckpoint;
pub use crate::diff::{FileChange, FileDiff, VersionDiff};
pub use crate::error::FsStoreError;
pub use crate::manifest::{HistoryEntry, HistoryKind, ParseVersionIdError, VersionId};
pub use crate::store::{Change, FsSnapshot, FsStore, Opened};
pub use crate::versioned::FsVersionedStore;
