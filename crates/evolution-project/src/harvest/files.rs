//! Finding transcript files and reading them line by line, within a size limit.
//!
//! Claude Code keeps one file per session, `<project folder>/<session>.jsonl`, and each
//! subagent's conversation in `<project folder>/<session>/subagents/<agent>.jsonl`; Codex keeps
//! one file per session under `sessions/YYYY/MM/DD/`. Folders are walked without following
//! symbolic links, in name order, so the output does not depend on the file system's order.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};

use evolution_harvest::limits::Exceeded;
use evolution_harvest::session::LineError;

/// Largest transcript file read, in bytes: 256 MiB (a long Claude Code session with large
/// tool outputs reaches tens of MiB).
pub(super) const MAX_TRANSCRIPT_BYTES: u64 = 256 * 1024 * 1024;

/// One session to read: its main file and its side files (subagents), each in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionFiles {
    /// The session's file.
    pub main: PathBuf,
    /// Side files: (subagent name, path).
    pub side: Vec<(String, PathBuf)>,
}

/// Why a file was not read, or which line stopped it.
#[derive(Debug)]
pub(super) enum FileProblem {
    /// The file could not be read whole (not a regular file, too big, an I/O error).
    File(String),
    /// A line could not be read as a record.
    Line(LineError),
    /// The session crossed one of its bounds.
    Limit(Exceeded),
}

/// The `.jsonl` files under `root` (or `root` itself when it is a file), grouped into
/// sessions: a file inside a `subagents` folder is a side file of the session file beside
/// that folder's parent (`<session>.jsonl` next to `<session>/subagents/`), and stands alone
/// when there is no such file. Walk errors are returned as (path, reason).
pub(super) fn find_sessions(root: &Path) -> (Vec<SessionFiles>, Vec<(PathBuf, String)>) {
    let mut problems = Vec::new();
    if root.is_file() {
        let side = side_files_of(root);
        return (
            vec![SessionFiles {
                main: root.to_path_buf(),
                side,
            }],
            problems,
        );
    }
    let mut mains: BTreeMap<PathBuf, Vec<(String, PathBuf)>> = BTreeMap::new();
    let mut sides: Vec<PathBuf> = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let path = e.path().unwrap_or(root).to_path_buf();
                problems.push((path, e.to_string()));
                continue;
            }
        };
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        if in_subagents_folder(path) {
            sides.push(path.to_path_buf());
        } else {
            mains.insert(path.to_path_buf(), Vec::new());
        }
    }
    let mut orphans = Vec::new();
    for side in sides {
        let owner = owner_of(&side);
        match owner.and_then(|o| mains.get_mut(&o)) {
            Some(list) => list.push((agent_name(&side), side)),
            None => orphans.push(side),
        }
    }
    let mut sessions: Vec<SessionFiles> = mains
        .into_iter()
        .map(|(main, side)| SessionFiles { main, side })
        .collect();
    sessions.extend(orphans.into_iter().map(|main| SessionFiles {
        main,
        side: Vec::new(),
    }));
    (sessions, problems)
}

/// The Gemini CLI chat files under `root` (`…/chats/*.json`), or `root` itself when it is a
/// file, each a session of its own, in name order. Walk errors are returned as (path, reason).
pub(super) fn find_gemini_sessions(root: &Path) -> (Vec<SessionFiles>, Vec<(PathBuf, String)>) {
    let mut problems = Vec::new();
    if root.is_file() {
        return (
            vec![SessionFiles {
                main: root.to_path_buf(),
                side: Vec::new(),
            }],
            problems,
        );
    }
    let mut sessions = Vec::new();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let path = e.path().unwrap_or(root).to_path_buf();
                problems.push((path, e.to_string()));
                continue;
            }
        };
        let path = entry.path();
        let in_chats = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "chats");
        if entry.file_type().is_file() && in_chats && path.extension().is_some_and(|x| x == "json")
        {
            sessions.push(SessionFiles {
                main: path.to_path_buf(),
                side: Vec::new(),
            });
        }
    }
    (sessions, problems)
}

/// Largest `workspace.json` read, in bytes.
const MAX_WORKSPACE_JSON_BYTES: u64 = 1024 * 1024;

/// The folder a VS Code (or Cursor) workspace storage folder belongs to: the `folder` URI of
/// its `workspace.json` as a local path; `None` when there is none, it is not a regular file
/// of at most 1 MiB, or it names a multi-root workspace or a remote folder.
pub(super) fn workspace_folder(storage: &Path) -> Option<String> {
    use std::io::Read as _;
    let path = storage.join("workspace.json");
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_WORKSPACE_JSON_BYTES {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(MAX_WORKSPACE_JSON_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let uri = value.get("folder")?.as_str()?;
    evolution_harvest::session::file_uri_path(uri)
}

/// True for `…/subagents/<file>`.
fn in_subagents_folder(path: &Path) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "subagents")
}

