//! Where a harvest reads: `--from`, else each source's default places, and with
//! `--recorded` exactly the transcripts the project's session-end hook recorded.

use std::path::{Path, PathBuf};

use super::files::{SessionFiles, find_sessions};
use super::{HarvestOptions, HarvestSource};
use crate::error::{bad_at, bad_option};

/// The folders or files to read: `--from`, else the source's default locations (one, but for
/// GitHub Copilot, whose VS Code and CLI sessions lie apart).
pub(super) fn source_locations(args: &HarvestOptions) -> anyhow::Result<Vec<PathBuf>> {
    if let Some(from) = &args.from {
        return Ok(vec![from.clone()]);
    }
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| bad_option("HOME is not set: pass --from with the sessions' folder"))
    };
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    // Where an Electron application (VS Code, Cursor) keeps its `User` folder.
    let app_user = |app: &str| -> anyhow::Result<PathBuf> {
        let base = if cfg!(target_os = "macos") {
            home()?.join("Library").join("Application Support")
        } else {
            match env("XDG_CONFIG_HOME") {
                Some(config) => config,
                None => home()?.join(".config"),
            }
        };
        Ok(base.join(app).join("User"))
    };
    let one = match args.source {
        HarvestSource::Cursor => app_user("Cursor"),
        HarvestSource::Copilot => {
            let user = app_user("Code")?;
            let cli = match env("COPILOT_HOME") {
                Some(copilot) => copilot,
                None => home()?.join(".copilot"),
            };
            return Ok(vec![
                user.join("workspaceStorage"),
                user.join("globalStorage").join("emptyWindowChatSessions"),
                cli.join("session-state"),
                cli.join("history-session-state"),
            ]);
        }
        HarvestSource::ClaudeCode => Ok(home()?.join(".claude").join("projects")),
        HarvestSource::Gemini => Ok(home()?.join(".gemini").join("tmp")),
        HarvestSource::OpenCode => {
            match std::env::var_os("XDG_DATA_HOME").filter(|h| !h.is_empty()) {
                Some(data) => Ok(PathBuf::from(data).join("opencode").join("opencode.db")),
                None => Ok(home()?
                    .join(".local")
                    .join("share")
                    .join("opencode")
                    .join("opencode.db")),
            }
        }
        HarvestSource::Codex => match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
            Some(codex_home) => Ok(PathBuf::from(codex_home).join("sessions")),
            None => Ok(home()?.join(".codex").join("sessions")),
        },
        HarvestSource::SessionState => Ok(PathBuf::from("SESSION-STATE.md")),
        HarvestSource::Dir => Err(bad_option(
            "--source dir needs --from DIR, the folder of trajectory .json files",
        )),
    };
    one.map(|path| vec![path])
}

/// A path that was not read, and why.
type PathProblem = (PathBuf, String);

/// The session files the project's hook recorded (`project`, else the project of the current
/// folder), each read as `find_sessions` reads one file; a recorded transcript that is gone, or
/// lies outside `from` (the host's sessions folder), is a problem, not read.
pub(super) fn recorded_session_files(
    from: &Path,
    project: Option<&Path>,
) -> anyhow::Result<(Vec<SessionFiles>, Vec<PathProblem>)> {
    let here = std::env::current_dir()
        .map_err(|e| bad_option(format!("--recorded: cannot read the current folder: {e}")))?;
    let project = match project {
        Some(dir) => dir.to_path_buf(),
        None => crate::session_log::project_of(&here).ok_or_else(|| {
            bad_option(
                "--recorded: no project here (no .skill-evolve folder or evolve.toml in this \
                 folder or above); pass --project DIR",
            )
        })?,
    };
    let root = from
        .canonicalize()
        .map_err(|e| bad_at(from, None, format!("cannot read: {e}")))?;
    let mut sessions = Vec::new();
    let mut problems = Vec::new();
    for record in crate::session_log::recorded_sessions(&project)? {
        let path = record.transcript_path;
        match path.canonicalize() {
            Ok(real) if real.starts_with(&root) && real.is_file() => {
                let (found, trouble) = find_sessions(&real);
                sessions.extend(found);
                problems.extend(trouble);
            }
            Ok(_) => problems.push((
                path,
                format!("recorded, but not a session file under {}", from.display()),
            )),
            Err(e) => problems.push((path, format!("recorded, but gone: {e}"))),
        }
    }
    Ok((sessions, problems))
}
