//! GitHub Copilot's session files for `harvest --source copilot`: VS Code's chat sessions
//! (`…/chatSessions/<id>.jsonl`, a change log, or `<id>.json` before VS Code 1.109, each
//! beside the `workspace.json` of its window's folder; `…/emptyWindowChatSessions/` for a
//! window without one) and the `copilot` CLI's (`session-state/<id>/events.jsonl`, or
//! `session-state/<id>.jsonl` in earlier versions, and before those
//! `history-session-state/session_<id>_<ms>.json`, each session whole). Folders are walked without following
//! symbolic links, in name order. The files become sessions in `evolution_harvest::copilot`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use evolution_harvest::copilot::{
    CopilotCliReader, VsCodeChatLog, read_copilot_history, read_vscode_chat, vscode_chat_from_json,
};
use evolution_harvest::limits::Budget;
use evolution_harvest::session::{LineError, Session, TextPolicy};

use super::files::{FileProblem, for_each_line, workspace_folder};

/// How deep under a given folder session files are looked for (`User/workspaceStorage/<hash>/
/// chatSessions/<file>` is 4 below `User`).
const MAX_DEPTH: usize = 6;

/// The format of one session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CopilotFormat {
    /// A VS Code chat session change log (`.jsonl`).
    VsCodeLog,
    /// A VS Code chat session, whole (`.json`).
    VsCodeFlat,
    /// A `copilot` CLI event log.
    Cli,
    /// An older `copilot` CLI session, whole (`history-session-state/*.json`).
    CliHistory,
}

/// One session file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CopilotFile {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: CopilotFormat,
    /// The session's id when the file does not name it (the file's or its folder's name).
    pub fallback_id: String,
    /// The folder of the VS Code window it ran in, when known.
    pub workspace: Option<String>,
}

/// The session files under each of `roots` (or a root itself when it is a file), in name order;
/// walk errors are returned as (path, reason).
pub(super) fn find_copilot_sessions(
    roots: &[PathBuf],
) -> (Vec<CopilotFile>, Vec<(PathBuf, String)>) {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let mut folders: HashMap<PathBuf, Option<String>> = HashMap::new();
    for root in roots {
        if root.is_file() {
            let format = classify(root).unwrap_or_else(|| guess(root));
            files.push(file(root, format, &mut folders));
            continue;
        }
        let walker = walkdir::WalkDir::new(root)
            .follow_links(false)
            .max_depth(MAX_DEPTH)
            .sort_by_file_name();
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    problems.push((e.path().unwrap_or(root).to_path_buf(), e.to_string()));
                    continue;
                }
            };
            if !entry.file_type().is_file() {
                continue;
            }
            let path = entry.path();
            let Some(format) = classify(path) else {
                continue;
            };
            // VS Code reads the log when both exist: so does harvest.
            if format == CopilotFormat::VsCodeFlat && path.with_extension("jsonl").is_file() {
                continue;
            }
            files.push(file(path, format, &mut folders));
        }
    }
    (files, problems)
}

/// The format of a file by where it lies: `None` for a file that is not a session's.
fn classify(path: &Path) -> Option<CopilotFormat> {
    let parent = path.parent().and_then(Path::file_name)?;
    let ext = path.extension()?;
    if parent == "chatSessions" || parent == "emptyWindowChatSessions" {
        if ext == "jsonl" {
            return Some(CopilotFormat::VsCodeLog);
        }
        if ext == "json" {
            return Some(CopilotFormat::VsCodeFlat);
        }
        return None;
    }
    if path.file_name().is_some_and(|n| n == "events.jsonl")
        || (parent == "session-state" && ext == "jsonl")
    {
        return Some(CopilotFormat::Cli);
    }
    if parent == "history-session-state" && ext == "json" {
        return Some(CopilotFormat::CliHistory);
    }
    None
}

/// The format of a file given on its own that lies nowhere a host puts it: a `.json` named
/// `session_…` is an older CLI session, any other `.json` a VS Code session; a `.jsonl` whose
/// first line is a change (`"kind"`) a VS Code log; else a CLI event log.
fn guess(path: &Path) -> CopilotFormat {
    if path.extension().is_some_and(|x| x == "json") {
        let cli = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("session_"));
        return if cli {
            CopilotFormat::CliHistory
        } else {
            CopilotFormat::VsCodeFlat
        };
    }
    let mut first: Option<bool> = None;
    let _ = for_each_line(path, |n, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        first = Some(
            Budget::default()
                .parse(line)
                .ok()
                .is_some_and(|v| v.get("kind").is_some_and(serde_json::Value::is_u64)),
        );
        // Stop at the first line: an error ends the walk and is not reported.
        Err(LineError::new(n, String::new()))
    });
    if first == Some(true) {
        CopilotFormat::VsCodeLog
    } else {
        CopilotFormat::Cli
    }
}

