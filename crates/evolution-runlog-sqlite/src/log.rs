//! The run log: connections, the read port and the write side.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use evolution_types::{
    DiagnosisResult, EvolutionResult, JsonMap, Prediction, RunLog, RunLogError, TraceStep,
};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Row, Transaction, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::SqliteRunLogError;
use crate::schema::{migrate, schema_version};

type Result<T> = std::result::Result<T, SqliteRunLogError>;

/// How long a connection waits for another's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle read connections kept for reuse.
const MAX_IDLE_READERS: usize = 8;

/// One run as listed by [`SqliteRunLog::runs`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The run's id.
    pub run_id: String,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_unix_ms: i64,
    /// The metadata given to [`SqliteRunLog::create_run`].
    pub metadata: serde_json::Value,
}

/// A run log on one SQLite file in WAL mode.
///
/// One writer connection (writes are serialized) and a pool of read-only connections, so
/// readers run concurrently with each other and with a writer, and see only committed
/// transactions. Every call runs on tokio's blocking pool when a tokio runtime is present,
/// and inline otherwise. Cloning is cheap and shares the connections.
#[derive(Debug, Clone)]
pub struct SqliteRunLog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Opened by [`SqliteRunLog::open_read_only`]: every write is refused.
    read_only: bool,
}

/// Creates the empty file `path` owner-only when it is missing (SQLite would create it with
/// its own mode); refuses a symbolic link there.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(nix::libc::O_NOFOLLOW);
    }
    options.open(path).map(drop)
}

