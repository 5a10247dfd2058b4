//! Adopt: a finished run's staged documents written to the user's files, once the caller has
//! shown the diff and the user said yes.
//!
//! Every check comes before the first write: the documents asked for must be staged, each
//! user file must lie inside the project the run was made for (its folders resolved, links and
//! `..` followed), must still be the text the run imported (its SHA-256 is compared with the
//! one recorded at import) and must not be a symbolic link. Each file is then written through
//! its version store (the project's, `.skill-evolve/stores/<path in the project>`, or one
//! already beside the file), so `history`, `diff` and `rollback` cover the adoption.
//!
//! Writing holds the run's adoption lock and each target store's lock; under them every file
//! is read again and must still hold the text that was checked and shown, so of two adoptions
//! racing for one file only the first writes. [`undo`] takes an adoption back: every file it
//! wrote gets the text the run started from again.

use std::path::{Component, Path, PathBuf};

pub mod undo;

use crate::error::{bad_at, bad_option};
use crate::input::read_document;
use crate::render::unified_diff;
use crate::run::dir::{RunDir, resolve, runs_of};
use crate::run::stage::{Proposal, StagedDoc, by_name, read_proposal, sha256_hex, write_proposal};
use crate::skill_store::{
    StoreLock, beside_store, lock_store, project_store, write_new_version_locked,
};
use crate::status::{find_project, list_runs};

/// The run folder `run` names: a run folder's path, or the name of a run of the project
/// (`project`, else the one found from `start`).
///
/// # Errors
/// A bad input naming the runs there are when there is no such run.
pub fn find_run(run: &str, project: Option<&Path>, start: &Path) -> anyhow::Result<RunDir> {
    let as_path = Path::new(run);
    if as_path.join("staged").is_dir() {
        return Ok(RunDir::at(as_path.to_path_buf()));
    }
    let project = find_project(project, start)?;
    let valid = run.starts_with(|c: char| c.is_ascii_alphanumeric())
        && run
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let root = runs_of(&project).join(run);
    if valid && root.is_dir() {
        return Ok(RunDir::at(root));
    }
    let names: Vec<String> = list_runs(&project)?.into_iter().map(|(n, _)| n).collect();
    Err(bad_option(format!(
        "no run named {:?} in {} (runs: {})",
        escape_controls(run),
        runs_of(&project).display(),
        if names.is_empty() {
            "none".to_owned()
        } else {
            escape_controls(&names.join(", "))
        }
    )))
}

/// A staged document checked against its user file and ready to write.
#[derive(Debug, Clone)]
pub struct ReadyDocument {
    /// The document's name in the run.
    document: String,
    /// The version store the file is written through.
    store: PathBuf,
    /// The user's file (relative to the current folder when it lies inside it).
    pub user_file: PathBuf,
    /// Its text now, the text the run imported.
    pub current: String,
    /// The staged text that replaces it.
    pub staged: String,
}

/// What adopting a run would do: the documents ready to write, and notes on those left as
/// they are (adopted already, or already holding the staged text).
#[derive(Debug)]
pub struct AdoptPlan {
    dir: RunDir,
    proposal: Proposal,
    /// The documents that would be written.
    pub ready: Vec<ReadyDocument>,
    /// One line per document left as it is (escaped).
    pub notes: Vec<String>,
}

/// Why there is nothing to adopt, or what would be.
#[derive(Debug)]
pub enum AdoptCheck {
    /// The run finished without staging anything (no candidate was accepted).
    NothingStaged {
        /// The run's name.
        run: String,
    },
    /// Every document asked for is adopted already or holds the staged text.
    NothingLeft {
        /// The run's name.
        run: String,
        /// One line per document left as it is.
        notes: Vec<String>,
    },
    /// Documents ready to write, once confirmed.
    Ready(AdoptPlan),
}

