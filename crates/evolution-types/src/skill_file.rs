//! Which skill file serves a task type.

use std::collections::BTreeMap;

use crate::{SkillStore, StoreError};

/// The skill file used when no file matches a task type.
pub const DEFAULT_SKILL_FILE: &str = "default-strategy.md";

/// The file name a task type maps to: lower-cased, spaces as hyphens, `.md` added.
pub fn skill_file_name(task_type: &str) -> String {
    format!("{}.md", task_type.to_lowercase().replace(' ', "-"))
}

/// The skill file for `task_type` among `files`, by three rules in order:
/// the caller's own choice (`chosen`, task type → file), then
/// [`skill_file_name`] when `files` lists it, then `default`.
///
/// A chosen file is returned even when `files` does not list it, so that a
/// wrong mapping fails loudly on reading instead of falling back silently.
pub fn skill_file_for(
    files: &[String],
    task_type: &str,
    chosen: &BTreeMap<String, String>,
    default: &str,
) -> String {
    if let Some(file) = chosen.get(task_type) {
        return file.clone();
    }
    let wanted = skill_file_name(task_type);
    if files.contains(&wanted) {
        wanted
    } else {
        default.to_owned()
    }
}

/// The skill file for `task_type`: [`skill_file_name`] if the store lists it,
/// else [`DEFAULT_SKILL_FILE`].
///
/// Takes a store rather than a path, so the kernel needs no file system.
pub fn resolve_skill_file(
    store: &(impl SkillStore + ?Sized),
    task_type: &str,
) -> Result<String, StoreError> {
    let files = store.list_skill_files()?;
    Ok(skill_file_for(
        &files,
        task_type,
        &BTreeMap::new(),
        DEFAULT_SKILL_FILE,
    ))
}