impl SqliteRunLog {
    /// Opens (creating if needed) the log at `path`, switches it to WAL mode and migrates its
    /// schema forward to the version this build writes. The log holds what agents answered:
    /// a new file is readable by its owner only (0600 on Unix, which SQLite gives its
    /// write-ahead log and index files too), and a symbolic link at `path` is refused.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteRunLog> {
        let path = path.as_ref().to_path_buf();
        create_private(&path).map_err(|source| SqliteRunLogError::Create {
            path: path.clone(),
            source,
        })?;
        let mut writer = Connection::open_with_flags(
            &path,
            OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )?;
        writer.busy_timeout(BUSY_TIMEOUT)?;
        let mode: String =
            writer.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(SqliteRunLogError::NotWal { mode });
        }
        writer.pragma_update(None, "synchronous", "NORMAL")?;
        writer.pragma_update(None, "foreign_keys", true)?;
        migrate(&mut writer)?;
        Ok(SqliteRunLog {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                read_only: false,
            }),
        })
    }

    /// Opens an existing log for reading only: nothing in the file changes (no migration, no
    /// switch of journal mode), and every write returns [`SqliteRunLogError::ReadOnly`].
    ///
    /// A missing file is an error (it is never created), and so is an SQLite database that is
    /// not a run log: one without this crate's schema version and tables.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<SqliteRunLog> {
        let path = path.as_ref().to_path_buf();
        let conn = open_reader(&path)?;
        check_run_log_schema(&path, &conn)?;
        Ok(SqliteRunLog {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(conn),
                readers: Mutex::new(Vec::new()),
                read_only: true,
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The schema version of the file (`PRAGMA user_version`).
    pub async fn schema_version(&self) -> Result<i64> {
        self.read(schema_version).await
    }

    /// Registers a run with free-form metadata (model, dataset, versions, ...).
    pub async fn create_run(&self, run_id: &str, metadata: serde_json::Value) -> Result<()> {
        let run_id = run_id.to_owned();
        let metadata = encode(&metadata)?;
        self.write(move |tx| {
            let inserted = tx.execute(
                "INSERT INTO runs (run_id, created_unix_ms, metadata) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id) DO NOTHING",
                params![run_id, now_unix_ms(), metadata],
            )?;
            if inserted == 0 {
                return Err(SqliteRunLogError::RunExists { run_id });
            }
            Ok(())
        })
        .await
    }

    /// The metadata of a run.
    pub async fn run_metadata(&self, run_id: &str) -> Result<serde_json::Value> {
        let run_id = run_id.to_owned();
        self.read(move |conn| {
            let text: Option<String> = conn
                .query_row(
                    "SELECT metadata FROM runs WHERE run_id = ?1",
                    [&run_id],
                    |r| r.get(0),
                )
                .optional()?;
            let text = text.ok_or_else(|| SqliteRunLogError::RunNotFound {
                run_id: run_id.clone(),
            })?;
            decode(&run_id, &text)
        })
        .await
    }

    /// Every run, oldest first.
    pub async fn runs(&self) -> Result<Vec<RunInfo>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT run_id, created_unix_ms, metadata FROM runs ORDER BY created_unix_ms, run_id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
            })?;
            let mut runs = Vec::new();
            for row in rows {
                let (run_id, created_unix_ms, metadata) = row?;
                let metadata = decode(&run_id, &metadata)?;
                runs.push(RunInfo {
                    run_id,
                    created_unix_ms,
                    metadata,
                });
            }
            Ok(runs)
        })
        .await
    }

    /// Stores predictions of a run in one transaction: all or none.
    ///
    /// A record with an empty `run_id` takes `run_id`; one naming another run is refused, as is
    /// a second prediction for the same question. Returns the number stored.
    pub async fn insert_predictions(
        &self,
        run_id: &str,
        predictions: Vec<Prediction>,
    ) -> Result<usize> {
        let rows = prediction_rows(run_id, predictions)?;
        let run_id = run_id.to_owned();
        self.write(move |tx| insert_prediction_rows(tx, &run_id, &rows))
            .await
    }

    /// Stores trace steps of a run in one transaction: all or none.
    ///
    /// Same `run_id` rule as [`SqliteRunLog::insert_predictions`]; a step number stored twice
    /// for one question is refused. Returns the number stored.
    pub async fn insert_traces(&self, run_id: &str, steps: Vec<TraceStep>) -> Result<usize> {
        let rows = trace_rows(run_id, steps)?;
        let run_id = run_id.to_owned();
        self.write(move |tx| insert_trace_rows(tx, &run_id, &rows))
            .await
    }

    /// Records the outcomes of rollouts in one transaction: all or none.
    ///
    /// Creates the run (with empty metadata) when it is new, then, for every question that has
    /// a prediction in `predictions`, replaces what was stored for it before (its prediction
    /// and every trace step) with the new prediction and the steps of `steps` for that
    /// question (a question with steps but no prediction in the batch loses its old ones too).
    /// This is the write the evolution harness makes after each batch of rollouts: a question
    /// run again (an INFRA failure retried after a resume) replaces its old record. Same
    /// `run_id` rule as [`SqliteRunLog::insert_predictions`]. Returns the number of predictions
    /// stored.
    pub async fn replace_outcomes(
        &self,
        run_id: &str,
        predictions: Vec<Prediction>,
        steps: Vec<TraceStep>,
    ) -> Result<usize> {
        let rows = prediction_rows(run_id, predictions)?;
        let traces = trace_rows(run_id, steps)?;
        let questions: std::collections::BTreeSet<String> = rows
            .iter()
            .map(|r| r.question_id.clone())
            .chain(traces.iter().map(|t| t.step.question_id.clone()))
            .collect();
        let run_id = run_id.to_owned();
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO runs (run_id, created_unix_ms, metadata) VALUES (?1, ?2, '{}')
                 ON CONFLICT (run_id) DO NOTHING",
                params![run_id, now_unix_ms()],
            )?;
            {
                let mut del_p = tx.prepare_cached(
                    "DELETE FROM predictions WHERE run_id = ?1 AND question_id = ?2",
                )?;
                let mut del_t =
                    tx.prepare_cached("DELETE FROM traces WHERE run_id = ?1 AND question_id = ?2")?;
                for question_id in &questions {
                    del_p.execute(params![run_id, question_id])?;
                    del_t.execute(params![run_id, question_id])?;
                }
            }
            let n = insert_prediction_rows(tx, &run_id, &rows)?;
            insert_trace_rows(tx, &run_id, &traces)?;
            Ok(n)
        })
        .await
    }

    /// Imports predictions from a JSONL file (one JSON object a line, blank lines skipped) in
    /// one transaction. A bad line fails the import, naming the line, and stores nothing.
    pub async fn import_predictions_jsonl(
        &self,
        run_id: &str,
        path: impl AsRef<Path>,
    ) -> Result<usize> {
        let path = path.as_ref().to_path_buf();
        let run_id = run_id.to_owned();
        self.write(move |tx| {
            let records: Vec<Prediction> = read_jsonl(&path)?;
            let rows = prediction_rows(&run_id, records)?;
            insert_prediction_rows(tx, &run_id, &rows)
        })
        .await
    }

    /// Imports trace steps from a JSONL file, like [`SqliteRunLog::import_predictions_jsonl`].
    pub async fn import_traces_jsonl(&self, run_id: &str, path: impl AsRef<Path>) -> Result<usize> {
        let path = path.as_ref().to_path_buf();
        let run_id = run_id.to_owned();
        self.write(move |tx| {
            let records: Vec<TraceStep> = read_jsonl(&path)?;
            let rows = trace_rows(&run_id, records)?;
            insert_trace_rows(tx, &run_id, &rows)
        })
        .await
    }

    /// Stores a diagnosis result under its `run_id`; a run may hold several.
    pub async fn store_diagnosis(&self, result: &DiagnosisResult) -> Result<()> {
        self.store_result("diagnoses", &result.run_id, encode(result)?)
            .await
    }

    /// The diagnosis results of a run, in the order they were stored.
    pub async fn diagnoses(&self, run_id: &str) -> Result<Vec<DiagnosisResult>> {
        self.results("diagnoses", run_id).await
    }

    /// Stores an evolution result under its `run_id`; a run may hold several.
    pub async fn store_evolution(&self, result: &EvolutionResult) -> Result<()> {
        self.store_result("evolutions", &result.run_id, encode(result)?)
            .await
    }

    /// The evolution results of a run, in the order they were stored.
    pub async fn evolutions(&self, run_id: &str) -> Result<Vec<EvolutionResult>> {
        self.results("evolutions", run_id).await
    }

    async fn store_result(&self, table: &'static str, run_id: &str, json: String) -> Result<()> {
        let run_id = run_id.to_owned();
        self.write(move |tx| {
            require_run(tx, &run_id)?;
            tx.prepare_cached(&format!(
                "INSERT INTO {table} (run_id, created_unix_ms, result) VALUES (?1, ?2, ?3)"
            ))?
            .execute(params![run_id, now_unix_ms(), json])?;
            Ok(())
        })
        .await
    }

    async fn results<T: DeserializeOwned + Send + 'static>(
        &self,
        table: &'static str,
        run_id: &str,
    ) -> Result<Vec<T>> {
        let run_id = run_id.to_owned();
        self.read(move |conn| {
            require_run(conn, &run_id)?;
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT result FROM {table} WHERE run_id = ?1 ORDER BY id"
            ))?;
            let rows = stmt.query_map([&run_id], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(decode(&run_id, &row?)?);
            }
            Ok(out)
        })
        .await
    }

    async fn query_records<T: Send + 'static>(
        &self,
        sql: &'static str,
        run_id: &str,
        question_ids: Option<&[String]>,
        decode_row: fn(&str, &Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let run_id = run_id.to_owned();
        let filter = question_ids.map(encode).transpose()?;
        self.read(move |conn| {
            require_run(conn, &run_id)?;
            let mut stmt = conn.prepare_cached(sql)?;
            let mut rows = match &filter {
                Some(ids) => stmt.query(params![run_id, ids])?,
                None => stmt.query(params![run_id])?,
            };
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                out.push(decode_row(&run_id, row)?);
            }
            Ok(out)
        })
        .await
    }

    /// Runs `f` in one immediate transaction on the writer connection; commits if it succeeds.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
    {
        if self.inner.read_only {
            return Err(SqliteRunLogError::ReadOnly {
                path: self.inner.path.clone(),
            });
        }
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            let mut conn = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        })
        .await
    }

    /// Runs `f` on a pooled read-only connection, inside one read transaction so that it sees a
    /// single committed state.
    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            let pooled = inner
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => open_reader(&inner.path)?,
            };
            let out = {
                let tx = conn.transaction()?;
                let out = f(&tx);
                tx.finish()?;
                out
            };
            let mut idle = inner.readers.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < MAX_IDLE_READERS {
                idle.push(conn);
            }
            out
        })
        .await
    }
}