/// Checks the staged documents of the run in `dir` that `skills` names (every one not
/// adopted yet when empty) against the user's files; writes nothing.
///
/// # Errors
/// A run that has not finished, a document it did not stage, a user file changed since the
/// run read it or that is a symbolic link: bad input, nothing written.
pub fn check_adopt(dir: &RunDir, skills: &[String]) -> anyhow::Result<AdoptCheck> {
    let Some(proposal) = read_proposal(dir)? else {
        return Err(bad_option(format!(
            "run {:?} has staged nothing yet: it has not finished (the same `run` command \
             resumes it)",
            escape_controls(&dir.name())
        )));
    };
    if proposal.documents.is_empty() {
        return Ok(AdoptCheck::NothingStaged {
            run: escape_controls(&proposal.run),
        });
    }
    let mut ready = Vec::new();
    let mut notes = Vec::new();
    for index in select(&proposal, skills)? {
        if let Some(r) = check(dir, &proposal, index, &mut notes)? {
            ready.push(r);
        }
    }
    if ready.is_empty() {
        return Ok(AdoptCheck::NothingLeft {
            run: escape_controls(&proposal.run),
            notes,
        });
    }
    Ok(AdoptCheck::Ready(AdoptPlan {
        dir: dir.clone(),
        proposal,
        ready,
        notes,
    }))
}

/// A document written by an adoption.
#[derive(Debug, Clone)]
pub struct Adopted {
    /// The user's file.
    pub user_file: PathBuf,
    /// The version of its store that now holds the staged text.
    pub version: String,
}

/// What an adoption did: the documents written, and one note per document another adoption
/// of the same run wrote meanwhile (escaped).
#[derive(Debug, Clone)]
pub struct Applied {
    /// The documents written.
    pub adopted: Vec<Adopted>,
    /// One line per document left as it is.
    pub notes: Vec<String>,
}

impl AdoptPlan {
    /// The run's name (escaped).
    pub fn run(&self) -> String {
        escape_controls(&self.proposal.run)
    }

    /// The unified diff of every document that would be written, its control characters
    /// escaped so that a staged document cannot drive a terminal.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for r in &self.ready {
            let shown = r.user_file.display().to_string();
            out.push_str(&unified_diff(
                &r.current,
                &r.staged,
                &format!("a/{shown}"),
                &format!("b/{shown}"),
            ));
        }
        escape_controls(&out)
    }

    /// Writes the documents, each through its own version store, and records the adoption in
    /// the run's proposal. `confirmed` must say that the user saw [`AdoptPlan::diff`] and
    /// said yes; without it nothing is written.
    ///
    /// # Errors
    /// As [`AdoptPlan::apply_with_notes`].
    pub fn apply(self, confirmed: bool) -> anyhow::Result<Vec<Adopted>> {
        self.apply_with_notes(confirmed)
            .map(|applied| applied.adopted)
    }

    /// [`AdoptPlan::apply`], with a note for each document that another adoption of the same
    /// run wrote while this one waited for its lock.
    ///
    /// Holds the run's adoption lock and the lock of every target store while it checks each
    /// file again (it must still hold the text shown in the diff) and writes.
    ///
    /// # Errors
    /// No confirmation, or a file changed since it was checked (another adoption or an edit
    /// wrote it): bad input, nothing written. A store or file that cannot be written (the
    /// documents written before it stay adopted and recorded).
    pub fn apply_with_notes(self, confirmed: bool) -> anyhow::Result<Applied> {
        if !confirmed {
            return Err(bad_option(
                "not adopted: the adoption was not confirmed (nothing was written)",
            ));
        }
        let AdoptPlan { dir, ready, .. } = self;
        let locks = AdoptionLocks::take(&dir, ready.iter().map(|r| r.store.clone()))?;
        // The proposal as it is now, with what an adoption that held the locks first recorded.
        let mut proposal = locks.proposal(&dir, "adopted")?;
        let mut notes = Vec::new();
        let mut writes = Vec::new();
        for r in ready {
            let Some(index) = proposal
                .documents
                .iter()
                .position(|d| d.source.document == r.document)
            else {
                return Err(bad_at(
                    &dir.proposal(),
                    None,
                    format!(
                        "{} is no longer staged; nothing was adopted",
                        escape_controls(&r.document)
                    ),
                ));
            };
            if let Some(version) = proposal
                .documents
                .get(index)
                .and_then(|d| d.adopted_as.as_deref())
            {
                notes.push(escape_controls(&format!(
                    "{} was adopted meanwhile by another adopt of this run (as {version})",
                    r.user_file.display()
                )));
                continue;
            }
            let now = read_document(&r.user_file)?;
            if now != r.current {
                return Err(bad_at(
                    &r.user_file,
                    None,
                    format!(
                        "changed since run {:?} read it (another adopt or an edit wrote it \
                         meanwhile), so the staged version would undo that change; nothing was \
                         adopted",
                        escape_controls(&proposal.run)
                    ),
                ));
            }
            writes.push((index, r));
        }
        let message = format!(
            "adopted from run {} ({})",
            proposal.run, proposal.final_version
        );
        let mut adopted = Vec::new();
        for (index, r) in writes {
            let version = write_new_version_locked(
                locks.of(&r.store)?,
                &r.user_file,
                &r.store,
                &r.current,
                &r.staged,
                &message,
            )?;
            if let Some(doc) = proposal.documents.get_mut(index) {
                doc.adopted_as = Some(version.to_string());
            }
            write_proposal(&dir, &proposal)?;
            adopted.push(Adopted {
                user_file: r.user_file,
                version: version.to_string(),
            });
        }
        Ok(Applied { adopted, notes })
    }
}

