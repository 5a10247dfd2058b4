//! [`RunDir`]: every path of a run's folder, joined here and nowhere else,
//! for `run` and for `evolve` alike, and the checks that keep an `evolve`
//! run folder away from the skill's own folder and its version store.

use std::fs::{File, TryLockError};
use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{bad_at, bad_option};
use crate::probe::check_folder_writable;
use crate::run::private::{self, Tighten};

/// The agents' workspaces in a run folder: what an agent makes inside its own is not checked.
const WORKSPACES: &str = "workspaces";

/// The folder of one run, `<config dir>/.skill-evolve/runs/<name>/`, and the
/// files in it: `store/` (the versions), `runlog.sqlite`, `checkpoint.json`,
/// `llm-journal.jsonl` (every finished LLM call), `workspaces/` (the agent's),
/// `sources.json` (which user file each document came from, and its hash),
/// `inputs.json` (the hashes of everything the run's results depend on, compared when it
/// resumes) and, at the end, `report.md`, `report.json`, `report.html` and `staged/` (the proposal
/// `adopt` writes back).
///
/// An `evolve` session's folder (by default
/// `<skill dir>/.skill-evolve/runs/run-<ms>-<pid>/`, or `--run-dir`) holds
/// `candidate-<skill name>` and `report.json`, and when the candidate is
/// gated against an agent also `store/` (the baseline and every candidate
/// the gate accepted), `runlog.sqlite` (both arms' answers) and
/// `workspaces/`. Its marker file ([`EVOLVE_MARKER`]) says `evolve` made it: a later session
/// may write there again, while a folder with other files and no marker is refused.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// `<config dir>/.skill-evolve/runs/<name>`.
    root: PathBuf,
}

/// The file `evolve` writes first in a session folder it creates: a folder holding files but
/// not this one was not made by `evolve`, and `evolve` refuses to write its reports and
/// candidates over what it holds.
pub const EVOLVE_MARKER: &str = ".skill-evolve-session";

/// The files and folders a run writes in its folder (besides the temporary `.<name>.<random>`
/// files of an atomic write of one of them): `--fresh` deletes these and nothing else.
const RUN_OWN_NAMES: [&str; 16] = [
    "store",
    "events.log",
    "runlog.sqlite",
    "runlog.sqlite-wal",
    "runlog.sqlite-shm",
    "runlog.sqlite-journal",
    "checkpoint.json",
    evolution_llm_cassette::LLM_JOURNAL_FILE,
    WORKSPACES,
    "sources.json",
    "inputs.json",
    "staged",
    "report.md",
    "report.json",
    "report.html",
    LEDGER_INSTANCE,
];

/// The file in a run's folder naming this start of the run in the project's ledger
/// ([`crate::ledger`]): written when the run first starts with a ledger, kept while it
/// resumes, deleted by `--fresh`, so each fresh start is a run of its own there.
pub const LEDGER_INSTANCE: &str = "ledger-run";

