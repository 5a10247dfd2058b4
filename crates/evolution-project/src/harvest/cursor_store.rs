//! Cursor's SQLite stores read for `harvest --source cursor`, opened read-only: each composer
//! (`composerData:<id>`) of `globalStorage/state.vscdb` with its bubbles
//! (`bubbleId:<id>:<bubble>`), and the workspace each was opened in, from the
//! `composer.composerData` list of `workspaceStorage/<hash>/state.vscdb` and the folder of
//! `<hash>/workspace.json`; and the chats of the panel that predates composers
//! (`workbench.panel.aichat.view.aichat.chatdata` of each workspace store), with that
//! workspace's folder. A global store without composers (`cursorDiskKV`), as Cursor versions
//! before them wrote, has none to read. The rows become sessions in `evolution_harvest::cursor`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use evolution_harvest::cursor::{CursorComposerRows, read_cursor_chat_panel, read_cursor_composer};
use evolution_harvest::limits::{Budget, Exceeded, SkipReason};
use evolution_harvest::session::TextPolicy;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, params};

use super::files::{FileProblem, workspace_folder};
use super::opencode_store::ReadSession;
use crate::error::bad_at;

/// Largest composer or bubble value read; a larger one is left out.
const MAX_VALUE_BYTES: i64 = 16 * 1024 * 1024;

/// Most composers read from one store.
const MAX_COMPOSERS: i64 = 100_000;

/// Most bubbles read of one composer.
const MAX_BUBBLES: i64 = 100_000;

/// Most workspace folders looked at.
const MAX_WORKSPACES: usize = 10_000;

/// The `ItemTable` key of the chat panel that predates composers, in a workspace store.
const PANEL_KEY: &str = "workbench.panel.aichat.view.aichat.chatdata";

/// A path that was not read, and why.
type PathProblem = (PathBuf, String);

/// Longest key read: a composer or bubble key is an id or two.
const MAX_KEY_BYTES: i64 = 4096;

