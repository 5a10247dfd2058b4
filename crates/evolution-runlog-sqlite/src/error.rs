//! The run log's typed error.

use std::path::PathBuf;

use evolution_types::RunLogError;
use thiserror::Error;

/// Why a run-log operation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SqliteRunLogError {
    /// No run with that id.
    #[error("no run with id {run_id:?}")]
    RunNotFound {
        /// The requested run.
        run_id: String,
    },
    /// `create_run` was given an id that is already taken.
    #[error("a run with id {run_id:?} already exists")]
    RunExists {
        /// The id.
        run_id: String,
    },
    /// A prediction for that question, or a trace step with that number, is already stored.
    #[error("run {run_id:?} already holds {what}")]
    Duplicate {
        /// The run.
        run_id: String,
        /// What is duplicated (`prediction for question "q1"`, `trace step 3 of question "q1"`).
        what: String,
    },
    /// A record names a different run than the one it is inserted into.
    #[error("record of run {found:?} cannot be stored in run {expected:?}")]
    RunMismatch {
        /// The run being written.
        expected: String,
        /// The run the record names.
        found: String,
    },
    /// A line of a JSONL file is not a valid record.
    #[error("{}:{line}: {message}", path.display())]
    Jsonl {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The database was written by a newer version of this crate.
    #[error("database schema version {found} is newer than this build supports ({supported})")]
    SchemaTooNew {
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The newest schema this build knows.
        supported: usize,
    },
    /// The database refused write-ahead logging (for example an in-memory database).
    #[error("database does not support WAL mode (journal mode is {mode:?})")]
    NotWal {
        /// The journal mode SQLite reported.
        mode: String,
    },
    /// The file is an SQLite database, but not a run log (another program's tables).
    #[error("{} is not a run log: {reason}", path.display())]
    NotARunLog {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// A write was attempted on a log opened with [`SqliteRunLog::open_read_only`].
    ///
    /// [`SqliteRunLog::open_read_only`]: crate::SqliteRunLog::open_read_only
    #[error("{} was opened read-only", path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// A stored record could not be decoded.
    #[error("corrupt record in run {run_id:?}: {message}")]
    Corrupt {
        /// The run holding the record.
        run_id: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The log's file could not be created owner-only, or its path is a symbolic link.
    #[error("cannot create {}: {source}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A value could not be encoded as JSON.
    #[error("cannot encode as JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// The background task running the query failed or was cancelled.
    #[error("run-log task failed: {message}")]
    Task {
        /// What happened.
        message: String,
    },
}

impl From<SqliteRunLogError> for RunLogError {
    fn from(err: SqliteRunLogError) -> Self {
        match err {
            SqliteRunLogError::RunNotFound { run_id } => RunLogError::RunNotFound { run_id },
            SqliteRunLogError::Corrupt { run_id, message } => {
                RunLogError::Corrupt { run_id, message }
            }
            other => RunLogError::Backend {
                message: other.to_string(),
            },
        }
    }
}