/// Whether `name` is one of the entries a run writes in its folder ([`RUN_OWN_NAMES`], or the
/// temporary file of an atomic write of one).
fn run_owns(name: &str) -> bool {
    RUN_OWN_NAMES.iter().any(|own| {
        name == *own
            || name
                .strip_prefix('.')
                .and_then(|rest| rest.strip_prefix(own))
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The lock a run holds on its name for as long as it runs (and starts over); released when
/// dropped.
#[derive(Debug)]
pub struct RunLock {
    /// The open lock file; closing it releases the lock.
    _file: File,
}

/// What starting a run over did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartedOver {
    /// Whether there was earlier state that was deleted.
    pub deleted: bool,
    /// The entries of the run folder the run did not write, left where they are.
    pub kept: Vec<PathBuf>,
    /// The answers `handoff/answers.jsonl` holds from before (kept, since they are yours: a
    /// request the new start asks again gets its earlier answer); 0 without the handoff
    /// provider.
    pub handoff_answers: usize,
}

/// The runs folder of a project: `<project>/.skill-evolve/runs`.
pub fn runs_of(project: &Path) -> PathBuf {
    project.join(crate::STATE_DIR).join("runs")
}

impl RunDir {
    /// The run folder `root` itself (for commands that find runs by listing).
    pub fn at(root: PathBuf) -> Self {
        RunDir { root }
    }

    /// The folder of the run `name` configured by the file `config_path`.
    pub fn of(config_path: &Path, name: &str) -> Self {
        let base = config_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        RunDir {
            root: runs_of(&base).join(name),
        }
    }

    /// The run's folder itself. The LLM journal is opened here and names its
    /// own file (`evolution_llm_cassette::LLM_JOURNAL_FILE`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The versioned store of the run's documents.
    pub fn store(&self) -> PathBuf {
        self.root.join("store")
    }

    /// The SQLite run log.
    pub fn runlog(&self) -> PathBuf {
        self.root.join("runlog.sqlite")
    }

    /// The file naming this start of the run in the project's ledger ([`LEDGER_INSTANCE`]).
    pub fn ledger_instance(&self) -> PathBuf {
        self.root.join(LEDGER_INSTANCE)
    }

    /// The name of this start of the run in the project's ledger: read from
    /// [`RunDir::ledger_instance`], or made now (`<name>@<milliseconds since 1970>`) and
    /// written there.
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn ledger_run(&self) -> anyhow::Result<String> {
        let path = self.ledger_instance();
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        }
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_millis();
        let run = format!("{}@{ms}", self.name());
        crate::working_copy::write_atomically(&path, &run)?;
        Ok(run)
    }

    /// The lines the run said, every leg's, for its report.
    pub fn events(&self) -> PathBuf {
        self.root.join("events.log")
    }

    /// The checkpoint a rerun resumes from.
    pub fn checkpoint(&self) -> PathBuf {
        self.root.join("checkpoint.json")
    }

    /// The agent's working folders.
    pub fn workspaces(&self) -> PathBuf {
        self.root.join(WORKSPACES)
    }

    /// The human-readable report.
    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }

    /// The machine-readable report.
    pub fn report_json(&self) -> PathBuf {
        self.root.join("report.json")
    }

    /// The self-contained HTML report (charts, lineage, diffs).
    pub fn report_html(&self) -> PathBuf {
        self.root.join("report.html")
    }

    /// The project folder the run belongs to (the configuration's folder);
    /// the user paths of `sources.json` are relative to it.
    pub fn project(&self) -> PathBuf {
        self.root
            .ancestors()
            .nth(3)
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// Which user file each stored document came from.
    pub fn sources(&self) -> PathBuf {
        self.root.join("sources.json")
    }

    /// What the run was started with (`inputs.json`): a rerun resumes only with the same.
    pub fn inputs(&self) -> PathBuf {
        self.root.join("inputs.json")
    }

    /// The staged proposal's folder.
    pub fn staged(&self) -> PathBuf {
        self.root.join("staged")
    }

    /// The staged proposal's manifest.
    pub fn proposal(&self) -> PathBuf {
        self.staged().join("proposal.json")
    }

    /// The `evolve` session folder `root` (`--run-dir`, or the default), refused when it
    /// resolves (symbolic links and `..` followed) to the skill's folder
    /// `skill_dir` (the candidate would sit beside, or replace, the skill
    /// before anyone said yes), or to the version store `store` or a folder
    /// inside it (which only the store writes).
    pub fn evolve_session(root: PathBuf, skill_dir: &Path, store: &Path) -> anyhow::Result<Self> {
        let run = resolve(&root);
        let refuse = |what: String| {
            Err(bad_option(format!(
                "--run-dir {} is {what}; choose a folder of its own (the default is \
                 .skill-evolve/runs/ beside the skill)",
                root.display()
            )))
        };
        if run == resolve(skill_dir) {
            return refuse(
                "the skill's own folder, where the candidate could be taken for the skill"
                    .to_owned(),
            );
        }
        if run.starts_with(resolve(store)) {
            return refuse(format!(
                "inside the skill's version store {}, which only the store may write",
                store.display()
            ));
        }
        if holds_foreign_files(&root) {
            return refuse(format!(
                "a folder with files that evolve did not write (it has no {EVOLVE_MARKER} \
                 marker), whose reports and candidates a session would replace"
            ));
        }
        Ok(RunDir { root })
    }

    /// Creates the `evolve` session folder (owner-only), with its marker ([`EVOLVE_MARKER`])
    /// when it has none yet; what it holds is made owner-only and a link in it is refused.
    ///
    /// # Errors
    /// A link, or a folder or marker that cannot be written.
    pub fn create_evolve_session(&self) -> anyhow::Result<()> {
        // The session folder may be any folder the user named: its own entries are checked,
        // not the folders above it.
        private::create_private_dir(&self.root).map_err(|e| {
            anyhow::anyhow!("cannot create the run folder {}: {e}", self.root.display())
        })?;
        private::check_tree(&self.root, &[WORKSPACES], Tighten::Yes)?;
        let marker = self.root.join(EVOLVE_MARKER);
        if std::fs::symlink_metadata(&marker).is_err() {
            crate::working_copy::write_atomically(
                &marker,
                "This folder is an evolve session of skill-evolve; evolve may write here again.\n",
            )?;
        }
        Ok(())
    }

    /// The run's name: the folder's last component (`run` when it has none).
    pub fn name(&self) -> String {
        self.root
            .file_name()
            .map_or_else(|| "run".to_owned(), |n| n.to_string_lossy().into_owned())
    }

    /// Where `evolve` saves its candidate for the skill document
    /// `skill_name`: `candidate-<skill name>`, never the skill's own name, so
    /// no run folder can make the candidate replace the skill.
    pub fn candidate(&self, skill_name: &str) -> PathBuf {
        self.root.join(format!("candidate-{skill_name}"))
    }

    /// The lock file of the run's name: `.<name>.lock` in the runs folder, beside the run
    /// folder (which `--fresh` may delete) and hidden from the list of runs.
    pub fn lock_file(&self) -> PathBuf {
        self.root.with_file_name(format!(".{}.lock", self.name()))
    }

    /// Refuses a run whose folder, runs folder or project state folder (`.skill-evolve`) is a
    /// symbolic link, or whose folder holds one anywhere (its handoff, staged, store, journal,
    /// workspaces folder or the entries of that one): a run writes and deletes only in folders
    /// of its own, never through a link to somewhere else. Only looks: nothing is written.
    ///
    /// # Errors
    /// Such a link: bad input naming it.
    pub fn refuse_links(&self) -> anyhow::Result<()> {
        self.refuse_linked_folders()?;
        private::check_tree(&self.root, &[WORKSPACES], Tighten::No)
    }

    /// Refuses a run folder, runs folder or `.skill-evolve` that is a symbolic link.
    fn refuse_linked_folders(&self) -> anyhow::Result<()> {
        let runs = self
            .root
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let state = runs.parent().map(Path::to_path_buf).unwrap_or_default();
        for folder in [&state, &runs, &self.root] {
            if std::fs::symlink_metadata(folder).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(bad_at(
                    folder,
                    None,
                    "is a symbolic link; a run writes and deletes only in folders of its own, \
                     never through a link, so nothing was run: replace the link with a folder",
                ));
            }
        }
        Ok(())
    }

    /// Makes the run's folder private before and after a run writes in it: created (with the
    /// runs folder) readable by its owner only when missing, every entry in it made
    /// owner-only (files 0600, folders 0700 on Unix), and refused as [`RunDir::refuse_links`]
    /// refuses.
    ///
    /// # Errors
    /// A link, or a folder that cannot be created or an entry whose mode cannot be changed.
    pub fn make_private(&self) -> anyhow::Result<()> {
        self.refuse_links()?;
        private::create_private_dir(&self.root).map_err(|e| {
            anyhow::anyhow!("cannot create the run folder {}: {e}", self.root.display())
        })?;
        private::check_tree(&self.root, &[WORKSPACES], Tighten::Yes)
    }

    /// Takes the lock of the run's name ([`RunDir::lock_file`]) without waiting, after
    /// [`RunDir::refuse_links`]; the lock file then names this process.
    ///
    /// # Errors
    /// A link (see [`RunDir::refuse_links`]), or another process holding the lock: bad input
    /// naming the lock file and its holder. A lock file that cannot be created.
    pub fn lock(&self) -> anyhow::Result<RunLock> {
        self.refuse_links()?;
        let path = self.lock_file();
        if let Some(runs) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            private::create_private_dir(runs)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", runs.display()))?;
        }
        let mut file = private::open_private(&path)
            .map_err(|e| anyhow::anyhow!("cannot open the run lock {}: {e}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {
                // Who holds it, for the line a second run of this name prints.
                let _ = file
                    .set_len(0)
                    .and_then(|()| writeln!(file, "process {}", std::process::id()));
                Ok(RunLock { _file: file })
            }
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = (&mut file).take(64).read_to_string(&mut holder);
                let holder = crate::render::terminal_safe(holder.trim()).into_owned();
                let by = if holder.is_empty() {
                    "another process".to_owned()
                } else {
                    holder
                };
                Err(bad_at(
                    &path,
                    None,
                    format!(
                        "run {:?} is running in {by}, which holds this lock; this one stopped \
                         before writing anything: wait for it to finish, or give [run] name \
                         another value",
                        self.name()
                    ),
                ))
            }
            Err(TryLockError::Error(e)) => {
                Err(anyhow::anyhow!("cannot lock {}: {e}", path.display()))
            }
        }
    }

    /// Deletes what the run wrote in its folder (its store, run log, checkpoint, journal,
    /// workspaces, sources, staged proposal and reports) and the folder itself once it is
    /// empty; anything else in it stays. Never follows a link: a link among the run's entries
    /// is removed itself.
    ///
    /// # Errors
    /// A linked folder ([`RunDir::refuse_links`]), or an entry that cannot be deleted.
    pub fn delete_own(&self) -> anyhow::Result<StartedOver> {
        // A link among the run's own entries is removed, never followed.
        self.refuse_linked_folders()?;
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(StartedOver::default());
            }
            Err(e) => {
                return Err(anyhow::anyhow!("cannot read {}: {e}", self.root.display()));
            }
        };
        let mut done = StartedOver::default();
        for entry in entries {
            let entry =
                entry.map_err(|e| anyhow::anyhow!("cannot read {}: {e}", self.root.display()))?;
            let path = entry.path();
            if !entry.file_name().to_str().is_some_and(run_owns) {
                done.kept.push(path);
                continue;
            }
            let is_folder = entry.file_type().is_ok_and(|t| t.is_dir());
            let removed = if is_folder {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.map_err(|e| anyhow::anyhow!("cannot delete {}: {e}", path.display()))?;
            done.deleted = true;
        }
        done.kept.sort();
        if done.kept.is_empty() {
            std::fs::remove_dir(&self.root)
                .map_err(|e| anyhow::anyhow!("cannot delete {}: {e}", self.root.display()))?;
            done.deleted = true;
        }
        Ok(done)
    }

    /// Refuses (as bad input, before any call) a `--record` cassette path inside this session
    /// folder, whose candidate, reports, store and run log the session writes there; also
    /// when the folder does not exist yet (the other checks of a cassette path know it only
    /// once it holds the session's marker).
    ///
    /// # Errors
    /// Such a path: bad input.
    pub fn refuse_record_inside(&self, record: &Path) -> anyhow::Result<()> {
        if resolve(record).starts_with(resolve(&self.root)) {
            return Err(bad_at(
                record,
                None,
                format!(
                    "--record: this lies inside the run folder {}, where this session writes \
                     its candidate, reports, store and run log; record the cassette outside it; \
                     nothing was sent to the model",
                    self.root.display()
                ),
            ));
        }
        Ok(())
    }

    /// Refuses a run folder that cannot be written, before anything is asked
    /// of the model: the folder itself, or the nearest folder above it that
    /// exists, must take a new file. The check leaves nothing behind.
    pub fn check_writable(&self) -> anyhow::Result<()> {
        check_folder_writable(&self.root).map_err(|e| {
            bad_at(
                &self.root,
                None,
                format!("cannot be the run folder: {e}; nothing was sent to the model"),
            )
        })
    }
}

