//! OpenCode's SQLite store read for `harvest --source opencode`: the top-level sessions (a
//! session with a `parent_id` is a subagent's, read with none of its parent's turns), each
//! with its messages and their parts in order, opened read-only. The rows become sessions in
//! `evolution_harvest::opencode`.

use std::path::{Path, PathBuf};

use evolution_harvest::opencode::{OpenCodeMessageRows, OpenCodeSessionRow, read_opencode_session};
use evolution_harvest::session::{Session, TextPolicy};
use rusqlite::{Connection, OpenFlags, params};

use super::files::FileProblem;
use crate::error::bad_at;

/// Largest message or part JSON read; a larger one is left out of its session.
const MAX_ROW_BYTES: i64 = 16 * 1024 * 1024;

/// Most sessions read from one store.
const MAX_SESSIONS: i64 = 100_000;

/// Most messages read of one session.
const MAX_MESSAGES: i64 = 100_000;

/// A session read, or the store and the problem that left it out.
pub(super) type ReadSession = Result<(Session, TextPolicy), (PathBuf, FileProblem)>;

/// Every top-level session of the store at `path`, oldest first, each read with a policy from
/// `policy`.
///
/// # Errors
/// A file that is not an OpenCode store (bad input naming it).
pub(super) fn read_store(
    path: &Path,
    mut policy: impl FnMut() -> TextPolicy,
) -> anyhow::Result<Vec<ReadSession>> {
    if !path.is_file() {
        return Err(bad_at(
            path,
            None,
            "is not OpenCode's store (pass --from with the path of opencode.db)",
        ));
    }
    let db = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| bad_at(path, None, format!("cannot open as a SQLite store: {e}")))?;
    let not_store = |e: rusqlite::Error| {
        bad_at(
            path,
            None,
            format!("is not an OpenCode store this version reads: {e}"),
        )
    };
    let mut sessions = db
        .prepare(
            "SELECT id, directory, time_created, time_updated FROM session \
             WHERE parent_id IS NULL ORDER BY time_created, id LIMIT ?1",
        )
        .map_err(not_store)?;
    let rows: Vec<OpenCodeSessionRow> = sessions
        .query_map(params![MAX_SESSIONS], |row| {
            Ok(OpenCodeSessionRow {
                id: row.get(0)?,
                directory: row.get(1)?,
                time_created: row.get(2)?,
                time_updated: row.get(3)?,
            })
        })
        .and_then(Iterator::collect)
        .map_err(not_store)?;
    let mut messages = db
        .prepare(
            "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
             AND length(data) <= ?2 ORDER BY time_created, id LIMIT ?3",
        )
        .map_err(not_store)?;
    let mut parts = db
        .prepare("SELECT data FROM part WHERE message_id = ?1 AND length(data) <= ?2 ORDER BY id")
        .map_err(not_store)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let read = (|| -> rusqlite::Result<Vec<OpenCodeMessageRows>> {
            let found: Vec<(String, Option<i64>, String)> = messages
                .query_map(params![row.id, MAX_ROW_BYTES, MAX_MESSAGES], |m| {
                    Ok((m.get(0)?, m.get(1)?, m.get(2)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut with_parts = Vec::with_capacity(found.len());
            for (id, time_created, data) in found {
                let texts: Vec<String> = parts
                    .query_map(params![id, MAX_ROW_BYTES], |p| p.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                with_parts.push(OpenCodeMessageRows {
                    time_created,
                    data,
                    parts: texts,
                });
            }
            Ok(with_parts)
        })();
        out.push(match read {
            Ok(message_rows) => Ok(read_opencode_session(&row, &message_rows, policy())),
            Err(e) => Err((
                path.join(&row.id),
                FileProblem::File(format!("cannot read session {:?}: {e}", row.id)),
            )),
        });
    }
    Ok(out)
}