/// Selects of the read port: every row of a run, or only those of some questions. Two
/// statements rather than one with `?2 IS NULL OR ...`, so that the filtered one can look
/// each question up in the unique index instead of scanning the run.
const PREDICTIONS_ALL: &str = "SELECT record FROM predictions WHERE run_id = ?1 ORDER BY id";
const PREDICTIONS_SOME: &str = "SELECT record FROM predictions
     WHERE run_id = ?1 AND question_id IN (SELECT value FROM json_each(?2))
     ORDER BY id";
const TRACES_ALL: &str = "SELECT run_id, question_id, step, tool_name, tool_input, tool_output,
            thought, raw_content, extra
     FROM traces WHERE run_id = ?1
     ORDER BY question_id, step";
const TRACES_SOME: &str = "SELECT run_id, question_id, step, tool_name, tool_input, tool_output,
            thought, raw_content, extra
     FROM traces
     WHERE run_id = ?1 AND question_id IN (SELECT value FROM json_each(?2))
     ORDER BY question_id, step";

#[async_trait]
impl RunLog for SqliteRunLog {
    async fn get_predictions(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> std::result::Result<Vec<Prediction>, RunLogError> {
        let sql = if question_ids.is_some() {
            PREDICTIONS_SOME
        } else {
            PREDICTIONS_ALL
        };
        Ok(self
            .query_records(sql, run_id, question_ids, |run_id, row| {
                decode(run_id, &row.get::<_, String>(0)?)
            })
            .await?)
    }

    async fn get_traces(
        &self,
        run_id: &str,
        question_ids: Option<&[String]>,
    ) -> std::result::Result<Vec<TraceStep>, RunLogError> {
        let sql = if question_ids.is_some() {
            TRACES_SOME
        } else {
            TRACES_ALL
        };
        Ok(self
            .query_records(sql, run_id, question_ids, trace_from_row)
            .await?)
    }
}

/// Runs blocking database work on tokio's blocking pool when inside a tokio runtime, so async
/// callers are not stalled; inline otherwise (other executors, or no executor at all).
async fn run_blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(f)
            .await
            .map_err(|e| SqliteRunLogError::Task {
                message: e.to_string(),
            })?,
        Err(_) => f(),
    }
}

