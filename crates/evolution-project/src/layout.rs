//! Skill folders in the layouts people use, resolved to documents: the one
//! place that turns a folder into (document name → the user's file), and
//! task types into documents.
//!
//! Three layouts are read:
//!
//! - **Agent Skills**: `skills/<name>/SKILL.md`, one folder per skill (other
//!   files in the folder are the skill's resources and are left alone); the
//!   name is the frontmatter's `name:`, else the folder's name;
//! - **flat**: `skills/<name>.md`, one file per skill;
//! - **single**: a folder holding `SKILL.md` itself, or the path of one
//!   skill file.
//!
//! A skill's document name (in the versioned store and in the agent's
//! workspace) is `<name>.md`. Hidden entries are skipped; a symbolic link
//! is refused, never followed, so a skill folder cannot make a run read or
//! (on adoption) write a file outside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evolution_types::{Profile, skill_file_name};
use serde::Deserialize;

/// The file name of an Agent Skills skill.
pub const SKILL_MD: &str = "SKILL.md";

/// The document name used by the older convention for the fallback skill.
const LEGACY_DEFAULT: &str = evolution_types::DEFAULT_SKILL_FILE;

/// One skill found in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    /// The skill's name.
    pub skill: String,
    /// Its document name in a store: `<name>.md`.
    pub document: String,
    /// The user's file.
    pub path: PathBuf,
}

/// The skills of `path` (a folder in one of the layouts, or one skill file),
/// sorted by document name. A problem is one sentence, without the path.
pub fn read_skills(path: &Path) -> Result<Vec<SkillDoc>, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if meta.file_type().is_symlink() {
        return Err(link_refused(path));
    }
    if meta.is_file() {
        return Ok(vec![one_file(path)?]);
    }
    let top_skill = path.join(SKILL_MD);
    if entry_kind(&top_skill)? == Kind::File {
        return Ok(vec![skill_md(&top_skill, path)?]);
    }
    let mut folders: Vec<SkillDoc> = Vec::new();
    // A flat file's problem counts only when the folder is a flat one.
    let mut files: Vec<Result<SkillDoc, String>> = Vec::new();
    for entry in sorted_entries(path)? {
        let name = entry
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if name.starts_with('.') || name.is_empty() {
            continue;
        }
        match entry_kind(&entry)? {
            Kind::Link => return Err(link_refused(&entry)),
            Kind::Dir => {
                let inner = entry.join(SKILL_MD);
                match entry_kind(&inner)? {
                    Kind::File => folders.push(skill_md(&inner, &entry)?),
                    Kind::Link => return Err(link_refused(&inner)),
                    // A folder without SKILL.md (scripts, assets) is not a skill.
                    Kind::Dir | Kind::Missing | Kind::Other => {}
                }
            }
            Kind::File if name.ends_with(".md") => files.push(flat(&entry, &name)),
            Kind::File | Kind::Missing | Kind::Other => {}
        }
    }
    // Beside skill folders, loose Markdown files (a README, a licence) are not skills.
    let found = if folders.is_empty() {
        files.into_iter().collect::<Result<Vec<_>, _>>()?
    } else {
        folders
    };
    let mut docs: Vec<SkillDoc> = Vec::new();
    for doc in found {
        if let Some(clash) = docs.iter().find(|d| d.document == doc.document) {
            return Err(format!(
                "two skills are named {:?}: {} and {}",
                doc.skill,
                clash.path.display(),
                doc.path.display()
            ));
        }
        docs.push(doc);
    }
    if docs.is_empty() {
        return Err(format!(
            "holds no skill document ({SKILL_MD}, <name>/{SKILL_MD} or <name>.md)"
        ));
    }
    docs.sort_by(|a, b| a.document.cmp(&b.document));
    Ok(docs)
}

/// What a path is, without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    Missing,
    Other,
}

fn entry_kind(path: &Path) -> Result<Kind, String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Ok(Kind::Link),
        Ok(m) if m.is_file() => Ok(Kind::File),
        Ok(m) if m.is_dir() => Ok(Kind::Dir),
        Ok(_) => Ok(Kind::Other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Kind::Missing),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the folder: {e}"))?;
    let mut paths = Vec::new();
    for entry in entries {
        paths.push(
            entry
                .map_err(|e| format!("cannot read the folder: {e}"))?
                .path(),
        );
    }
    paths.sort();
    Ok(paths)
}

