//! The run log on an embedded SQLite file: the kernel's [`RunLog`](evolution_types::RunLog)
//! read port, the [`RunRecorder`](evolution_types::RunRecorder) write port the harness records
//! through, and more of the write side (runs, predictions, traces, diagnosis and evolution
//! results, JSONL import).
//!
//! Key design choices: fields the kernel does not name (`extra`) are stored as JSON, so a
//! record survives a round trip whole (predictions as one JSON record beside the columns
//! queries use; trace steps, the big table, as columns, which decode several times faster
//! than a flattened record); the file is
//! in WAL mode with one writer connection and a pool of read-only connections, so readers
//! never block on a writer and see only whole transactions; the schema is versioned with
//! `PRAGMA user_version` and migrated forward on open. SQLite calls are blocking, so the
//! async methods run them on tokio's blocking pool.

#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod error;
mod log;
mod recorder;
mod schema;

pub use crate::error::SqliteRunLogError;
pub use crate::log::{RunInfo, SqliteRunLog};
