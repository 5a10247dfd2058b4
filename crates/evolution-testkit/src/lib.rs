//! Test doubles for the evolution kernel that anyone's tests can reuse.
//!
//! [`ScriptedLlm`] answers chats from a queue or a closure, with optional
//! latency and injected errors, and records every request so a test can
//! assert on the prompts the code under test sent. [`MemoryStore`] and
//! [`MemoryRunLog`] implement the read ports over in-memory maps, with the
//! write methods a test needs to set them up; [`MemoryRunLog`] is also the
//! run log's write port. [`MemoryVersionedStore`] and [`MemoryCheckpoint`]
//! are the app layer's other write ports in memory. [`fixtures`] builds
//! records with sensible defaults.
//!
//! Design choice: doubles never panic on an unexpected call; they return the
//! port's own error type with a message that says what the script lacked, so
//! a test fails with an explanation instead of an abort inside async code.

// The kernel performs no I/O: the calls clippy.toml lists are refused here.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod fixtures;
mod llm;
mod run_log;
mod store;
mod versioned;

pub use crate::llm::{RecordedRequest, ScriptedLlm};
pub use crate::run_log::MemoryRunLog;
pub use crate::store::{MemoryPromptStore, MemorySkillStore, MemoryStore};
pub use crate::versioned::{MemoryCheckpoint, MemoryVersionedStore};
