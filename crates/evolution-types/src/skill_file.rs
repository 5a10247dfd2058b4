//! Which skill file serves a task type.

use crate::{SkillStore, StoreError};

/// The skill file used when no file matches a task type.
pub const DEFAULT_SKILL_FILE: &str = "default-strategy.md";

/// The file name a task type maps to: lower-cased, spaces as hyphens, `.md` added.
pub fn skill_file_name(task_type: &str) -> String {
    format!("{}.md", task_type.to_lowercase().replace(' ', "-"))
}

/// The skill file for `task_type`: [`skill_file_name`] if the store lists it,
/// else [`DEFAULT_SKILL_FILE`].
///
/// Takes a store rather than a path, so the kernel needs no file system.
pub fn resolve_skill_file(
    store: &(impl SkillStore + ?Sized),
    task_type: &str,
) -> Result<String, StoreError> {
    let wanted = skill_file_name(task_type);
    let files = store.list_skill_files()?;
    if files.contains(&wanted) {
        Ok(wanted)
    } else {
        Ok(DEFAULT_SKILL_FILE.to_owned())
    }
}
