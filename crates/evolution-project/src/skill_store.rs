//! The version store of a skill file, and the one place a new version of a user's skill file
//! is written: the store first, then the working copy.
//!
//! A file's store is its project's: `<project>/.skill-evolve/stores/` holds one history per
//! file, under the file's path relative to the project, so no skill folder gets a
//! `.skill-evolve` folder of its own and a skill copied with its folder carries no history
//! along. The project is the nearest folder above the file that holds `evolve.toml`,
//! `skill-evolve.toml` or a `.skill-evolve/stores` folder, else the current folder when the
//! file lies under it ([`SkillHome`]). A file in no project keeps its history in the user's
//! data folder (`$XDG_DATA_HOME/skill-evolve/stores/`, else
//! `~/.local/share/skill-evolve/stores/`), under its absolute path. A store that an earlier
//! version of this tool kept beside the file (`.skill-evolve/store` in its folder) is still
//! read and written, so no history is lost. [`store_root`] finds each.
//!
//! Every write of a new version holds the store's lock ([`lock_store`], a file beside the
//! store) from reading the working copy to writing it, so two writers of one file never
//! interleave.
//!
//! The store is the history; the skill file is the working copy. A new
//! version is written to the store first and only then to the working copy,
//! so an interruption leaves the store at a consistent version. A working
//! copy edited by hand since the last version is recorded as its own version
//! before the evolved one, so no edit of the user's is lost from history.
//! The working copy is written through its symbolic link and never when it
//! is read-only (checked before the store moves); when writing it fails
//! after the store moved (a full disk), the error says so and how `rollback`
//! brings the two together again, which it can because a working copy whose
//! text is a stored version holds nothing the store would lose.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use evolution_store_fs::{Change, FsStore, FsStoreError, Opened, VersionId};

use crate::STATE_DIR;
use crate::error::{bad_at, bad_option};
use crate::run::dir::{resolve, runs_of};
use crate::working_copy::{writable_target, write_through};

/// The skill's file name, which is its document name in the store.
pub fn document_name(skill: &Path) -> anyhow::Result<String> {
    skill
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| bad_at(skill, None, "not a file name this tool can store"))
}

/// The folder the skill lives in (`.` for a bare file name).
pub fn skill_dir(skill: &Path) -> PathBuf {
    match skill.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The folder of a project's `.skill-evolve/` that holds the version history of each file
/// adopted into the project, each under the file's path relative to the project.
pub const PROJECT_STORES: &str = "stores";

/// The store `project` keeps for its file at `relative` (a path relative to the project):
/// `<project>/.skill-evolve/stores/<relative>`.
pub fn project_store(project: &Path, relative: &Path) -> PathBuf {
    project.join(STATE_DIR).join(PROJECT_STORES).join(relative)
}

/// The store beside the skill: `.skill-evolve/store` in its folder.
pub fn beside_store(skill: &Path) -> PathBuf {
    skill_dir(skill).join(STATE_DIR).join("store")
}

/// The store root: `--store`; else the store beside the skill when there is one (an
/// earlier version of this tool kept it there); else the store of the nearest project above
/// the skill that keeps one for it (see [`project_store`]); else the one in the user's data
/// folder when there is one; else where a first `evolve` creates it, the store of the
/// skill's home ([`SkillHome::of`]).
pub fn store_root(skill: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(explicit) = explicit {
        return explicit.to_path_buf();
    }
    let beside = beside_store(skill);
    if beside.is_dir() {
        return beside;
    }
    if let Some(store) = project_store_of(skill) {
        return store;
    }
    if let Some(store) = SkillHome::user(skill).map(|home| home.store())
        && store.is_dir()
    {
        return store;
    }
    SkillHome::of(skill).map_or(beside, |home| home.store())
}

/// Where `evolve` keeps what it writes for a skill file outside the skill's folder: a
/// `.skill-evolve`-like folder (`state`) and the file's path within it (`relative`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillHome {
    /// The project's `.skill-evolve/`, or the user's data folder for a file in no project.
    pub state: PathBuf,
    /// The skill file's path relative to the project (its absolute path, without its root,
    /// in the user's data folder).
    pub relative: PathBuf,
}

