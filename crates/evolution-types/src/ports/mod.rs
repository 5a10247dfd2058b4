//! The ports through which the kernel reads the outside world (seed §3).
//!
//! All are read-only: the kernel returns results and the app layer persists
//! them. Stores are synchronous (small, fast reads); the run log and the LLM
//! are async.

pub(crate) mod llm;
pub(crate) mod run_log;
pub(crate) mod store;