/// The locks an adoption (or its undoing) writes under: the run's adoption lock, then each
/// target store's in one order, so two adoptions never wait for each other in a circle.
struct AdoptionLocks {
    _run: StoreLock,
    stores: Vec<(PathBuf, StoreLock)>,
}

impl AdoptionLocks {
    /// Takes the run's lock and those of `stores`.
    fn take(dir: &RunDir, stores: impl IntoIterator<Item = PathBuf>) -> anyhow::Result<Self> {
        let run = lock_store(&dir.staged().join("adopt"))?;
        let mut stores: Vec<PathBuf> = stores.into_iter().collect();
        stores.sort_unstable();
        stores.dedup();
        let mut locked = Vec::new();
        for store in stores {
            let lock = lock_store(&store)?;
            locked.push((store, lock));
        }
        Ok(AdoptionLocks {
            _run: run,
            stores: locked,
        })
    }

    /// The lock of `store`.
    fn of(&self, store: &Path) -> anyhow::Result<&StoreLock> {
        self.stores
            .iter()
            .find(|(locked, _)| locked == store)
            .map(|(_, lock)| lock)
            .ok_or_else(|| anyhow::anyhow!("the store {} was not locked", store.display()))
    }

    /// The run's proposal as it is under the locks; none is an error saying nothing was
    /// `done`.
    fn proposal(&self, dir: &RunDir, done: &str) -> anyhow::Result<Proposal> {
        read_proposal(dir)?.ok_or_else(|| {
            bad_option(format!(
                "run {:?} no longer has a staged proposal; nothing was {done}",
                escape_controls(&dir.name())
            ))
        })
    }
}

