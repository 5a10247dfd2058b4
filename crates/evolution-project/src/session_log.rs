//! The finished sessions an agent host recorded for the next harvest.
//!
//! A host's session-end hook (the Claude Code plugin's `SessionEnd`) hands `skill-evolve hook
//! session-end` the session's id, transcript and folder. When that folder lies in a project
//! (a folder with `.skill-evolve/` or `evolve.toml`, or one under it), one line is appended to
//! the project's `.skill-evolve/sessions.jsonl`; elsewhere nothing is written. Nothing is
//! read from the transcript and nothing leaves the machine: the line only says which file to
//! read, and `harvest --recorded` reads exactly those files (the ones inside the host's
//! sessions folder) instead of every session there.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::STATE_DIR;
use crate::error::bad_at;

/// The record file, in the project's state folder.
pub const SESSIONS_FILE: &str = "sessions.jsonl";

/// Largest hook input read, in bytes.
pub const MAX_HOOK_INPUT_BYTES: usize = 64 * 1024;

/// Largest record file: past it, sessions are no longer recorded (a harvest reads them all the
/// same without `--recorded`).
const MAX_RECORD_BYTES: u64 = 4 * 1024 * 1024;

/// Longest session id or reason kept.
const MAX_FIELD_CHARS: usize = 200;

/// Longest path kept.
const MAX_PATH_CHARS: usize = 4096;

/// What a host's session-end hook sends (Claude Code's fields; others are ignored).
#[derive(Debug, Deserialize)]
struct HookInput {
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    transcript_path: String,
    #[serde(default)]
    cwd: String,
    #[serde(default)]
    reason: String,
}

/// One recorded session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSession {
    /// The host's session id.
    pub session_id: String,
    /// The session's transcript file.
    pub transcript_path: PathBuf,
    /// The folder the session ran in.
    pub cwd: PathBuf,
    /// Why it ended, as the host said (`clear`, `logout`, `prompt_input_exit`, `other`).
    pub reason: String,
    /// When it was recorded, in seconds since the Unix epoch.
    pub ended_at: u64,
}

/// What recording a session end did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// Appended to this record file.
    Written(PathBuf),
    /// The session's folder is in no project: nothing was written.
    NoProject,
    /// The record file is full: nothing was written.
    Full(PathBuf),
}

/// The project `cwd` lies in: the nearest folder, `cwd` or above, with a `.skill-evolve`
/// folder or an `evolve.toml`.
pub fn project_of(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(STATE_DIR).is_dir() || dir.join("evolve.toml").is_file())
        .map(Path::to_path_buf)
}

/// The record file of `project`.
pub fn record_file(project: &Path) -> PathBuf {
    project.join(STATE_DIR).join(SESSIONS_FILE)
}

/// Records the session end a hook sent as `input` (JSON, at most [`MAX_HOOK_INPUT_BYTES`]).
///
/// # Errors
/// Input that is not the hook's JSON, or names no transcript (bad input); a record file that
/// is a link or cannot be written.
pub fn record_session_end(input: &str) -> anyhow::Result<Recorded> {
    if input.len() > MAX_HOOK_INPUT_BYTES {
        return Err(crate::error::bad_option(format!(
            "the hook's input is {} bytes, more than {MAX_HOOK_INPUT_BYTES}",
            input.len()
        )));
    }
    let hook: HookInput = serde_json::from_str(input)
        .map_err(|e| crate::error::bad_option(format!("the hook's input is not its JSON: {e}")))?;
    let kept = |text: &str, max: usize| -> String {
        text.chars().filter(|c| !c.is_control()).take(max).collect()
    };
    let transcript = kept(&hook.transcript_path, MAX_PATH_CHARS);
    let cwd = kept(&hook.cwd, MAX_PATH_CHARS);
    if transcript.is_empty() || cwd.is_empty() {
        return Err(crate::error::bad_option(
            "the hook's input names no transcript_path or cwd",
        ));
    }
    let Some(project) = project_of(Path::new(&cwd)) else {
        return Ok(Recorded::NoProject);
    };
    let file = record_file(&project);
    if std::fs::symlink_metadata(&file).is_ok_and(|m| m.len() >= MAX_RECORD_BYTES) {
        return Ok(Recorded::Full(file));
    }
    let record = RecordedSession {
        session_id: kept(&hook.session_id, MAX_FIELD_CHARS),
        transcript_path: PathBuf::from(transcript),
        cwd: PathBuf::from(cwd),
        reason: kept(&hook.reason, MAX_FIELD_CHARS),
        ended_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let mut line = serde_json::to_string(&record)?;
    line.push('\n');
    append(&file, &line)?;
    Ok(Recorded::Written(file))
}

/// Appends `line` to `file` (created 0600, refused when it is a link) in one write.
pub(crate) fn append(file: &Path, line: &str) -> anyhow::Result<()> {
    crate::working_copy::refuse_link(file)?;
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut handle = options
        .open(file)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", file.display()))?;
    handle
        .write_all(line.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    Ok(())
}

/// The transcripts recorded for `project`, oldest first, each once.
///
/// # Errors
/// A record file that cannot be read (bad input, naming it) or holds a line that is not a
/// record (named by its line number).
pub fn recorded_sessions(project: &Path) -> anyhow::Result<Vec<RecordedSession>> {
    let file = record_file(project);
    if std::fs::symlink_metadata(&file).is_err() {
        return Ok(Vec::new());
    }
    crate::working_copy::refuse_link(&file)?;
    let size = std::fs::metadata(&file)
        .map_err(|e| bad_at(&file, None, format!("cannot read: {e}")))?
        .len();
    if size > MAX_RECORD_BYTES.saturating_mul(2) {
        return Err(bad_at(
            &file,
            None,
            format!("is {size} bytes, more than a record of sessions can be"),
        ));
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| bad_at(&file, None, format!("cannot read: {e}")))?;
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: RecordedSession = serde_json::from_str(line).map_err(|e| {
            bad_at(
                &file,
                Some(index.saturating_add(1)),
                format!("not a recorded session: {e}"),
            )
        })?;
        if seen.insert(record.transcript_path.clone()) {
            out.push(record);
        }
    }
    Ok(out)
}