/// Whether `root` is an existing folder holding at least one entry and no [`EVOLVE_MARKER`].
/// A missing folder or one that cannot be listed is left to the writability check.
fn holds_foreign_files(root: &Path) -> bool {
    let Ok(mut entries) = std::fs::read_dir(root) else {
        return false;
    };
    entries.next().is_some()
        && !std::fs::symlink_metadata(root.join(EVOLVE_MARKER)).is_ok_and(|m| m.is_file())
}

/// `path` made absolute with its links resolved, also when its last
/// components do not exist yet: the longest existing prefix is
/// canonicalised and the rest appended (`..` taking one component off).
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let components: Vec<Component<'_>> = absolute.components().collect();
    for known in (1..=components.len()).rev() {
        let (Some(prefix), Some(rest)) = (components.get(..known), components.get(known..)) else {
            continue;
        };
        let Ok(mut out) = prefix.iter().collect::<PathBuf>().canonicalize() else {
            continue;
        };
        for component in rest {
            match component {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other),
            }
        }
        return out;
    }
    absolute
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_never_take_the_skills_name() {
        let dir = RunDir::at(PathBuf::from("runs/r1"));
        assert_eq!(
            dir.candidate("SKILL.md"),
            Path::new("runs/r1/candidate-SKILL.md")
        );
        assert_eq!(dir.name(), "r1");
    }

    #[test]
    fn evolve_sessions_refuse_the_skill_folder_and_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("skill/.skill-evolve/store")).unwrap();
        let (skill, store) = (root.join("skill"), root.join("skill/.skill-evolve/store"));
        let err = RunDir::evolve_session(root.join("skill/x/.."), &skill, &store).unwrap_err();
        assert!(err.to_string().contains("the skill's own folder"), "{err}");
        let err = RunDir::evolve_session(store.join("v1"), &skill, &store).unwrap_err();
        assert!(
            err.to_string().contains("inside the skill's version store"),
            "{err}"
        );
        let ok = RunDir::evolve_session(root.join("runs/a"), &skill, &store).unwrap();
        assert_eq!(ok.name(), "a");
    }

    #[test]
    fn evolve_sessions_refuse_a_foreign_folder_and_reuse_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("skill")).unwrap();
        let (skill, store) = (root.join("skill"), root.join("skill/.skill-evolve/store"));
        std::fs::create_dir(root.join("empty")).unwrap();
        RunDir::evolve_session(root.join("empty"), &skill, &store).unwrap();
        std::fs::create_dir(root.join("site")).unwrap();
        std::fs::write(root.join("site/report.html"), "mine").unwrap();
        let err = RunDir::evolve_session(root.join("site"), &skill, &store).unwrap_err();
        assert!(err.to_string().contains("did not write"), "{err}");
        let own = RunDir::evolve_session(root.join("own"), &skill, &store).unwrap();
        own.create_evolve_session().unwrap();
        std::fs::write(root.join("own/report.json"), "{}").unwrap();
        RunDir::evolve_session(root.join("own"), &skill, &store).unwrap();
    }

    #[test]
    fn starting_over_deletes_only_the_runs_own_entries() {
        assert!(run_owns("store") && run_owns("report.html") && run_owns("llm-journal.jsonl"));
        assert!(run_owns(".checkpoint.json.a1b2c3") && run_owns("runlog.sqlite-wal"));
        for theirs in [
            "notes.md",
            "report.md.bak",
            ".store",
            "storefront",
            ".report.md",
        ] {
            assert!(!run_owns(theirs), "{theirs}");
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".skill-evolve/runs/demo");
        std::fs::create_dir_all(root.join("store/versions")).unwrap();
        std::fs::write(root.join("report.md"), "old").unwrap();
        std::fs::write(root.join("notes.md"), "mine").unwrap();
        let run = RunDir::at(root.clone());
        let done = run.delete_own().unwrap();
        assert!(done.deleted);
        assert_eq!(done.kept, [root.join("notes.md")]);
        assert!(!root.join("store").exists() && !root.join("report.md").exists());
        std::fs::remove_file(root.join("notes.md")).unwrap();
        #[cfg(unix)]
        {
            // A link among the run's entries is removed, never followed.
            let elsewhere = dir.path().join("elsewhere");
            std::fs::create_dir(&elsewhere).unwrap();
            std::fs::write(elsewhere.join("keep"), "x").unwrap();
            std::os::unix::fs::symlink(&elsewhere, root.join("workspaces")).unwrap();
            run.delete_own().unwrap();
            assert!(!root.exists());
            assert!(elsewhere.join("keep").is_file());
            assert_eq!(run.delete_own().unwrap(), StartedOver::default());
        }
    }

    #[test]
    fn missing_folders_resolve_through_their_existing_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("skill")).unwrap();
        assert_eq!(resolve(&root.join("skill/new/../.")), root.join("skill"));
        assert_eq!(resolve(&root.join("a/b/../c")), root.join("a/c"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("skill"), root.join("link")).unwrap();
            assert_eq!(resolve(&root.join("link")), root.join("skill"));
            assert_eq!(resolve(&root.join("link/x")), root.join("skill/x"));
        }
    }
}