/// The indices of the documents to adopt: those named, else every one.
fn select(proposal: &Proposal, wanted: &[String]) -> anyhow::Result<Vec<usize>> {
    if wanted.is_empty() {
        return Ok((0..proposal.documents.len()).collect());
    }
    let names = by_name(proposal);
    let mut picked = Vec::new();
    for name in wanted {
        let indices = names.get(name.as_str()).ok_or_else(|| {
            let staged: Vec<&str> = proposal
                .documents
                .iter()
                .map(|d| d.source.name.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            bad_option(format!(
                "--skill {:?}: run {:?} staged no such document (it staged {})",
                escape_controls(name),
                escape_controls(&proposal.run),
                escape_controls(&staged.join(", "))
            ))
        })?;
        for index in indices {
            if !picked.contains(index) {
                picked.push(*index);
            }
        }
    }
    Ok(picked)
}

/// Checks one staged document against its user file; `None` (and a note) when it was
/// adopted already or holds the staged text.
fn check(
    dir: &RunDir,
    proposal: &Proposal,
    index: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<ReadyDocument>> {
    let Some(doc) = proposal.documents.get(index) else {
        return Ok(None);
    };
    if let Some(version) = &doc.adopted_as {
        notes.push(escape_controls(&format!(
            "{} was adopted already (as {version})",
            doc.source.path.display()
        )));
        return Ok(None);
    }
    let StagedFile {
        store,
        user_file,
        staged,
        current,
    } = staged_file(dir, doc)?;
    if current == staged {
        notes.push(escape_controls(&format!(
            "{} already has the staged text",
            user_file.display()
        )));
        return Ok(None);
    }
    if sha256_hex(&current) != doc.source.sha256 {
        return Err(bad_at(
            &user_file,
            None,
            format!(
                "changed since run {:?} read it, so the staged version would undo your edits; \
                 nothing was adopted (start a new run from the edited file, e.g. with --fresh)",
                escape_controls(&proposal.run)
            ),
        ));
    }
    Ok(Some(ReadyDocument {
        document: doc.source.document.clone(),
        store,
        user_file,
        current,
        staged,
    }))
}

/// A staged document's files as adopt and its undoing read them.
struct StagedFile {
    /// The version store the user file is written through.
    store: PathBuf,
    /// The user's file (relative to the current folder when it lies inside it).
    user_file: PathBuf,
    /// The staged text.
    staged: String,
    /// The user file's text now.
    current: String,
}

/// Reads the staged text of `doc` and its user file, refusing a document name that is not
/// one, a user file outside the run's project, and a user file that is a symbolic link.
fn staged_file(dir: &RunDir, doc: &StagedDoc) -> anyhow::Result<StagedFile> {
    // The staged file's path is rebuilt from the document name, never read from the record.
    let document = &doc.source.document;
    if document.is_empty() || document.starts_with('.') || document.contains(['/', '\\']) {
        return Err(bad_at(
            &dir.proposal(),
            None,
            format!("{:?} is not a document name", escape_controls(document)),
        ));
    }
    let (target, store) = inside_project(dir, &doc.source.path)?;
    let staged = read_document(&dir.staged().join("files").join(document))?;
    let user_file = shown(&target);
    if std::fs::symlink_metadata(&user_file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad_at(
            &user_file,
            None,
            "is a symbolic link; adopt writes only regular files",
        ));
    }
    let current = read_document(&user_file)?;
    Ok(StagedFile {
        store,
        user_file,
        staged,
        current,
    })
}

/// The user file of a staged document whose recorded path is `recorded`, and the version store
/// it is written through: the file must lie inside the project the run folder belongs to (its
/// folders resolved, links and `..` followed, before they are compared), whatever the run's
/// record says. Its store is the one already beside it, else the project's for its path.
///
/// # Errors
/// A run folder that is not in a project's `.skill-evolve/runs/`, or a path that leads out of
/// the project: bad input, nothing written.
fn inside_project(dir: &RunDir, recorded: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let project = dir.project();
    if dir.root().parent() != Some(runs_of(&project).as_path()) {
        return Err(bad_at(
            dir.root(),
            None,
            "is not a run folder of a project (<project>/.skill-evolve/runs/<name>), so there \
             is no project to adopt into; nothing was adopted",
        ));
    }
    let outside = || {
        bad_at(
            &dir.proposal(),
            None,
            format!(
                "the staged document's path {:?} leads outside the project {} this run was \
                 made for; adopt writes only to files inside it, so nothing was adopted",
                escape_controls(&recorded.display().to_string()),
                escape_controls(&project.display().to_string())
            ),
        )
    };
    if recorded
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(outside());
    }
    let (Some(name), Some(parent)) = (recorded.file_name(), recorded.parent()) else {
        return Err(outside());
    };
    let root = resolve(&project);
    let folder = resolve(&project.join(parent));
    let Ok(relative) = folder.strip_prefix(&root) else {
        return Err(outside());
    };
    let target = project.join(recorded);
    let beside = beside_store(&target);
    let store = if beside.is_dir() {
        beside
    } else {
        project_store(&project, &relative.join(name))
    };
    // Nor is the history written through a linked `.skill-evolve` or store folder.
    if !resolve(&store).starts_with(&root) {
        return Err(bad_at(
            &store,
            None,
            format!(
                "this version store leads outside the project {} through a symbolic link; \
                 adopt writes only inside the project, so nothing was adopted",
                escape_controls(&project.display().to_string())
            ),
        ));
    }
    Ok((target, store))
}

/// `path` relative to the current folder when it lies inside it.
fn shown(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| path.to_path_buf())
}

/// `text` with every control character but newline and tab (and the
/// Unicode bidirectional controls) written as `\u{…}`, so that a staged
/// document cannot drive the terminal.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && c != '\n' && c != '\t') || bidi {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_but_lines_kept() {
        assert_eq!(
            escape_controls("a\u{1b}[31mb\n\tc\u{202e}d\r"),
            "a\\u{1b}[31mb\n\tc\\u{202e}d\\u{d}"
        );
    }
}
