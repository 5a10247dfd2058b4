//! The run log on an embedded SQLite file: the kernel's [`RunLog`](evolution_types::RunLog)
//! read port, plus the write side the harness needs (runs, predictions, traces, diagnosis and
//! evolution results, JSONL import).
//!
//! Key design choices: each record is stored whole as JSON beside the columns queries filter
//! and sort on, so fields the kernel does not name (`extra`) survive a round trip; the file is
//! in WAL mode with one writer connection and a pool of read-only connections, so readers
//! never block on a writer and see only whole transactions; the schema is versioned with
//! `PRAGMA user_version` and migrated forward on open. SQLite calls are blocking, so the
//! async methods run them on tokio's blocking pool.

mod error;
mod log;
mod schema;

pub use crate::error::SqliteRunLogError;
pub use crate::log::{RunInfo, SqliteRunLog};
