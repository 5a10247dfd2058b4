//! Which skill file serves a task type.

use std::collections::BTreeMap;

use crate::{SkillStore, StoreError};

/// Most characters of a skill name.
pub const MAX_SKILL_NAME_CHARS: usize = 64;

/// Why `name` cannot be a skill name, or `None` when it can: a skill name is usable as a
/// file name everywhere it goes (it starts with an ASCII letter or digit and holds at most
/// [`MAX_SKILL_NAME_CHARS`] ASCII letters, digits, `-`, `_` or `.`).
///
/// ```
/// use evolution_types::skill_name_problem;
/// assert_eq!(skill_name_problem("hex-docs_search.v2"), None);
/// assert!(skill_name_problem("elixir:hex-docs-search").is_some());
/// ```
pub fn skill_name_problem(name: &str) -> Option<String> {
    let ok = name.chars().count() <= MAX_SKILL_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    (!ok).then(|| {
        format!(
            "skill name {name:?} must start with a letter or digit and hold at most \
             {MAX_SKILL_NAME_CHARS} letters, digits, '-', '_' or '.'"
        )
    })
}

/// `raw` made a valid skill name ([`skill_name_problem`]): every other character, and every
/// run of them, becomes one `-`; leading characters that cannot start a name are dropped;
/// the result is cut to [`MAX_SKILL_NAME_CHARS`]. `None` when nothing usable is left.
///
/// ```
/// use evolution_types::skill_name_from;
/// assert_eq!(skill_name_from("elixir:hex-docs-search").as_deref(), Some("elixir-hex-docs-search"));
/// assert_eq!(skill_name_from("::"), None);
/// ```
pub fn skill_name_from(raw: &str) -> Option<String> {
    let mut name = String::new();
    for c in raw.chars() {
        let keep = c.is_ascii_alphanumeric() || "-_.".contains(c);
        if keep {
            if !name.is_empty() || c.is_ascii_alphanumeric() {
                name.push(c);
            }
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    let name: String = name.chars().take(MAX_SKILL_NAME_CHARS).collect();
    let name = name.trim_end_matches('-').to_owned();
    (!name.is_empty()).then_some(name)
}

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