fn open_reader(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Refuses a database that is not a run log this build can read: its schema version must be
/// one this crate wrote, and the record tables must be there.
fn check_run_log_schema(path: &Path, conn: &Connection) -> Result<()> {
    let found = match schema_version(conn) {
        Ok(found) => found,
        Err(SqliteRunLogError::Sqlite(e))
            if e.sqlite_error_code() == Some(ErrorCode::NotADatabase) =>
        {
            return Err(SqliteRunLogError::NotARunLog {
                path: path.to_path_buf(),
                reason: "it is not an SQLite database".to_owned(),
            });
        }
        Err(e) => return Err(e),
    };
    let supported = crate::schema::SCHEMA_VERSION;
    if usize::try_from(found).is_ok_and(|v| v > supported) {
        return Err(SqliteRunLogError::SchemaTooNew { found, supported });
    }
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let tables = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<std::result::Result<Vec<String>, _>>()?;
    let missing: Vec<&str> = ["runs", "predictions", "traces"]
        .into_iter()
        .filter(|t| !tables.iter().any(|have| have == t))
        .collect();
    if found < 1 || !missing.is_empty() {
        let reason = if tables.is_empty() {
            "it holds no tables".to_owned()
        } else if missing.is_empty() {
            format!("its schema version is {found}")
        } else {
            format!("it lacks the table(s) {}", missing.join(", "))
        };
        return Err(SqliteRunLogError::NotARunLog {
            path: path.to_path_buf(),
            reason,
        });
    }
    Ok(())
}

fn require_run(conn: &Connection, run_id: &str) -> Result<()> {
    let found = conn
        .prepare_cached("SELECT 1 FROM runs WHERE run_id = ?1")?
        .exists([run_id])?;
    if found {
        Ok(())
    } else {
        Err(SqliteRunLogError::RunNotFound {
            run_id: run_id.to_owned(),
        })
    }
}

/// A prediction ready to insert: question id and the whole record as JSON.
struct PredictionRow {
    question_id: String,
    json: String,
}

/// A trace step ready to insert: its fields as columns, the JSON ones encoded.
struct TraceRow {
    step: TraceStep,
    tool_input: String,
    extra: String,
}

/// Fills or checks each record's `run_id`.
fn claim(run_id: &str, record_run_id: &mut String) -> Result<()> {
    if record_run_id.is_empty() {
        run_id.clone_into(record_run_id);
        Ok(())
    } else if record_run_id == run_id {
        Ok(())
    } else {
        Err(SqliteRunLogError::RunMismatch {
            expected: run_id.to_owned(),
            found: record_run_id.clone(),
        })
    }
}

fn prediction_rows(run_id: &str, records: Vec<Prediction>) -> Result<Vec<PredictionRow>> {
    records
        .into_iter()
        .map(|mut p| {
            claim(run_id, &mut p.run_id)?;
            Ok(PredictionRow {
                json: encode(&p)?,
                question_id: p.question_id,
            })
        })
        .collect()
}

fn trace_rows(run_id: &str, records: Vec<TraceStep>) -> Result<Vec<TraceRow>> {
    records
        .into_iter()
        .map(|mut step| {
            claim(run_id, &mut step.run_id)?;
            Ok(TraceRow {
                tool_input: encode(&step.tool_input)?,
                extra: encode(&step.extra)?,
                step,
            })
        })
        .collect()
}

/// Rebuilds a trace step from its columns. Decoding the fields one by one is several times
/// faster than decoding a whole record with a flattened `extra`, and traces are the big table.
fn trace_from_row(run_id: &str, row: &Row<'_>) -> Result<TraceStep> {
    let json = |index: usize| -> Result<String> { Ok(row.get(index)?) };
    let tool_input = decode(run_id, &json(4)?)?;
    let extra_text = json(8)?;
    let extra = if extra_text == "{}" {
        JsonMap::new()
    } else {
        decode(run_id, &extra_text)?
    };
    Ok(TraceStep {
        run_id: row.get(0)?,
        question_id: row.get(1)?,
        step: row.get(2)?,
        tool_name: row.get(3)?,
        tool_input,
        tool_output: row.get(5)?,
        thought: row.get(6)?,
        raw_content: row.get(7)?,
        extra,
    })
}

fn insert_prediction_rows(
    tx: &Transaction<'_>,
    run_id: &str,
    rows: &[PredictionRow],
) -> Result<usize> {
    require_run(tx, run_id)?;
    let mut stmt = tx.prepare_cached(
        "INSERT INTO predictions (run_id, question_id, record) VALUES (?1, ?2, ?3)",
    )?;
    for row in rows {
        stmt.execute(params![run_id, row.question_id, row.json])
            .map_err(|e| {
                duplicate_or(e, run_id, || {
                    format!("a prediction for question {:?}", row.question_id)
                })
            })?;
    }
    Ok(rows.len())
}

fn insert_trace_rows(tx: &Transaction<'_>, run_id: &str, rows: &[TraceRow]) -> Result<usize> {
    require_run(tx, run_id)?;
    let mut stmt = tx.prepare_cached(
        "INSERT INTO traces (run_id, question_id, step, tool_name, tool_input, tool_output,
                             thought, raw_content, extra)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for row in rows {
        let t = &row.step;
        stmt.execute(params![
            run_id,
            t.question_id,
            t.step,
            t.tool_name,
            row.tool_input,
            t.tool_output,
            t.thought,
            t.raw_content,
            row.extra
        ])
        .map_err(|e| {
            duplicate_or(e, run_id, || {
                format!("trace step {} of question {:?}", t.step, t.question_id)
            })
        })?;
    }
    Ok(rows.len())
}

/// Turns a uniqueness violation into [`SqliteRunLogError::Duplicate`].
fn duplicate_or(
    err: rusqlite::Error,
    run_id: &str,
    what: impl FnOnce() -> String,
) -> SqliteRunLogError {
    match err.sqlite_error_code() {
        Some(ErrorCode::ConstraintViolation) => SqliteRunLogError::Duplicate {
            run_id: run_id.to_owned(),
            what: what(),
        },
        _ => SqliteRunLogError::Sqlite(err),
    }
}

fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let io_err = |source| SqliteRunLogError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let mut records = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line_no = index.saturating_add(1);
        let line = line.map_err(|e| SqliteRunLogError::Jsonl {
            path: path.to_path_buf(),
            line: line_no,
            message: e.to_string(),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line).map_err(|e| SqliteRunLogError::Jsonl {
            path: path.to_path_buf(),
            line: line_no,
            message: e.to_string(),
        })?;
        records.push(record);
    }
    Ok(records)
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(SqliteRunLogError::Encode)
}

fn decode<T: DeserializeOwned>(run_id: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| SqliteRunLogError::Corrupt {
        run_id: run_id.to_owned(),
        message: e.to_string(),
    })
}

fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
