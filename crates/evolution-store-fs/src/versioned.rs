//! The write port [`VersionedStore`] on the on-disk store.

use std::collections::BTreeMap;

use evolution_types::{StoreError, VersionInfo, VersionedStore};

use crate::error::FsStoreError;
use crate::manifest::{HistoryKind, VersionId};
use crate::store::{Change, FsStore};

/// The [`VersionedStore`] write port over an [`FsStore`]: versions are the
/// store's ids (`v000001`, …), `advance` is the store's atomic
/// `advance_version`, `rollback` moves its pointer back.
///
/// [`VersionedStore::history`] lists the versions written (the first one
/// and every advance, oldest first); the store's own history also keeps
/// each rollback, see [`FsStore::history`].
#[derive(Debug, Clone)]
pub struct FsVersionedStore {
    store: FsStore,
}

impl FsVersionedStore {
    /// Wraps an open store.
    pub fn new(store: FsStore) -> Self {
        FsVersionedStore { store }
    }

    /// The wrapped store (for the kernel's read ports, diffs, the full history).
    pub fn store(&self) -> &FsStore {
        &self.store
    }
}

fn version_id(version: &str) -> Result<VersionId, StoreError> {
    version.parse().map_err(|_| StoreError::NotFound {
        name: version.to_owned(),
    })
}

/// The port's error; an unknown version is [`StoreError::NotFound`], as the
/// [`VersionedStore`] contract says.
fn port_error(error: FsStoreError) -> StoreError {
    match error {
        FsStoreError::UnknownVersion { version } => StoreError::NotFound {
            name: version.to_string(),
        },
        other => other.into(),
    }
}

impl VersionedStore for FsVersionedStore {
    fn current_version(&self) -> Result<String, StoreError> {
        Ok(self.store.current_version()?.to_string())
    }

    fn documents(&self, version: &str) -> Result<BTreeMap<String, String>, StoreError> {
        let id = version_id(version)?;
        let mut docs = BTreeMap::new();
        for name in self.store.list_at(id).map_err(port_error)? {
            let text = self.store.read_at(id, &name).map_err(port_error)?;
            docs.insert(name, text);
        }
        Ok(docs)
    }

    fn advance(
        &self,
        writes: &BTreeMap<String, String>,
        message: &str,
    ) -> Result<String, StoreError> {
        let changes: Vec<Change> = writes
            .iter()
            .map(|(name, text)| Change::write(name.clone(), text.clone()))
            .collect();
        Ok(self.store.advance_version(&changes, message)?.to_string())
    }

    fn rollback(&self, to: &str) -> Result<(), StoreError> {
        self.store.rollback(version_id(to)?).map_err(port_error)
    }

    fn history(&self) -> Result<Vec<VersionInfo>, StoreError> {
        Ok(self
            .store
            .history()?
            .into_iter()
            .filter(|entry| !matches!(entry.kind, HistoryKind::Rollback))
            .map(|entry| VersionInfo {
                version: entry.version.to_string(),
                parent: entry.previous.map(|v| v.to_string()),
                message: entry.message,
            })
            .collect())
    }
}
