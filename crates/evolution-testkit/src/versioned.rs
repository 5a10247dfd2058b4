//! An in-memory versioned store and checkpoint: the app layer's write
//! ports without a disk.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use evolution_types::{Checkpoint, CheckpointError, StoreError, VersionInfo, VersionedStore};

#[derive(Debug, Default)]
struct StoreState {
    versions: Vec<(VersionInfo, BTreeMap<String, String>)>,
    current: usize,
}

/// An in-memory [`VersionedStore`]; versions are named `v1`, `v2`, ….
#[derive(Debug)]
pub struct MemoryVersionedStore {
    state: Mutex<StoreState>,
}

impl MemoryVersionedStore {
    /// A store whose first version `v1` holds `documents`.
    pub fn new(documents: BTreeMap<String, String>) -> Self {
        let info = VersionInfo {
            version: "v1".to_owned(),
            parent: None,
            message: "initial".to_owned(),
        };
        MemoryVersionedStore {
            state: Mutex::new(StoreState {
                versions: vec![(info, documents)],
                current: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StoreState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn find(state: &StoreState, version: &str) -> Result<usize, StoreError> {
        state
            .versions
            .iter()
            .position(|(info, _)| info.version == version)
            .ok_or_else(|| StoreError::NotFound {
                name: version.to_owned(),
            })
    }
}

impl VersionedStore for MemoryVersionedStore {
    fn current_version(&self) -> Result<String, StoreError> {
        let state = self.lock();
        state
            .versions
            .get(state.current)
            .map(|(info, _)| info.version.clone())
            .ok_or_else(|| StoreError::Corrupt {
                message: "current version missing".to_owned(),
            })
    }

    fn documents(&self, version: &str) -> Result<BTreeMap<String, String>, StoreError> {
        let state = self.lock();
        let index = MemoryVersionedStore::find(&state, version)?;
        Ok(state
            .versions
            .get(index)
            .map(|(_, docs)| docs.clone())
            .unwrap_or_default())
    }

    fn advance(
        &self,
        writes: &BTreeMap<String, String>,
        message: &str,
    ) -> Result<String, StoreError> {
        for name in writes.keys() {
            if name.is_empty() || name.contains(['/', '\\', '\0']) || name == "." || name == ".." {
                return Err(StoreError::InvalidName {
                    name: name.clone(),
                    reason: "not a plain file name".to_owned(),
                });
            }
        }
        let mut state = self.lock();
        let (parent, mut docs) = state
            .versions
            .get(state.current)
            .map(|(info, docs)| (info.version.clone(), docs.clone()))
            .ok_or_else(|| StoreError::Corrupt {
                message: "current version missing".to_owned(),
            })?;
        docs.extend(writes.iter().map(|(k, v)| (k.clone(), v.clone())));
        let version = format!("v{}", state.versions.len().saturating_add(1));
        state.versions.push((
            VersionInfo {
                version: version.clone(),
                parent: Some(parent),
                message: message.to_owned(),
            },
            docs,
        ));
        state.current = state.versions.len().saturating_sub(1);
        Ok(version)
    }

    fn rollback(&self, to: &str) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.current = MemoryVersionedStore::find(&state, to)?;
        Ok(())
    }

    fn history(&self) -> Result<Vec<VersionInfo>, StoreError> {
        Ok(self
            .lock()
            .versions
            .iter()
            .map(|(info, _)| info.clone())
            .collect())
    }
}

/// A [`Checkpoint`] in memory: the last value saved.
#[derive(Debug, Default)]
pub struct MemoryCheckpoint {
    state: Mutex<Option<serde_json::Value>>,
}

impl MemoryCheckpoint {
    /// Empty: nothing saved yet.
    pub fn new() -> Self {
        MemoryCheckpoint::default()
    }
}

impl Checkpoint for MemoryCheckpoint {
    fn load(&self) -> Result<Option<serde_json::Value>, CheckpointError> {
        Ok(self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }

    fn save(&self, state: &serde_json::Value) -> Result<(), CheckpointError> {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = Some(state.clone());
        Ok(())
    }
}
