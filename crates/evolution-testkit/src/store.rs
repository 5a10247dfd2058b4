//! In-memory document stores.

use std::collections::BTreeMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use evolution_types::{PromptStore, SkillStore, StoreError};

/// An in-memory store of named documents; implements both [`SkillStore`]
/// and [`PromptStore`]. Names are listed sorted.
#[derive(Debug, Default)]
pub struct MemoryStore {
    files: RwLock<BTreeMap<String, String>>,
}

/// A [`MemoryStore`] used as a skill store.
pub type MemorySkillStore = MemoryStore;
/// A [`MemoryStore`] used as a prompt store.
pub type MemoryPromptStore = MemoryStore;

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// The same store with one more document.
    pub fn with(self, name: impl Into<String>, text: impl Into<String>) -> Self {
        self.insert(name, text);
        self
    }

    /// Adds or replaces a document.
    pub fn insert(&self, name: impl Into<String>, text: impl Into<String>) {
        self.write().insert(name.into(), text.into());
    }

    /// Removes a document, returning its text.
    pub fn remove(&self, name: &str) -> Option<String> {
        self.write().remove(name)
    }

    /// A copy of every document.
    pub fn snapshot(&self) -> BTreeMap<String, String> {
        self.read().clone()
    }

    fn get(&self, name: &str) -> Result<String, StoreError> {
        self.read()
            .get(name)
            .cloned()
            .ok_or_else(|| StoreError::NotFound {
                name: name.to_owned(),
            })
    }

    fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, String>> {
        self.files
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, String>> {
        self.files
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for MemoryStore {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        let store = MemoryStore::new();
        for (name, text) in iter {
            store.insert(name, text);
        }
        store
    }
}

impl SkillStore for MemoryStore {
    fn read_skill(&self, filename: &str) -> Result<String, StoreError> {
        self.get(filename)
    }
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.names())
    }
}

impl PromptStore for MemoryStore {
    fn read_prompt(&self, filename: &str) -> Result<String, StoreError> {
        self.get(filename)
    }
    fn list_prompt_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.names())
    }
}
