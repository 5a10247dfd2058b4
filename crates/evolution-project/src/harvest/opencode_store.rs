//! OpenCode's SQLite store read for `harvest --source opencode`: the top-level sessions (a
//! session with a `parent_id` is a subagent's, read with none of its parent's turns), each
//! with its messages and their parts in order, opened read-only, one session at a time (a row
//! that cannot be read leaves out its session only). The rows become sessions in
//! `evolution_harvest::opencode`.

use std::path::{Path, PathBuf};

use evolution_harvest::limits::Exceeded;
use evolution_harvest::opencode::{OpenCodeMessageRows, OpenCodeSessionRow, read_opencode_session};
use evolution_harvest::session::{Session, TextPolicy};
use rusqlite::types::ValueRef;
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

/// Longest session id or working folder read; a row with a longer one is left out.
const MAX_FIELD_BYTES: usize = 64 * 1024;

/// Gives every top-level session of the store at `path` to `on_session`, oldest first, one at
/// a time (each read with a policy from `policy`): a row that cannot be read (a NULL or
/// oversized id or folder), a session whose rows cannot be read or that crosses a bound is
/// given as the reason it is left out, and the next one is read.
///
/// # Errors
/// A file that is not an OpenCode store (bad input naming it), or what `on_session` returns.
pub(super) fn read_store(
    path: &Path,
    mut policy: impl FnMut() -> TextPolicy,
    on_session: &mut dyn FnMut(ReadSession) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
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
    // The sessions' row ids first, then each row when its turn comes: no statement stays open
    // while the sessions are judged and written, so OpenCode can write meanwhile.
    let ids: Vec<i64> = db
        .prepare(
            "SELECT rowid FROM session WHERE parent_id IS NULL \
             ORDER BY time_created, id LIMIT ?1",
        )
        .and_then(|mut s| s.query_map(params![MAX_SESSIONS], |r| r.get(0))?.collect())
        .map_err(not_store)?;
    let mut sessions = db
        .prepare("SELECT id, directory, time_created, time_updated FROM session WHERE rowid = ?1")
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
    for rowid in ids {
        let session = match sessions.query_row(params![rowid], |row| Ok(session_row(row))) {
            Ok(Ok(session)) => session,
            Ok(Err(reason)) => {
                on_session(Err((
                    path.join(format!("session-row-{rowid}")),
                    FileProblem::File(reason),
                )))?;
                continue;
            }
            Err(e) => {
                on_session(Err((
                    path.join(format!("session-row-{rowid}")),
                    FileProblem::File(format!("cannot read the session's row: {e}")),
                )))?;
                continue;
            }
        };
        let policy = policy();
        let place = path.join(&session.id);
        let read = match message_rows(&mut messages, &mut parts, &session.id, &policy) {
            Ok(Ok(message_rows)) => read_opencode_session(&session, &message_rows, policy)
                .map_err(|why| (place, FileProblem::Limit(why))),
            Ok(Err(why)) => Err((place, FileProblem::Limit(why))),
            Err(e) => Err((
                place,
                FileProblem::File(format!("cannot read session {:?}: {e}", session.id)),
            )),
        };
        on_session(read)?;
    }
    Ok(())
}

/// A `session` row's fields, or why the row cannot be read.
fn session_row(row: &rusqlite::Row<'_>) -> Result<OpenCodeSessionRow, String> {
    let field = |i: usize, name: &str| -> Result<String, String> {
        match row.get_ref(i).map_err(|e| e.to_string())? {
            ValueRef::Text(bytes) if bytes.len() <= MAX_FIELD_BYTES => {
                Ok(String::from_utf8_lossy(bytes).into_owned())
            }
            ValueRef::Text(bytes) => Err(format!(
                "a session row whose {name} is {} bytes, over the limit of {MAX_FIELD_BYTES}",
                bytes.len()
            )),
            ValueRef::Integer(i) => Ok(i.to_string()),
            ValueRef::Null => Err(format!("a session row whose {name} is NULL")),
            ValueRef::Real(_) | ValueRef::Blob(_) => {
                Err(format!("a session row whose {name} is not text"))
            }
        }
    };
    let millis = |i: usize| match row.get_ref(i) {
        Ok(ValueRef::Integer(ms)) => Some(ms),
        _ => None,
    };
    let id = field(0, "id")?;
    let directory = field(1, "directory").map_err(|e| format!("{e} (session {id:?})"))?;
    Ok(OpenCodeSessionRow {
        id,
        directory,
        time_created: millis(2),
        time_updated: millis(3),
    })
}

/// The messages of session `id` with their parts, in order; the bound crossed when together
/// they are larger than a session may be.
fn message_rows(
    messages: &mut rusqlite::Statement<'_>,
    parts: &mut rusqlite::Statement<'_>,
    id: &str,
    policy: &TextPolicy,
) -> rusqlite::Result<Result<Vec<OpenCodeMessageRows>, Exceeded>> {
    let limit = policy.budget.limits.max_session_bytes;
    let mut bytes = 0usize;
    let mut over = |text: &str| {
        bytes = bytes.saturating_add(text.len());
        bytes > limit
    };
    let found: Vec<(String, Option<i64>, String)> = {
        let mut found = Vec::new();
        let mut rows = messages.query(params![id, MAX_ROW_BYTES, MAX_MESSAGES])?;
        while let Some(m) = rows.next()? {
            let data = text(m.get_ref(2)?);
            if over(&data) {
                return Ok(Err(Exceeded::SessionBytes { limit }));
            }
            let time = match m.get_ref(1)? {
                ValueRef::Integer(ms) => Some(ms),
                _ => None,
            };
            found.push((text(m.get_ref(0)?), time, data));
        }
        found
    };
    let mut with_parts = Vec::with_capacity(found.len());
    for (message_id, time_created, data) in found {
        let mut texts = Vec::new();
        let mut rows = parts.query(params![message_id, MAX_ROW_BYTES])?;
        while let Some(p) = rows.next()? {
            let part = text(p.get_ref(0)?);
            if over(&part) {
                return Ok(Err(Exceeded::SessionBytes { limit }));
            }
            texts.push(part);
        }
        with_parts.push(OpenCodeMessageRows {
            time_created,
            data,
            parts: texts,
        });
    }
    Ok(Ok(with_parts))
}

/// A column as text (a blob as UTF-8, lossily); empty for a number or NULL, which no JSON row
/// or id is, so the reader skips and counts it.
fn text(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            String::from_utf8_lossy(bytes).into_owned()
        }
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Null | ValueRef::Real(_) => String::new(),
    }
}