/// `<dir>/<session>.jsonl` for `<dir>/<session>/subagents/<agent>.jsonl`.
fn owner_of(side: &Path) -> Option<PathBuf> {
    let session_dir = side.parent()?.parent()?;
    let name = session_dir.file_name()?;
    let mut owner = session_dir.parent()?.join(name);
    owner.set_extension("jsonl");
    Some(owner)
}

/// The side files of a session file given on its own.
fn side_files_of(main: &Path) -> Vec<(String, PathBuf)> {
    let Some(stem) = main.file_stem() else {
        return Vec::new();
    };
    let dir = main.with_file_name(stem).join("subagents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut side: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    side.sort();
    side.into_iter().map(|p| (agent_name(&p), p)).collect()
}

/// A side file's agent name: its file stem.
fn agent_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads `path` line by line (a regular file of at most [`MAX_TRANSCRIPT_BYTES`], checked
/// before it is opened), giving each line with its 1-based number to `on_line`; stops at the
/// first line it refuses.
pub(super) fn for_each_line(
    path: &Path,
    mut on_line: impl FnMut(usize, &str) -> Result<(), LineError>,
) -> Result<(), FileProblem> {
    let meta = std::fs::metadata(path).map_err(|e| FileProblem::File(e.to_string()))?;
    if !meta.is_file() {
        return Err(FileProblem::File(
            "not a regular file (a named pipe, a device or a socket)".to_owned(),
        ));
    }
    let too_big = |size: u64| {
        FileProblem::File(format!(
            "{size} bytes, over the limit of {MAX_TRANSCRIPT_BYTES} bytes (256 MiB) for a \
             transcript"
        ))
    };
    if meta.len() > MAX_TRANSCRIPT_BYTES {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| FileProblem::File(e.to_string()))?;
    let mut reader = BufReader::new(file.take(MAX_TRANSCRIPT_BYTES.saturating_add(1)));
    let mut buffer = Vec::new();
    let mut line_no = 0usize;
    let mut total = 0u64;
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|e| FileProblem::File(e.to_string()))?;
        if read == 0 {
            return Ok(());
        }
        total = total.saturating_add(u64::try_from(read).unwrap_or(u64::MAX));
        if total > MAX_TRANSCRIPT_BYTES {
            return Err(too_big(total));
        }
        line_no = line_no.saturating_add(1);
        let line = std::str::from_utf8(&buffer)
            .map_err(|_| FileProblem::Line(LineError::new(line_no, "not valid UTF-8")))?;
        on_line(line_no, line.trim_end_matches(['\n', '\r'])).map_err(FileProblem::Line)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_files_join_their_session_and_orphans_stand_alone() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("proj/s1/subagents")).unwrap();
        std::fs::create_dir_all(d.join("proj/gone/subagents")).unwrap();
        std::fs::write(d.join("proj/s1.jsonl"), "").unwrap();
        std::fs::write(d.join("proj/s2.jsonl"), "").unwrap();
        std::fs::write(d.join("proj/s1/subagents/agent-a.jsonl"), "").unwrap();
        std::fs::write(d.join("proj/gone/subagents/agent-b.jsonl"), "").unwrap();
        std::fs::write(d.join("proj/notes.txt"), "").unwrap();
        let (sessions, problems) = find_sessions(d);
        assert!(problems.is_empty());
        let names: Vec<String> = sessions
            .iter()
            .map(|s| s.main.strip_prefix(d).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "proj/s1.jsonl",
                "proj/s2.jsonl",
                "proj/gone/subagents/agent-b.jsonl"
            ]
        );
        assert_eq!(sessions[0].side.len(), 1);
        assert_eq!(sessions[0].side[0].0, "agent-a");
        let (single, _) = find_sessions(&d.join("proj/s1.jsonl"));
        assert_eq!(single[0].side.len(), 1);
    }

    #[test]
    fn a_workspace_names_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(workspace_folder(d), None);
        std::fs::write(
            d.join("workspace.json"),
            r#"{"folder":"file:///w/my%20app"}"#,
        )
        .unwrap();
        assert_eq!(workspace_folder(d).as_deref(), Some("/w/my app"));
        std::fs::write(
            d.join("workspace.json"),
            r#"{"workspace":"file:///w/a.code-workspace"}"#,
        )
        .unwrap();
        assert_eq!(workspace_folder(d), None);
    }

    #[test]
    fn lines_stream_with_their_numbers_and_bad_bytes_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        std::fs::write(&path, b"one\r\ntwo\n\xff\n").unwrap();
        let mut seen = Vec::new();
        let result = for_each_line(&path, |n, l| {
            seen.push((n, l.to_owned()));
            Ok(())
        });
        assert_eq!(seen, [(1, "one".to_owned()), (2, "two".to_owned())]);
        match result {
            Err(FileProblem::Line(e)) => assert_eq!(e.line, 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            for_each_line(dir.path(), |_, _| Ok(())),
            Err(FileProblem::File(_))
        ));
    }
}
