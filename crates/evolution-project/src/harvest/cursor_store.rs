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

/// Every composer of the Cursor stores at `from` (Cursor's `User` folder, or its
/// `globalStorage/state.vscdb`), in key order, each read with a policy from `policy`; and the
/// workspace stores that could not be read.
///
/// # Errors
/// No global store there, or a file that is not one (bad input naming it).
pub(super) fn read_store(
    from: &Path,
    mut policy: impl FnMut() -> TextPolicy,
) -> anyhow::Result<(Vec<ReadSession>, Vec<PathProblem>)> {
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
    let Workspaces {
        projects,
        panel,
        problems,
    } = match workspaces {
        Some(dir) if dir.is_dir() => workspaces_at(&dir, &mut policy),
        _ => Workspaces::default(),
    };
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
    if !has_composers {
        return Ok((panel, problems));
    }
    let mut composers = db
        .prepare(
            "SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' \
             AND key < 'composerData;' AND length(value) <= ?1 ORDER BY key LIMIT ?2",
        )
        .map_err(not_store)?;
    let rows: Vec<(String, Option<String>)> = composers
        .query_map(params![MAX_VALUE_BYTES, MAX_COMPOSERS], |row| {
            Ok((row.get(0)?, text(row.get_ref(1)?)))
        })
        .and_then(Iterator::collect)
        .map_err(not_store)?;
    let mut bubbles = db
        .prepare(
            "SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 \
             AND length(value) <= ?3 ORDER BY key LIMIT ?4",
        )
        .map_err(not_store)?;
    let mut out = Vec::with_capacity(rows.len() + panel.len());
    out.extend(panel);
    for (key, data) in rows {
        let composer_id = key.strip_prefix("composerData:").unwrap_or(&key).to_owned();
        let place = PathBuf::from(format!("{}:{key}", global.display()));
        let Some(composer_data) = data else {
            out.push(Err((
                place,
                FileProblem::File("the composer's value is empty".to_owned()),
            )));
            continue;
        };
        let prefix = format!("bubbleId:{composer_id}:");
        let end = format!("bubbleId:{composer_id};");
        let found: rusqlite::Result<Vec<(String, Option<String>)>> = bubbles
            .query_map(params![prefix, end, MAX_VALUE_BYTES, MAX_BUBBLES], |row| {
                Ok((row.get(0)?, text(row.get_ref(1)?)))
            })
            .and_then(Iterator::collect);
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                out.push(Err((
                    place,
                    FileProblem::File(format!("cannot read its messages: {e}")),
                )));
                continue;
            }
        };
        let composer = CursorComposerRows {
            project: projects.get(&composer_id).cloned(),
            composer_id,
            composer_data,
            bubbles: found
                .into_iter()
                .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_owned(), v?)))
                .collect(),
        };
        out.push(
            read_cursor_composer(&composer, policy()).map_err(|e| (place, FileProblem::File(e))),
        );
    }
    Ok((out, problems))
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

/// What the workspace stores hold: the folder of each composer a workspace lists, the chats of
/// the panel before composers, and the stores that could not be read.
#[derive(Default)]
struct Workspaces {
    /// Composer id → the folder of the workspace that lists it.
    projects: HashMap<String, String>,
    /// The chat panel's chats, each with its workspace's folder.
    panel: Vec<ReadSession>,
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
/// `workspace.json` naming its folder): the composers it lists and its chat panel's chats,
/// each read with a policy from `policy`. A workspace without a folder or a store is passed
/// over; a store that cannot be read is a problem.
fn workspaces_at(dir: &Path, policy: &mut impl FnMut() -> TextPolicy) -> Workspaces {
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
            return found;
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
                Ok(sessions) => found.panel.extend(sessions.into_iter().map(Ok)),
                Err(e) => found.panel.push(Err((place, FileProblem::File(e)))),
            }
        }
        let Some(listed) = listed else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&listed) else {
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
    found
}
