//! The file on disk: WAL mode, schema version, refusal of newer schemas.

use evolution_runlog_sqlite::{SqliteRunLog, SqliteRunLogError};

#[tokio::test]
async fn a_new_file_is_in_wal_mode_at_the_current_schema() {
    let (dir, log) = crate::fresh_log();
    assert_eq!(log.schema_version().await.unwrap(), 2);
    let raw = rusqlite::Connection::open(dir.path().join("runs.sqlite")).unwrap();
    let mode: String = raw
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn a_file_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.sqlite");
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", 99).unwrap();
    drop(raw);
    assert!(matches!(
        SqliteRunLog::open(&path),
        Err(SqliteRunLogError::SchemaTooNew {
            found: 99,
            supported: 2
        })
    ));
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("text.sqlite");
    std::fs::write(
        &path,
        "this is not a database, just some text that is long enough",
    )
    .unwrap();
    assert!(matches!(
        SqliteRunLog::open(&path),
        Err(SqliteRunLogError::Sqlite(_))
    ));
}
