//! The schema and its forward migrations, versioned by `PRAGMA user_version`.
//!
//! Migration `i` (0-based) takes a database from version `i` to `i + 1`. Migrations only
//! ever append to this list; a database newer than the list is refused, never downgraded.

use rusqlite::{Connection, TransactionBehavior};

use crate::SqliteRunLogError;

/// Version 1: runs, predictions and traces. Each record is kept whole as JSON (so fields the
/// kernel does not name survive), beside the columns queries filter and sort on.
const V1_RECORDS: &str = "
CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY NOT NULL,
    created_unix_ms INTEGER NOT NULL,
    metadata        TEXT NOT NULL
);
CREATE TABLE predictions (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    question_id TEXT NOT NULL,
    record      TEXT NOT NULL,
    UNIQUE (run_id, question_id)
);
CREATE TABLE traces (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs (run_id),
    question_id TEXT NOT NULL,
    step        INTEGER NOT NULL,
    record      TEXT NOT NULL,
    UNIQUE (run_id, question_id, step)
);
";

/// Version 2: diagnosis and evolution results, stored as JSON per run.
const V2_RESULTS: &str = "
CREATE TABLE diagnoses (
    id              INTEGER PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES runs (run_id),
    created_unix_ms INTEGER NOT NULL,
    result          TEXT NOT NULL
);
CREATE INDEX diagnoses_by_run ON diagnoses (run_id, id);
CREATE TABLE evolutions (
    id              INTEGER PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES runs (run_id),
    created_unix_ms INTEGER NOT NULL,
    result          TEXT NOT NULL
);
CREATE INDEX evolutions_by_run ON evolutions (run_id, id);
";

const MIGRATIONS: &[&str] = &[V1_RECORDS, V2_RESULTS];

/// The schema version this build writes.
pub(crate) const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// The database's schema version.
pub(crate) fn schema_version(conn: &Connection) -> Result<i64, SqliteRunLogError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Brings the database up to [`SCHEMA_VERSION`].
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), SqliteRunLogError> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// Applies the migrations up to `target`, one transaction each, so a crash mid-way leaves
/// the database at a whole version. The version is re-read under a write lock, so two
/// processes opening a new file at once migrate it once.
fn migrate_to(conn: &mut Connection, target: usize) -> Result<(), SqliteRunLogError> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found = schema_version(&tx)?;
        let current = usize::try_from(found).map_err(|_| SqliteRunLogError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        })?;
        if current > SCHEMA_VERSION {
            return Err(SqliteRunLogError::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if current >= target {
            return Ok(());
        }
        let Some(sql) = MIGRATIONS.get(current) else {
            return Ok(());
        };
        tx.execute_batch(sql)?;
        let next = i64::try_from(current + 1).unwrap_or(i64::MAX);
        tx.pragma_update(None, "user_version", next)?;
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_version_one_database_is_migrated_forward_keeping_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.sqlite");
        {
            let mut conn = Connection::open(&path).unwrap();
            migrate_to(&mut conn, 1).unwrap();
            assert_eq!(schema_version(&conn).unwrap(), 1);
            assert_eq!(tables(&conn), ["predictions", "runs", "traces"]);
            conn.execute(
                "INSERT INTO runs (run_id, created_unix_ms, metadata) VALUES ('r1', 0, '{}')",
                [],
            )
            .unwrap();
        }
        let mut conn = Connection::open(&path).unwrap();
        migrate(&mut conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), 2);
        assert_eq!(
            tables(&conn),
            ["diagnoses", "evolutions", "predictions", "runs", "traces"]
        );
        let runs: i64 = conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(runs, 1);
        // Migrating again is a no-op.
        migrate(&mut conn).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), 2);
    }

    #[test]
    fn a_newer_or_negative_schema_is_refused() {
        for version in [3_i64, -1] {
            let mut conn = Connection::open_in_memory().unwrap();
            conn.pragma_update(None, "user_version", version).unwrap();
            assert!(matches!(
                migrate(&mut conn),
                Err(SqliteRunLogError::SchemaTooNew { found, supported: 2 }) if found == version
            ));
        }
    }
}