impl SkillHome {
    /// The home of `skill`: its project's (the nearest folder above it with `evolve.toml`,
    /// `skill-evolve.toml` or `.skill-evolve/stores`, else the current folder when the skill
    /// lies under it), else the user's data folder; `None` when neither can be found (no
    /// file name, or no home folder).
    pub fn of(skill: &Path) -> Option<Self> {
        let name = skill.file_name()?;
        let folder = resolve(&skill_dir(skill));
        let marked = folder.ancestors().find(|dir| {
            dir.join("evolve.toml").is_file()
                || dir.join("skill-evolve.toml").is_file()
                || dir.join(STATE_DIR).join(PROJECT_STORES).is_dir()
        });
        let cwd = std::env::current_dir().ok().map(|cwd| resolve(&cwd));
        let project = marked
            .map(Path::to_path_buf)
            .or_else(|| cwd.clone().filter(|cwd| folder.starts_with(cwd)));
        match project {
            Some(project) => Some(SkillHome {
                relative: folder.strip_prefix(&project).ok()?.join(name),
                // Shown relative to the current folder when it lies there, as a path the
                // user typed would be.
                state: match cwd
                    .as_deref()
                    .and_then(|cwd| project.strip_prefix(cwd).ok())
                {
                    Some(inside) if inside.as_os_str().is_empty() => Path::new(".").join(STATE_DIR),
                    Some(inside) => inside.join(STATE_DIR),
                    None => project.join(STATE_DIR),
                },
            }),
            None => Self::user(skill),
        }
    }

    /// The home of `skill` in the user's data folder (`$XDG_DATA_HOME/skill-evolve`, else
    /// `~/.local/share/skill-evolve`), keyed by the skill's absolute path.
    pub fn user(skill: &Path) -> Option<Self> {
        Self::user_in(skill, &|key| std::env::var_os(key))
    }

    /// [`SkillHome::user`] with the environment `vars`.
    fn user_in(skill: &Path, vars: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<Self> {
        let var = |key: &str| {
            vars(key)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let data = var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))?;
        let name = skill.file_name()?;
        let folder = resolve(&skill_dir(skill));
        let relative: PathBuf = folder
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        Some(SkillHome {
            state: data.join("skill-evolve"),
            relative: relative.join(name),
        })
    }

    /// The skill's version store in this home.
    pub fn store(&self) -> PathBuf {
        self.state.join(PROJECT_STORES).join(&self.relative)
    }

    /// The folder `evolve` sessions of the skill go in (`runs/`, beside a project's runs).
    pub fn runs(&self) -> PathBuf {
        self.state.join("runs")
    }
}

/// The existing store of `skill` in the `.skill-evolve/stores/` of a folder above it.
fn project_store_of(skill: &Path) -> Option<PathBuf> {
    let name = skill.file_name()?;
    let folder = resolve(&skill_dir(skill));
    folder.ancestors().find_map(|project| {
        let relative = folder.strip_prefix(project).ok()?.join(name);
        let store = project_store(project, &relative);
        store.is_dir().then_some(store)
    })
}

/// The default folder of a new `evolve` session of `skill`: `run-<milliseconds>-<process
/// id>` in the runs folder of the skill's home (its project's `.skill-evolve/runs`, see
/// [`SkillHome`]), never inside the skill's folder; `.skill-evolve/runs` beside the skill only
/// when the skill has no home (no file name, no home folder).
pub fn evolve_session_root(skill: &Path) -> PathBuf {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    let runs = SkillHome::of(skill).map_or_else(|| runs_of(&skill_dir(skill)), |home| home.runs());
    runs.join(format!("run-{ms}-{}", std::process::id()))
}