fn link_refused(path: &Path) -> String {
    format!(
        "{} is a symbolic link; skill folders may not hold links (copy the file in instead)",
        path.display()
    )
}

/// One skill file given by its path.
fn one_file(path: &Path) -> Result<SkillDoc, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == SKILL_MD {
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        skill_md(path, &folder)
    } else {
        flat(path, name)
    }
}

/// `<folder>/SKILL.md`: named by its frontmatter, else by the folder.
fn skill_md(path: &Path, folder: &Path) -> Result<SkillDoc, String> {
    let text = crate::input::read_input_text(path, crate::input::InputKind::SkillDocument)
        .map_err(|e| e.to_string())?;
    let name = match frontmatter_name(&text)
        .map_err(|problem| format!("{}: {problem}", path.display()))?
    {
        Some(name) => name,
        None => folder_name(folder).ok_or_else(|| {
            format!(
                "{}: no frontmatter `name:` and the folder has no usable name",
                path.display()
            )
        })?,
    };
    doc(name, path)
}

/// `<name>.md`: named by the file.
fn flat(path: &Path, file_name: &str) -> Result<SkillDoc, String> {
    let stem = file_name.strip_suffix(".md").unwrap_or(file_name);
    doc(stem.to_owned(), path)
}

fn doc(skill: String, path: &Path) -> Result<SkillDoc, String> {
    check_name(&skill).map_err(|problem| format!("{}: {problem}", path.display()))?;
    Ok(SkillDoc {
        document: format!("{skill}.md"),
        skill,
        path: path.to_path_buf(),
    })
}

/// The last component of `folder`, made absolute first (so `.` has a name).
fn folder_name(folder: &Path) -> Option<String> {
    let absolute = std::path::absolute(folder).ok()?;
    let mut parts = absolute.components().rev();
    // `absolute` keeps `.` and `..` as written; take the last normal part.
    parts.find_map(|c| match c {
        std::path::Component::Normal(n) => n.to_str().map(str::to_owned),
        _ => None,
    })
}

/// A skill name must be usable as a file name everywhere it goes
/// ([`evolution_types::skill_name_problem`]).
fn check_name(name: &str) -> Result<(), String> {
    evolution_types::skill_name_problem(name).map_or(Ok(()), Err)
}

#[derive(Deserialize)]
struct Frontmatter {
    #[serde(default)]
    name: Option<String>,
}

/// The frontmatter's `name:` (trimmed), when the document opens with a
/// `---` block that has one.
pub fn frontmatter_name(text: &str) -> Result<Option<String>, String> {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(None);
    };
    if first.trim_start_matches('\u{feff}').trim_end() != "---" {
        return Ok(None);
    }
    let mut end = first.len();
    let mut closed = false;
    for line in lines {
        if matches!(line.trim_end(), "---" | "...") {
            closed = true;
            break;
        }
        end = end.saturating_add(line.len());
    }
    if !closed {
        return Err("the frontmatter is never closed by a `---` line".to_owned());
    }
    let inner = text.get(first.len()..end).unwrap_or_default();
    if inner.trim().is_empty() {
        return Ok(None);
    }
    let front: Frontmatter = serde_saphyr::from_str(inner).map_err(|e| {
        let message = e.to_string();
        format!(
            "the frontmatter is not valid YAML: {}",
            message.lines().next().unwrap_or("invalid YAML")
        )
    })?;
    Ok(front
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty()))
}

/// Which skill serves every task type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskSkills {
    /// Task type → document name, for every task type asked about.
    pub by_task: BTreeMap<String, String>,
    /// The fallback document, when there is one.
    pub default: Option<String>,
}

impl TaskSkills {
    /// `profile` with these choices: every task type's document, and the fallback.
    pub fn apply(&self, mut profile: Profile) -> Profile {
        profile.task_skill_files = self.by_task.clone();
        if let Some(default) = &self.default {
            profile.default_skill_file = default.clone();
        }
        profile
    }
}

/// Why a task type found no skill, or a mapping is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapProblem {
    /// A mapping entry (its key) names a skill the folder does not hold.
    UnknownSkill {
        /// The entry's key (a task type or `default`).
        key: String,
        /// What it names.
        skill: String,
        /// What the folder holds.
        held: String,
    },
    /// A mapping key that is no task type of the question set.
    UnknownTask {
        /// The entry's key.
        key: String,
        /// The task types of the question set.
        tasks: String,
    },
    /// A task type with no skill.
    NoSkill {
        /// The task type.
        task: String,
        /// What the folder holds.
        held: String,
    },
}

