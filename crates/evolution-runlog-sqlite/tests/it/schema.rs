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

/// Every file in `dir` by name, with a hash of its bytes: what "nothing changed" is checked
/// against.
fn snapshot(dir: &std::path::Path) -> Vec<(String, u64)> {
    use std::hash::{Hash, Hasher};
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(e.path()).unwrap().hash(&mut hasher);
            (
                e.file_name().to_string_lossy().into_owned(),
                hasher.finish(),
            )
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn read_only_opening_refuses_another_programs_database_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.sqlite");
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
        .unwrap();
    drop(raw);
    let before = snapshot(dir.path());
    let err = SqliteRunLog::open_read_only(&path).unwrap_err();
    assert!(
        matches!(&err, SqliteRunLogError::NotARunLog { reason, .. } if reason.contains("runs")),
        "{err}"
    );
    assert_eq!(
        snapshot(dir.path()),
        before,
        "the foreign database was modified"
    );
}

#[tokio::test]
async fn read_only_opening_of_a_missing_or_non_database_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite");
    assert!(SqliteRunLog::open_read_only(&missing).is_err());
    assert!(!missing.exists(), "a missing log was created");
    let text = dir.path().join("text.sqlite");
    std::fs::write(
        &text,
        "plain text that is long enough to look like a file, not a db",
    )
    .unwrap();
    assert!(matches!(
        SqliteRunLog::open_read_only(&text),
        Err(SqliteRunLogError::NotARunLog { .. })
    ));
}

#[tokio::test]
async fn a_read_only_log_reads_records_and_refuses_writes() {
    use evolution_types::RunLog;
    let (dir, log) = crate::fresh_log();
    log.create_run("r1", serde_json::json!({})).await.unwrap();
    log.insert_predictions("r1", vec![crate::prediction("q1", true)])
        .await
        .unwrap();
    drop(log);
    let path = dir.path().join("runs.sqlite");
    let before = std::fs::read(&path).unwrap();
    let read_only = SqliteRunLog::open_read_only(&path).unwrap();
    let predictions = read_only.get_predictions("r1", None).await.unwrap();
    assert_eq!(predictions.len(), 1);
    let err = read_only
        .create_run("r2", serde_json::json!({}))
        .await
        .unwrap_err();
    assert!(matches!(err, SqliteRunLogError::ReadOnly { .. }), "{err}");
    drop(read_only);
    // SQLite may leave the WAL's side files; the database itself is untouched.
    assert!(
        std::fs::read(&path).unwrap() == before,
        "reading changed the log"
    );
}