/// The folder of an `evolve` session of `skill` answered by hand (the `handoff` provider),
/// the same each time, since the same command is run again once the requests are answered:
/// `handoff-<the skill's path in its home>` in its home's runs folder; or, when an earlier
/// version of this tool started one there, `.skill-evolve/runs/handoff-<the skill file's
/// stem>` beside the skill, so the answers given there are kept.
pub fn handoff_session_root(skill: &Path) -> PathBuf {
    let safe = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let stem = skill
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let beside = runs_of(&skill_dir(skill)).join(format!("handoff-{}", safe(&stem)));
    if beside.is_dir() {
        return beside;
    }
    match SkillHome::of(skill) {
        Some(home) => {
            let key: Vec<String> = home
                .relative
                .with_extension("")
                .components()
                .map(|c| safe(&c.as_os_str().to_string_lossy()))
                .collect();
            home.runs().join(format!("handoff-{}", key.join("-")))
        }
        None => beside,
    }
}

/// The lock on one version store, held until it is dropped.
#[derive(Debug)]
pub struct StoreLock {
    /// The open lock file; closing it releases the lock.
    _file: File,
}

/// The lock file of the store at `root`: `.<store folder name>.lock` beside it.
pub fn lock_path(root: &Path) -> PathBuf {
    match root.file_name() {
        Some(name) => root.with_file_name(format!(".{}.lock", name.to_string_lossy())),
        None => root.join(".store.lock"),
    }
}

/// Takes the lock of the store at `root` (its folder need not exist yet), waiting while
/// another process holds it.
///
/// # Errors
/// A lock file that cannot be created or locked.
pub fn lock_store(root: &Path) -> anyhow::Result<StoreLock> {
    let path = lock_path(root);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| anyhow::anyhow!("cannot open the store lock {}: {e}", path.display()))?;
    file.lock()
        .map_err(|e| anyhow::anyhow!("cannot lock {}: {e}", path.display()))?;
    Ok(StoreLock { _file: file })
}

/// Opens the existing store of `skill` (`explicit`, else the one beside it) and returns it
/// with the skill's document name.
///
/// # Errors
/// A bad input when there is no store yet or it is corrupt.
pub fn open_existing(skill: &Path, explicit: Option<&Path>) -> anyhow::Result<(FsStore, String)> {
    let name = document_name(skill)?;
    let root = store_root(skill, explicit);
    let store = FsStore::open(&root).map_err(|e| match e {
        // Neither the file nor a store: most likely a mistyped path.
        FsStoreError::NotAStore { .. } if !skill.exists() => bad_at(
            skill,
            None,
            "no such file, and no version history for it (check the path)",
        ),
        FsStoreError::NotAStore { .. } => bad_at(
            &root,
            None,
            format!(
                "no version history here yet: `skill-evolve evolve {}` creates it when it \
                 writes its first version, and `skill-evolve adopt RUN` when it adopts a run's \
                 document into this file",
                skill.display()
            ),
        ),
        other => store_error(&root, other),
    })?;
    Ok((store, name))
}

/// A store's error as the user reads it: a corrupt store or an unknown version is a bad
/// input, anything else a failure naming the store.
pub fn store_error(root: &Path, e: FsStoreError) -> anyhow::Error {
    match e {
        FsStoreError::Corrupt { message } => {
            bad_at(root, None, format!("store is corrupt: {message}"))
        }
        FsStoreError::UnknownVersion { version } => {
            bad_option(format!("version {version} is not in this store's history"))
        }
        other => anyhow::Error::new(other).context(format!("store {}", root.display())),
    }
}

/// Records `candidate` as a new version of the skill and then writes it to
/// the working copy, holding the store's lock. Returns the new version.
pub fn write_new_version(
    skill: &Path,
    explicit_store: Option<&Path>,
    working: &str,
    candidate: &str,
    message: &str,
) -> anyhow::Result<VersionId> {
    let _lock = lock_store(&store_root(skill, explicit_store))?;
    record_and_write(
        skill,
        explicit_store,
        working,
        candidate,
        message,
        write_through,
    )
}

/// [`write_new_version`] into the store at `store`, by a caller that holds its lock (`_lock`)
/// and checked under it that the working copy is still `working`.
pub fn write_new_version_locked(
    _lock: &StoreLock,
    skill: &Path,
    store: &Path,
    working: &str,
    candidate: &str,
    message: &str,
) -> anyhow::Result<VersionId> {
    record_and_write(
        skill,
        Some(store),
        working,
        candidate,
        message,
        write_through,
    )
}

