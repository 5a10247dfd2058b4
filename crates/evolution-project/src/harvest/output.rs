//! What a harvest writes: one trajectory file per session under `--out` (ids made unique),
//! the mined tasks file merged into the one already there (with the state kept beside it),
//! each private to the user and never through a link.

use std::path::{Path, PathBuf};

use evolution_harvest::task_file::{MergedTasks, TaskFileState, merge_tasks};
use evolution_harvest::tasks::MinedTask;
use serde_json::{Map, Value};

use super::{HarvestCounts, HarvestNote};
use crate::error::bad_at;
use crate::input::{InputKind, read_input_text};
use crate::render::terminal_safe;

/// A harvested trajectory ready to write.
pub(super) struct Harvested {
    pub(super) id: String,
    pub(super) object: Map<String, Value>,
    pub(super) passed: bool,
    pub(super) reasons: String,
}

/// The file beside a tasks file that remembers, between harvests, which tasks it held and
/// which a person deleted (`<file>.dropped.json`).
pub(super) fn tasks_state_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".dropped.json");
    path.with_file_name(name)
}

/// A tasks file as harvest found it, before anything is written: its text (`None`: no file)
/// and the state kept beside it (`None`: none), each checked.
pub(super) struct TaskFileBefore {
    existing: Option<String>,
    state: Option<TaskFileState>,
}

impl TaskFileBefore {
    /// The file's text (empty: no file).
    pub(super) fn text(&self) -> &str {
        self.existing.as_deref().unwrap_or_default()
    }

    /// The state kept beside the file, if any.
    pub(super) fn state(&self) -> Option<&TaskFileState> {
        self.state.as_ref()
    }

    /// The ids the state remembers: those the file held and those a person deleted.
    pub(super) fn remembered_ids(&self) -> impl Iterator<Item = &str> {
        self.state
            .iter()
            .flat_map(|s| s.in_file.iter().chain(&s.dropped))
            .map(String::as_str)
    }
}

/// Reads the tasks file at `path` and its state, and checks that the mined tasks can be merged
/// into it, so that a bad line stops the harvest before it writes anything.
///
/// # Errors
/// A file or state that cannot be read, or a line that is not a task (bad input naming the
/// file and the line).
pub(super) fn read_task_file(path: &Path) -> anyhow::Result<TaskFileBefore> {
    let state_path = tasks_state_path(path);
    crate::working_copy::refuse_link(&state_path)?;
    let existing = if path.exists() {
        Some(read_input_text(path, InputKind::QuestionSet)?)
    } else {
        None
    };
    let state = if state_path.exists() {
        let text = read_input_text(&state_path, InputKind::Config)?;
        let state: TaskFileState = serde_json::from_str(&text).map_err(|e| {
            bad_at(
                &state_path,
                Some(e.line()),
                format!(
                    "not the state harvest keeps beside {} ({e}); delete it to keep every line \
                     and forget which tasks were deleted",
                    path.display()
                ),
            )
        })?;
        Some(state)
    } else {
        None
    };
    merge_tasks(existing.as_deref(), state.as_ref(), &[])
        .map_err(|e| bad_at(path, Some(e.line), e.problem))?;
    Ok(TaskFileBefore { existing, state })
}

/// Merges mined tasks into the tasks file at `path` as it was found
/// (`evolution_harvest::task_file`): the lines already there are kept as they are, tasks a
/// person deleted stay out, new tasks are appended unreviewed. The tasks file is replaced
/// atomically first, then its state beside it, so a write cut short never counts a task as
/// deleted.
///
/// # Errors
/// A file that cannot be written.
pub(super) fn write_tasks(
    path: &Path,
    before: &TaskFileBefore,
    tasks: &[MinedTask],
) -> anyhow::Result<MergedTasks> {
    let merged = merge_tasks(before.existing.as_deref(), before.state.as_ref(), tasks)
        .map_err(|e| bad_at(path, Some(e.line), e.problem))?;
    write_merged(path, before, &merged)?;
    Ok(merged)
}

/// Writes `merged`, the tasks file at `path` found as `before` with lines added: the file
/// replaced atomically first (when it changed), then its state.
///
/// # Errors
/// A file that cannot be written.
pub(super) fn write_merged(
    path: &Path,
    before: &TaskFileBefore,
    merged: &MergedTasks,
) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    if before.existing.as_deref() != Some(merged.text.as_str()) {
        crate::working_copy::write_private_output(path, &merged.text)?;
    }
    if before.state.as_ref() != Some(&merged.state) {
        let text = serde_json::to_string_pretty(&merged.state)?;
        crate::working_copy::write_private_output(&tasks_state_path(path), &format!("{text}\n"))?;
    }
    Ok(())
}

/// The output folder is a folder, or does not exist yet.
pub(super) fn check_out_dir(out: &Path) -> anyhow::Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(bad_at(out, None, "--out must be a folder; this is a file"));
    }
    Ok(())
}

/// Writes trajectories (with `--out`) and notes one line per session.
pub(super) struct Writer {
    out: Option<PathBuf>,
    ids: std::collections::HashSet<String>,
}

impl Writer {
    pub(super) fn new(out: Option<&Path>) -> Self {
        Writer {
            out: out.map(Path::to_path_buf),
            ids: std::collections::HashSet::new(),
        }
    }

    pub(super) fn write(
        &mut self,
        counts: &mut HarvestCounts,
        notes: &mut dyn FnMut(HarvestNote),
        mut h: Harvested,
    ) -> anyhow::Result<()> {
        if h.passed {
            counts.passed = counts.passed.saturating_add(1);
        } else {
            counts.failed = counts.failed.saturating_add(1);
        }
        // Two sessions whose ids clean up to the same name get `-2`, `-3`…
        let mut id = h.id.clone();
        let mut n = 1u32;
        while !self.ids.insert(id.clone()) {
            n = n.saturating_add(1);
            id = format!("{}-{n}", h.id);
        }
        h.object.insert("id".to_owned(), Value::String(id.clone()));
        notes(HarvestNote::Session {
            id: terminal_safe(&id).into_owned(),
            passed: h.passed,
            reasons: terminal_safe(&h.reasons).into_owned(),
        });
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
            let text = serde_json::to_string_pretty(&Value::Object(h.object))?;
            crate::working_copy::write_private_output(&out.join(format!("{id}.json")), &text)?;
            counts.written = counts.written.saturating_add(1);
        }
        Ok(())
    }
}
