//! What a harvest writes: one trajectory file per session under `--out` (ids made unique),
//! the mined tasks file, each private to the user and never through a link.

use std::path::{Path, PathBuf};

use evolution_harvest::tasks::MinedTask;
use serde_json::{Map, Value};

use super::{HarvestCounts, HarvestNote};
use crate::error::bad_at;
use crate::render::terminal_safe;

/// A harvested trajectory ready to write.
pub(super) struct Harvested {
    pub(super) id: String,
    pub(super) object: Map<String, Value>,
    pub(super) passed: bool,
    pub(super) reasons: String,
}

/// Writes mined tasks as JSON lines, replacing the file atomically.
pub(super) fn write_tasks(path: &Path, tasks: &[MinedTask]) -> anyhow::Result<()> {
    let mut text = String::new();
    for task in tasks {
        text.push_str(&serde_json::to_string(task)?);
        text.push('\n');
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    crate::working_copy::write_private_output(path, &text)
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