fn file(
    path: &Path,
    format: CopilotFormat,
    folders: &mut HashMap<PathBuf, Option<String>>,
) -> CopilotFile {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let fallback_id = if path.file_name().is_some_and(|n| n == "events.jsonl") {
        path.parent().map(stem).unwrap_or_default()
    } else if format == CopilotFormat::CliHistory {
        history_id(&stem(path))
    } else {
        stem(path)
    };
    let workspace = match format {
        CopilotFormat::Cli | CopilotFormat::CliHistory => None,
        CopilotFormat::VsCodeLog | CopilotFormat::VsCodeFlat => path
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "chatSessions"))
            .and_then(Path::parent)
            .and_then(|storage| {
                folders
                    .entry(storage.to_path_buf())
                    .or_insert_with(|| workspace_folder(storage))
                    .clone()
            }),
    };
    CopilotFile {
        path: path.to_path_buf(),
        format,
        fallback_id,
        workspace,
    }
}

/// The session id in an older CLI session's file name, `session_<id>_<milliseconds>`; the
/// name itself when it is not of that shape.
fn history_id(stem: &str) -> String {
    stem.strip_prefix("session_")
        .and_then(|rest| rest.rsplit_once('_'))
        .filter(|(id, ms)| {
            !id.is_empty() && !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit())
        })
        .map_or_else(|| stem.to_owned(), |(id, _)| id.to_owned())
}

/// The whole text of a file read line by line.
fn whole_text(path: &Path) -> Result<String, FileProblem> {
    let mut text = String::new();
    for_each_line(path, |_, line| {
        text.push_str(line);
        text.push('\n');
        Ok(())
    })?;
    Ok(text)
}

/// Reads one session file.
pub(super) fn read_copilot_file(
    file: &CopilotFile,
    mut policy: TextPolicy,
) -> Result<(Session, TextPolicy), (PathBuf, FileProblem)> {
    let at = |p: FileProblem| (file.path.clone(), p);
    match file.format {
        CopilotFormat::Cli => {
            let mut reader = CopilotCliReader::new(&file.fallback_id, policy);
            for_each_line(&file.path, |n, l| reader.push_line(n, l)).map_err(at)?;
            Ok(reader.finish())
        }
        CopilotFormat::VsCodeLog => {
            let mut log = VsCodeChatLog::with_budget(policy.budget.clone());
            for_each_line(&file.path, |n, l| log.push_line(n, l)).map_err(at)?;
            let data = log.finish().map_err(|e| at(FileProblem::Line(e)))?;
            read_vscode_chat(&data, &file.fallback_id, file.workspace.as_deref(), policy)
                .map_err(|e| at(FileProblem::Line(e)))
        }
        CopilotFormat::CliHistory => {
            let text = whole_text(&file.path).map_err(at)?;
            read_copilot_history(&text, &file.fallback_id, policy)
                .map_err(|e| at(FileProblem::Line(e)))
        }
        CopilotFormat::VsCodeFlat => {
            let text = whole_text(&file.path).map_err(at)?;
            let data = vscode_chat_from_json(&mut policy.budget, &text)
                .map_err(|e| at(FileProblem::Line(e)))?;
            read_vscode_chat(&data, &file.fallback_id, file.workspace.as_deref(), policy)
                .map_err(|e| at(FileProblem::Line(e)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_found_by_where_each_host_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ws = d.join("workspaceStorage/abc");
        std::fs::create_dir_all(ws.join("chatSessions")).unwrap();
        std::fs::write(ws.join("workspace.json"), r#"{"folder":"file:///w/app"}"#).unwrap();
        std::fs::write(ws.join("chatSessions/s1.jsonl"), "").unwrap();
        std::fs::write(ws.join("chatSessions/s1.json"), "").unwrap();
        std::fs::write(ws.join("chatSessions/s2.json"), "").unwrap();
        std::fs::write(ws.join("chatSessions/notes.txt"), "").unwrap();
        std::fs::create_dir_all(d.join("session-state/cli-1")).unwrap();
        std::fs::write(d.join("session-state/cli-1/events.jsonl"), "").unwrap();
        std::fs::write(d.join("session-state/cli-0.jsonl"), "").unwrap();
        std::fs::create_dir_all(d.join("history-session-state")).unwrap();
        std::fs::write(
            d.join("history-session-state/session_9f2e-old_1759219200000.json"),
            "",
        )
        .unwrap();
        std::fs::write(d.join("history-session-state/odd.json"), "").unwrap();
        let (files, problems) = find_copilot_sessions(&[d.to_path_buf()]);
        assert!(problems.is_empty());
        let found: Vec<(String, CopilotFormat, Option<&str>)> = files
            .iter()
            .map(|f| (f.fallback_id.clone(), f.format, f.workspace.as_deref()))
            .collect();
        assert_eq!(
            found,
            [
                ("odd".to_owned(), CopilotFormat::CliHistory, None),
                ("9f2e-old".to_owned(), CopilotFormat::CliHistory, None),
                ("cli-0".to_owned(), CopilotFormat::Cli, None),
                ("cli-1".to_owned(), CopilotFormat::Cli, None),
                ("s1".to_owned(), CopilotFormat::VsCodeLog, Some("/w/app")),
                ("s2".to_owned(), CopilotFormat::VsCodeFlat, Some("/w/app")),
            ]
        );
        let loose = d.join("loose.jsonl");
        std::fs::write(&loose, "\n{\"kind\":0,\"v\":{}}\n").unwrap();
        let (files, _) = find_copilot_sessions(&[loose]);
        assert_eq!(files[0].format, CopilotFormat::VsCodeLog);
    }
}
