//! Versioned document stores.

use thiserror::Error;

/// Why a store could not answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No document of that name in the current version.
    #[error("no document named {name:?} in the current version")]
    NotFound {
        /// The requested name.
        name: String,
    },
    /// The name is not a plain file name (empty, a path, `..`, ...).
    #[error("invalid document name {name:?}: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The store's data is damaged (manifest unreadable, version missing, not UTF-8, ...).
    #[error("store is corrupt: {message}")]
    Corrupt {
        /// What is damaged.
        message: String,
    },
    /// The backing storage failed.
    #[error("store backend failed: {message}")]
    Backend {
        /// The underlying error, rendered.
        message: String,
    },
}

/// Read port of the versioned skill files.
///
/// The implementation resolves the current version; the kernel never sees
/// version numbers.
pub trait SkillStore: Send + Sync {
    /// The text of a skill file of the current version.
    fn read_skill(&self, filename: &str) -> Result<String, StoreError>;
    /// The skill file names of the current version, sorted.
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError>;
}

/// Read port of the versioned prompts (the system prompt and tool prompts).
pub trait PromptStore: Send + Sync {
    /// The text of a prompt file of the current version.
    fn read_prompt(&self, filename: &str) -> Result<String, StoreError>;
    /// The prompt file names of the current version, sorted.
    fn list_prompt_files(&self) -> Result<Vec<String>, StoreError>;
}

impl<T: SkillStore + ?Sized> SkillStore for &T {
    fn read_skill(&self, filename: &str) -> Result<String, StoreError> {
        (**self).read_skill(filename)
    }
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        (**self).list_skill_files()
    }
}

impl<T: SkillStore + ?Sized> SkillStore for std::sync::Arc<T> {
    fn read_skill(&self, filename: &str) -> Result<String, StoreError> {
        (**self).read_skill(filename)
    }
    fn list_skill_files(&self) -> Result<Vec<String>, StoreError> {
        (**self).list_skill_files()
    }
}

impl<T: PromptStore + ?Sized> PromptStore for &T {
    fn read_prompt(&self, filename: &str) -> Result<String, StoreError> {
        (**self).read_prompt(filename)
    }
    fn list_prompt_files(&self) -> Result<Vec<String>, StoreError> {
        (**self).list_prompt_files()
    }
}

impl<T: PromptStore + ?Sized> PromptStore for std::sync::Arc<T> {
    fn read_prompt(&self, filename: &str) -> Result<String, StoreError> {
        (**self).read_prompt(filename)
    }
    fn list_prompt_files(&self) -> Result<Vec<String>, StoreError> {
        (**self).list_prompt_files()
    }
}