/// [`write_new_version`] with the working copy written by `write`.
fn record_and_write(
    skill: &Path,
    explicit_store: Option<&Path>,
    working: &str,
    candidate: &str,
    message: &str,
    write: impl FnOnce(&Path, &str) -> anyhow::Result<()>,
) -> anyhow::Result<VersionId> {
    // A working copy that cannot be written is refused before the store moves.
    writable_target(skill)?;
    let name = document_name(skill)?;
    let root = store_root(skill, explicit_store);
    // `open_or_init`: evolves started at once on a new skill share the store one of them creates.
    let (store, opened) = FsStore::open_or_init(
        &root,
        [(name.clone(), working.to_owned())],
        "imported working copy",
    )
    .map_err(|e| store_error(&root, e))?;
    if opened == Opened::Existing && store.read(&name).ok().as_deref() != Some(working) {
        store
            .advance_version(
                &[Change::write(name.clone(), working)],
                "working copy as found before evolving",
            )
            .map_err(|e| store_error(&root, e))?;
    }
    let previous = store.current_version().map_err(|e| store_error(&root, e))?;
    let version = store
        .advance_version(&[Change::write(name, candidate)], message)
        .map_err(|e| store_error(&root, e))?;
    write(skill, candidate)
        .map_err(|e| store_ahead(e, skill, explicit_store, previous, version))?;
    Ok(version)
}

/// The error of a working copy that could not be written after the store
/// moved from `file_holds` to `store_holds`, with the ways back.
pub fn store_ahead(
    e: anyhow::Error,
    skill: &Path,
    explicit_store: Option<&Path>,
    file_holds: VersionId,
    store_holds: VersionId,
) -> anyhow::Error {
    let store = explicit_store
        .map(|s| format!(" --store {}", s.display()))
        .unwrap_or_default();
    let rollback = format!("skill-evolve rollback {}{store}", skill.display());
    anyhow::anyhow!(
        "{e:#}. The store is ahead of the file: it is at {store_holds} but {} still holds \
         {file_holds}. Once the disk has room, `{rollback} --to {store_holds} --yes` writes \
         {store_holds} to the file, or `{rollback} --to {file_holds} --yes` takes the store \
         back to the file; running the same command again works too",
        skill.display()
    )
}