impl std::fmt::Display for MapProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapProblem::UnknownSkill { key, skill, held } => write!(
                f,
                "[skills] {key:?} = {skill:?}: no such skill; the skills folder holds {held}"
            ),
            MapProblem::UnknownTask { key, tasks } => write!(
                f,
                "[skills] {key:?}: no question has this task type (the task types are {tasks}); \
                 use `default` for the fallback"
            ),
            MapProblem::NoSkill { task, held } => write!(
                f,
                "task type {task:?} has no skill: no [skills] entry for it or `default`, and no \
                 skill is named {:?}; the skills folder holds {held}",
                skill_file_name(task).trim_end_matches(".md")
            ),
        }
    }
}

/// The key of the mapping's fallback entry.
pub const DEFAULT_KEY: &str = "default";

/// Resolves every task type of `tasks` to one of `docs`, by the first rule
/// that applies: the mapping's entry for it (task type → skill name or
/// document name), the skill named like the task type (lower case, spaces
/// as hyphens), the mapping's `default`, a skill named `default-strategy`,
/// the only skill of the folder.
pub fn map_tasks<'t>(
    docs: &[SkillDoc],
    tasks: impl IntoIterator<Item = &'t str>,
    mapping: &BTreeMap<String, String>,
) -> Result<TaskSkills, MapProblem> {
    let held = held_list(docs);
    let find = |key: &str, wanted: &str| {
        let wanted = wanted.trim();
        docs.iter()
            .find(|d| d.skill == wanted || d.document == wanted)
            .map(|d| d.document.clone())
            .ok_or_else(|| MapProblem::UnknownSkill {
                key: key.to_owned(),
                skill: wanted.to_owned(),
                held: held.clone(),
            })
    };
    let mut explicit = BTreeMap::new();
    for (key, wanted) in mapping {
        explicit.insert(key.as_str(), find(key, wanted)?);
    }
    let default = match explicit.get(DEFAULT_KEY) {
        Some(doc) => Some(doc.clone()),
        None => docs
            .iter()
            .find(|d| d.document == LEGACY_DEFAULT)
            .or(match docs {
                [only] => Some(only),
                _ => None,
            })
            .map(|d| d.document.clone()),
    };
    let tasks: std::collections::BTreeSet<&str> = tasks.into_iter().collect();
    if let Some(key) = mapping
        .keys()
        .find(|k| k.as_str() != DEFAULT_KEY && !tasks.contains(k.as_str()))
    {
        return Err(MapProblem::UnknownTask {
            key: key.clone(),
            tasks: tasks
                .iter()
                .map(|t| format!("{t:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut by_task = BTreeMap::new();
    for task in tasks {
        let conventional = skill_file_name(task);
        let doc = explicit
            .get(task)
            .cloned()
            .or_else(|| {
                docs.iter()
                    .find(|d| d.document == conventional)
                    .map(|d| d.document.clone())
            })
            .or_else(|| default.clone())
            .ok_or_else(|| MapProblem::NoSkill {
                task: task.to_owned(),
                held: held.clone(),
            })?;
        by_task.insert(task.to_owned(), doc);
    }
    Ok(TaskSkills { by_task, default })
}

/// `name (path), …` of a folder's skills, for messages.
fn held_list(docs: &[SkillDoc]) -> String {
    docs.iter()
        .map(|d| format!("{} ({})", d.skill, d.path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn agent_skills_folders_are_named_by_frontmatter_or_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "webapp/SKILL.md",
            "---\nname: webapp-testing\ndescription: x\n---\nbody\n",
        );
        write(d, "pdf/SKILL.md", "no frontmatter\n");
        write(d, "pdf/scripts/run.py", "print()\n");
        write(d, "assets/logo.txt", "not a skill\n");
        write(d, "README.md", "not a skill beside skill folders\n");
        write(
            d,
            "read me.md",
            "not a skill either, so its name does not matter\n",
        );
        write(d, ".hidden/SKILL.md", "skipped\n");
        let docs = read_skills(d).unwrap();
        let names: Vec<(&str, &str)> = docs
            .iter()
            .map(|s| (s.skill.as_str(), s.document.as_str()))
            .collect();
        assert_eq!(
            names,
            [("pdf", "pdf.md"), ("webapp-testing", "webapp-testing.md")]
        );
        assert_eq!(docs[1].path, d.join("webapp/SKILL.md"));
    }

    #[test]
    fn flat_files_are_named_by_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "b.md", "---\nname: ignored\n---\n");
        write(d, "a.md", "a\n");
        write(d, "notes.txt", "not markdown\n");
        write(d, ".hidden.md", "skipped\n");
        write(d, "scripts/run.sh", "true\n");
        let names: Vec<String> = read_skills(d)
            .unwrap()
            .into_iter()
            .map(|s| s.document)
            .collect();
        assert_eq!(names, ["a.md", "b.md"]);
    }

    #[test]
    fn a_single_skill_md_is_one_skill() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("my-skill");
        write(&d, "SKILL.md", "---\ndescription: no name\n---\nbody\n");
        write(&d, "other.md", "a resource, not a skill\n");
        let docs = read_skills(&d).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].skill, "my-skill");
        let file = read_skills(&d.join("SKILL.md")).unwrap();
        assert_eq!(file, docs);
    }

    #[test]
    fn bad_folders_are_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "a/SKILL.md", "---\nname: same\n---\n");
        write(d, "b/SKILL.md", "---\nname: same\n---\n");
        assert!(
            read_skills(d)
                .unwrap_err()
                .contains("two skills are named \"same\"")
        );
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a/SKILL.md", "---\nname: ../up\n---\n");
        assert!(
            read_skills(dir.path())
                .unwrap_err()
                .contains("skill name \"../up\"")
        );
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a/SKILL.md", "---\nname: [unclosed\n---\n");
        assert!(
            read_skills(dir.path())
                .unwrap_err()
                .contains("not valid YAML")
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        assert!(
            read_skills(dir.path())
                .unwrap_err()
                .contains("holds no skill document")
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_are_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "outside.md", "secret\n");
        write(d, "skills/a.md", "a\n");
        std::os::unix::fs::symlink(d.join("outside.md"), d.join("skills/b.md")).unwrap();
        assert!(
            read_skills(&d.join("skills"))
                .unwrap_err()
                .contains("symbolic link")
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "outside.md", "secret\n");
        std::fs::create_dir_all(d.join("skills/x")).unwrap();
        std::os::unix::fs::symlink(d.join("outside.md"), d.join("skills/x/SKILL.md")).unwrap();
        assert!(
            read_skills(&d.join("skills"))
                .unwrap_err()
                .contains("symbolic link")
        );
    }

    fn docs(names: &[&str]) -> Vec<SkillDoc> {
        names
            .iter()
            .map(|n| SkillDoc {
                skill: (*n).to_owned(),
                document: format!("{n}.md"),
                path: PathBuf::from(format!("skills/{n}/SKILL.md")),
            })
            .collect()
    }

    #[test]
    fn task_types_resolve_by_mapping_name_then_default() {
        let held = docs(&["billing", "support", "webapp-testing"]);
        let mapping = BTreeMap::from([
            ("Refunds".to_owned(), "billing".to_owned()),
            ("default".to_owned(), "support.md".to_owned()),
        ]);
        let got = map_tasks(&held, ["Refunds", "Webapp Testing", "other"], &mapping).unwrap();
        assert_eq!(got.by_task["Refunds"], "billing.md");
        assert_eq!(got.by_task["Webapp Testing"], "webapp-testing.md");
        assert_eq!(got.by_task["other"], "support.md");
        assert_eq!(got.default.as_deref(), Some("support.md"));
        // No mapping: a lone skill serves everything; two skills do not.
        let one = docs(&["only"]);
        assert_eq!(
            map_tasks(&one, ["x"], &BTreeMap::new()).unwrap().by_task["x"],
            "only.md"
        );
        let problem = map_tasks(&held, ["x"], &BTreeMap::new()).unwrap_err();
        assert!(
            problem
                .to_string()
                .starts_with("task type \"x\" has no skill"),
            "{problem}"
        );
        let wrong = BTreeMap::from([("x".to_owned(), "nope".to_owned())]);
        assert!(matches!(
            map_tasks(&held, ["x"], &wrong),
            Err(MapProblem::UnknownSkill { .. })
        ));
        let stray = BTreeMap::from([("y".to_owned(), "billing".to_owned())]);
        assert!(matches!(
            map_tasks(&held, ["x"], &stray),
            Err(MapProblem::UnknownTask { .. })
        ));
    }
}