/// Gives every composer of the Cursor stores at `from` (Cursor's `User` folder, or its
/// `globalStorage/state.vscdb`) to `on_session`, one at a time in key order (the chat panel's
/// chats first), each read with a policy from `policy`; returns the workspace stores that could
/// not be read. A composer whose rows cannot be read, or that crosses a bound, is given as the
/// reason it is left out, and the next one is read.
///
/// # Errors
/// No global store there, or a file that is not one (bad input naming it), or what
/// `on_session` returns.
pub(super) fn read_store(
    from: &Path,
    mut policy: impl FnMut() -> TextPolicy,
    on_session: &mut dyn FnMut(ReadSession) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<PathProblem>> {
    let (global, workspaces) = if from.is_dir() {
        (
            from.join("globalStorage").join("state.vscdb"),
            Some(from.join("workspaceStorage")),
        )
    } else {
        let user = from
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "globalStorage"))
            .and_then(Path::parent);
        (from.to_path_buf(), user.map(|u| u.join("workspaceStorage")))
    };
    if !global.is_file() {
        return Err(bad_at(
            &global,
            None,
            "is not Cursor's store (pass --from with Cursor's User folder or its \
             globalStorage/state.vscdb)",
        ));
    }
    let db = open(&global)
        .map_err(|e| bad_at(&global, None, format!("cannot open as a SQLite store: {e}")))?;
    let not_store = |e: rusqlite::Error| {
        bad_at(
            &global,
            None,
            format!("is not a Cursor store this version reads: {e}"),
        )
    };
    // Cursor before composers had no `cursorDiskKV`: its chats are the panel's alone.
    let has_composers: bool = db
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'cursorDiskKV'",
            [],
            |row| row.get(0),
        )
        .map_err(not_store)?;
    let Workspaces { projects, problems } = match workspaces {
        Some(dir) if dir.is_dir() => workspaces_at(&dir, &mut policy, on_session)?,
        _ => Workspaces::default(),
    };
    if !has_composers {
        return Ok(problems);
    }
    // The composers' row ids first, then each one when its turn comes: no statement stays open
    // while the sessions are judged and written, so Cursor can write meanwhile.
    let ids: Vec<i64> = db
        .prepare(
            "SELECT rowid FROM cursorDiskKV WHERE key >= 'composerData:' \
             AND key < 'composerData;' AND length(key) <= ?1 ORDER BY key LIMIT ?2",
        )
        .and_then(|mut s| {
            s.query_map(params![MAX_KEY_BYTES, MAX_COMPOSERS], |r| r.get(0))?
                .collect()
        })
        .map_err(not_store)?;
    let mut composer_key = db
        .prepare("SELECT key FROM cursorDiskKV WHERE rowid = ?1")
        .map_err(not_store)?;
    let mut value = db
        .prepare("SELECT value FROM cursorDiskKV WHERE key = ?1 AND length(value) <= ?2")
        .map_err(not_store)?;
    let mut bubbles = db
        .prepare(
            "SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 \
             AND length(value) <= ?3 ORDER BY key LIMIT ?4",
        )
        .map_err(not_store)?;
    for rowid in ids {
        let key = match composer_key.query_row(params![rowid], |row| Ok(text(row.get_ref(0)?))) {
            Ok(Some(key)) => key,
            Ok(None) => continue,
            Err(e) => {
                on_session(Err((
                    global.clone(),
                    FileProblem::File(format!("cannot read a composer's key: {e}")),
                )))?;
                continue;
            }
        };
        let composer_id = key.strip_prefix("composerData:").unwrap_or(&key).to_owned();
        let place = PathBuf::from(format!("{}:{key}", global.display()));
        let policy = policy();
        let read = composer(&mut value, &mut bubbles, &key, &composer_id, &policy);
        let read = match read {
            Ok(Ok(Some(mut rows))) => {
                rows.project = projects.get(&composer_id).cloned();
                read_cursor_composer(&rows, policy).map_err(|e| match e {
                    SkipReason::Limit(why) => (place, FileProblem::Limit(why)),
                    SkipReason::Malformed(reason) => (place, FileProblem::File(reason)),
                })
            }
            Ok(Ok(None)) => Err((
                place,
                FileProblem::File("the composer's value is empty or too large".to_owned()),
            )),
            Ok(Err(why)) => Err((place, FileProblem::Limit(why))),
            Err(e) => Err((
                place,
                FileProblem::File(format!("cannot read it or its messages: {e}")),
            )),
        };
        on_session(read)?;
    }
    Ok(problems)
}

/// The rows of composer `key`: `None` when its value is empty, not text or too large; the bound
/// crossed when its rows are larger together than a session may be.
fn composer(
    value: &mut rusqlite::Statement<'_>,
    bubbles: &mut rusqlite::Statement<'_>,
    key: &str,
    composer_id: &str,
    policy: &TextPolicy,
) -> rusqlite::Result<Result<Option<CursorComposerRows>, Exceeded>> {
    let limit = policy.budget.limits.max_session_bytes;
    let composer_data = match value.query_row(params![key, MAX_VALUE_BYTES], |row| {
        Ok(text(row.get_ref(0)?))
    }) {
        Ok(Some(data)) => data,
        Ok(None) | Err(rusqlite::Error::QueryReturnedNoRows) => return Ok(Ok(None)),
        Err(e) => return Err(e),
    };
    let mut bytes = composer_data.len();
    let prefix = format!("bubbleId:{composer_id}:");
    let end = format!("bubbleId:{composer_id};");
    let mut found = Vec::new();
    let mut rows = bubbles.query(params![prefix, end, MAX_VALUE_BYTES, MAX_BUBBLES])?;
    while let Some(row) = rows.next()? {
        let (Some(key), Some(value)) = (text(row.get_ref(0)?), text(row.get_ref(1)?)) else {
            continue;
        };
        bytes = bytes.saturating_add(value.len());
        if bytes > limit {
            return Ok(Err(Exceeded::SessionBytes { limit }));
        }
        if let Some(id) = key.strip_prefix(&prefix) {
            found.push((id.to_owned(), value));
        }
    }
    Ok(Ok(Some(CursorComposerRows {
        composer_id: composer_id.to_owned(),
        composer_data,
        bubbles: found,
        project: None,
    })))
}