/// The latest version of `store` in which `name` has the text `text`: a
/// working copy holding it has nothing the store would lose.
///
/// # Errors
/// A store that cannot be read.
pub fn stored_version(
    store: &FsStore,
    name: &str,
    text: &str,
) -> anyhow::Result<Option<VersionId>> {
    let root = store.root().to_path_buf();
    let entries = store.history().map_err(|e| store_error(&root, e))?;
    let mut versions: Vec<VersionId> = entries.iter().map(|e| e.version).collect();
    versions.sort_unstable();
    versions.dedup();
    for version in versions.into_iter().rev() {
        if store.read_at(version, name).ok().as_deref() == Some(text) {
            return Ok(Some(version));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_after_the_store_moved_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("SKILL.md");
        std::fs::write(&skill, "v1\n").unwrap();
        let full = |_: &Path, _: &str| -> anyhow::Result<()> {
            Err(std::io::Error::from(std::io::ErrorKind::StorageFull).into())
        };
        let err = record_and_write(&skill, None, "v1\n", "v2\n", "evolved", full).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("The store is ahead of the file"), "{text}");
        assert!(text.contains("it is at v000002 but"), "{text}");
        assert!(text.contains("still holds v000001"), "{text}");
        assert!(
            text.contains("--to v000002 --yes` writes v000002 to the file"),
            "{text}"
        );
        assert!(
            text.contains("--to v000001 --yes` takes the store back"),
            "{text}"
        );
        assert!(
            text.starts_with("no storage space. The store is ahead"),
            "{text}"
        );
        // The store moved, the file did not.
        let store = FsStore::open(store_root(&skill, None)).unwrap();
        assert_eq!(store.current_version().unwrap(), VersionId::new(2));
        assert_eq!(std::fs::read_to_string(&skill).unwrap(), "v1\n");
    }

    #[test]
    fn a_file_adopted_into_a_project_finds_the_projects_store_unless_one_is_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap();
        let skill = project.join("skills/a/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        std::fs::write(project.join("evolve.toml"), "").unwrap();
        let kept = project_store(&project, Path::new("skills/a/SKILL.md"));
        // A new store is the project's.
        assert_eq!(store_root(&skill, None), kept);
        assert!(kept.ends_with(".skill-evolve/stores/skills/a/SKILL.md"));
        std::fs::create_dir_all(&kept).unwrap();
        assert_eq!(store_root(&skill, None), kept);
        // Another file of that folder has its own history there.
        let other = project.join("skills/a/notes.md");
        assert_eq!(
            store_root(&other, None),
            project_store(&project, Path::new("skills/a/notes.md"))
        );
        // A store an earlier version kept beside the skill is still the skill's.
        std::fs::create_dir_all(beside_store(&skill)).unwrap();
        assert_eq!(store_root(&skill, None), beside_store(&skill));
        assert_eq!(
            lock_path(&beside_store(&skill)),
            project.join("skills/a/.skill-evolve/.store.lock")
        );
        let held = lock_store(&kept).unwrap();
        assert!(
            project
                .join(".skill-evolve/stores/skills/a/.SKILL.md.lock")
                .is_file()
        );
        drop(held);
    }

    #[test]
    fn a_new_store_is_in_the_nearest_project_never_in_the_skills_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let skill = root.join("work/skills/a/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        // The tool's configuration marks the project, wherever the command runs.
        std::fs::write(root.join("work/skill-evolve.toml"), "").unwrap();
        let home = SkillHome::of(&skill).unwrap();
        assert_eq!(home.state, root.join("work/.skill-evolve"));
        assert_eq!(home.relative, Path::new("skills/a/SKILL.md"));
        assert_eq!(
            store_root(&skill, None),
            root.join("work/.skill-evolve/stores/skills/a/SKILL.md")
        );
        assert_eq!(home.runs(), root.join("work/.skill-evolve/runs"));
        // A nearer project's stores folder wins.
        std::fs::create_dir_all(root.join("work/skills/.skill-evolve/stores")).unwrap();
        assert_eq!(
            store_root(&skill, None),
            root.join("work/skills/.skill-evolve/stores/a/SKILL.md")
        );
    }

    #[test]
    fn evolve_sessions_go_to_the_projects_runs_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let skill = root.join("skill");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(root.join("evolve.toml"), "").unwrap();
        let file = skill.join("SKILL.md");
        let fresh = evolve_session_root(&file);
        assert_eq!(fresh.parent(), Some(&*root.join(".skill-evolve/runs")));
        let name = fresh.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("run-"), "{name}");
        // It is a folder a session may use: neither the skill's folder nor in its store.
        let store = store_root(&file, None);
        assert!(crate::run::dir::RunDir::evolve_session(fresh, &skill, &store).is_ok());
        assert_eq!(
            handoff_session_root(&file),
            root.join(".skill-evolve/runs/handoff-skill-SKILL")
        );
        // A handoff session an earlier version began beside the skill is carried on there.
        std::fs::create_dir_all(skill.join(".skill-evolve/runs/handoff-SKILL")).unwrap();
        assert_eq!(
            handoff_session_root(&file),
            skill.join(".skill-evolve/runs/handoff-SKILL")
        );
    }

    #[test]
    fn a_skill_in_no_project_keeps_its_history_in_the_users_data_folder() {
        let skill = Path::new("/srv/skills/a/SKILL.md");
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let home = SkillHome::user_in(skill, &env(&[("HOME", "/home/u")])).unwrap();
        assert_eq!(home.state, Path::new("/home/u/.local/share/skill-evolve"));
        assert_eq!(
            home.store(),
            Path::new("/home/u/.local/share/skill-evolve/stores/srv/skills/a/SKILL.md")
        );
        let home = SkillHome::user_in(
            skill,
            &env(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "/data")]),
        )
        .unwrap();
        assert_eq!(home.runs(), Path::new("/data/skill-evolve/runs"));
        // No absolute home folder: nowhere to keep it.
        assert_eq!(SkillHome::user_in(skill, &env(&[("HOME", "rel")])), None);
    }
}