/// Opens a store read-only.
fn open(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// A value column as text: Cursor writes JSON as text or as a blob of UTF-8.
fn text(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        ValueRef::Null | ValueRef::Integer(_) | ValueRef::Real(_) => None,
    }
}

/// What the workspace stores hold: the folder of each composer a workspace lists, and the
/// stores that could not be read.
#[derive(Default)]
struct Workspaces {
    /// Composer id → the folder of the workspace that lists it.
    projects: HashMap<String, String>,
    /// Stores that could not be read, and why.
    problems: Vec<PathProblem>,
}

/// One `ItemTable` value of a workspace store: `Ok(None)` when the key is not there.
fn item(db: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    match db.query_row(
        "SELECT value FROM ItemTable WHERE key = ?1 AND length(value) <= ?2",
        params![key, MAX_VALUE_BYTES],
        |row| Ok(text(row.get_ref(0)?)),
    ) {
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        other => other,
    }
}

/// Reads every workspace store under `dir` (each `<hash>/state.vscdb` beside a
/// `workspace.json` naming its folder): the composers it lists, and its chat panel's chats,
/// each read with a policy from `policy` and given to `on_session`. A workspace without a
/// folder or a store is passed over; a store that cannot be read is a problem.
///
/// # Errors
/// What `on_session` returns.
fn workspaces_at(
    dir: &Path,
    policy: &mut impl FnMut() -> TextPolicy,
    on_session: &mut dyn FnMut(ReadSession) -> anyhow::Result<()>,
) -> anyhow::Result<Workspaces> {
    let mut found = Workspaces::default();
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .take(MAX_WORKSPACES)
            .collect(),
        Err(e) => {
            found.problems.push((dir.to_path_buf(), e.to_string()));
            return Ok(found);
        }
    };
    entries.sort();
    for storage in entries {
        let store = storage.join("state.vscdb");
        let Some(folder) = workspace_folder(&storage) else {
            continue;
        };
        if !store.is_file() {
            continue;
        }
        let read = open(&store)
            .and_then(|db| Ok((item(&db, "composer.composerData")?, item(&db, PANEL_KEY)?)));
        let (listed, chatdata) = match read {
            Ok(values) => values,
            Err(e) => {
                found
                    .problems
                    .push((store, format!("cannot read its chats: {e}")));
                continue;
            }
        };
        if let Some(chatdata) = chatdata {
            let place = PathBuf::from(format!("{}:{PANEL_KEY}", store.display()));
            match read_cursor_chat_panel(&chatdata, Some(&folder), &mut *policy) {
                Ok(sessions) => {
                    for session in sessions {
                        on_session(Ok(session))?;
                    }
                }
                Err(SkipReason::Limit(why)) => on_session(Err((place, FileProblem::Limit(why))))?,
                Err(SkipReason::Malformed(e)) => on_session(Err((place, FileProblem::File(e))))?,
            }
        }
        let Some(listed) = listed else {
            continue;
        };
        let Ok(value) = Budget::default().parse(&listed) else {
            found
                .problems
                .push((store, "its composer list is not JSON".to_owned()));
            continue;
        };
        let ids = value
            .get("allComposers")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("composerId").and_then(serde_json::Value::as_str));
        for id in ids {
            found
                .projects
                .entry(id.to_owned())
                .or_insert_with(|| folder.clone());
        }
    }
    Ok(found)
}
