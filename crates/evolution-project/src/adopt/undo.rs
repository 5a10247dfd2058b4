//! Undoing an adoption: every file an adoption of a run wrote (a skill's `SKILL.md` and the
//! references evolved with it alike) gets back the text the run started from, in one step.
//!
//! As for adopt, every check comes before the first write: each file must still hold the text
//! the adoption wrote (an edit made since is never overwritten) and the text to restore is read
//! from the run's own store and must be the one the run imported (its recorded SHA-256). Each
//! file is written through its version store as a new version, so the adoption and its undoing
//! both stay in `history`; the run's record then shows the document as staged again.

use std::path::PathBuf;

use evolution_store_fs::{FsStore, VersionId};

use super::{Adopted, AdoptionLocks, StagedFile, escape_controls, select, staged_file};
use crate::error::{bad_at, bad_option};
use crate::input::read_document;
use crate::render::unified_diff;
use crate::run::dir::RunDir;
use crate::run::stage::{Proposal, read_proposal, sha256_hex, write_proposal};
use crate::skill_store::write_new_version_locked;

/// An adopted document checked against its user file and ready to restore.
#[derive(Debug, Clone)]
pub struct ReadyUndo {
    /// The document's name in the run.
    document: String,
    /// The version store the file is written through.
    store: PathBuf,
    /// The version the adoption wrote.
    pub adopted_as: String,
    /// The user's file (relative to the current folder when it lies inside it).
    pub user_file: PathBuf,
    /// Its text now: the text the adoption wrote.
    pub current: String,
    /// The text the run started from, which replaces it.
    pub restored: String,
}

/// What undoing an adoption would do.
#[derive(Debug)]
pub struct UndoPlan {
    dir: RunDir,
    run: String,
    /// The documents that would be restored.
    pub ready: Vec<ReadyUndo>,
    /// One line per document asked for that no adoption wrote (escaped).
    pub notes: Vec<String>,
}

/// Whether there is an adoption to undo.
#[derive(Debug)]
pub enum UndoCheck {
    /// None of the documents asked for was adopted.
    NothingAdopted {
        /// The run's name (escaped).
        run: String,
        /// One line per document asked for.
        notes: Vec<String>,
    },
    /// Documents ready to restore, once confirmed.
    Ready(UndoPlan),
}

/// Checks the adopted documents of the run in `dir` that `skills` names (a skill's name names
/// its `SKILL.md` and its evolved references; every adopted one when empty); writes nothing.
///
/// # Errors
/// A run that staged nothing, a name it did not stage, a file edited since the adoption wrote
/// it, a user file outside the project or a symbolic link, or a run store that no longer holds
/// the text it imported: bad input, nothing written.
pub fn check_undo(dir: &RunDir, skills: &[String]) -> anyhow::Result<UndoCheck> {
    let Some(proposal) = read_proposal(dir)? else {
        return Err(bad_option(format!(
            "run {:?} has staged nothing, so nothing of it was adopted",
            escape_controls(&dir.name())
        )));
    };
    let mut ready = Vec::new();
    let mut notes = Vec::new();
    for index in select(&proposal, skills)? {
        if let Some(r) = check(dir, &proposal, index, &mut notes)? {
            ready.push(r);
        }
    }
    let run = escape_controls(&proposal.run);
    if ready.is_empty() {
        return Ok(UndoCheck::NothingAdopted { run, notes });
    }
    Ok(UndoCheck::Ready(UndoPlan {
        dir: dir.clone(),
        run,
        ready,
        notes,
    }))
}

/// Checks one document; `None` (and a note) when no adoption wrote it.
fn check(
    dir: &RunDir,
    proposal: &Proposal,
    index: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Option<ReadyUndo>> {
    let Some(doc) = proposal.documents.get(index) else {
        return Ok(None);
    };
    let Some(adopted_as) = doc.adopted_as.clone() else {
        notes.push(escape_controls(&format!(
            "{} was not adopted from this run",
            doc.source.path.display()
        )));
        return Ok(None);
    };
    let document = &doc.source.document;
    let StagedFile {
        store,
        user_file,
        staged,
        current,
    } = staged_file(dir, doc)?;
    if current != staged {
        return Err(bad_at(
            &user_file,
            None,
            format!(
                "changed since adopting run {:?} wrote it (as {adopted_as}), so undoing the \
                 adoption would lose those edits; nothing was undone (`skill-evolve rollback` \
                 restores one file to any version)",
                escape_controls(&proposal.run)
            ),
        ));
    }
    let restored = imported_text(dir, proposal, document)?;
    if sha256_hex(&restored) != doc.source.sha256 {
        return Err(bad_at(
            &dir.store(),
            None,
            format!(
                "holds another text for {} than the run imported; nothing was undone",
                escape_controls(document)
            ),
        ));
    }
    Ok(Some(ReadyUndo {
        document: document.clone(),
        store,
        adopted_as,
        user_file,
        current,
        restored,
    }))
}

/// The text of `document` the run imported: its store's first version.
fn imported_text(dir: &RunDir, proposal: &Proposal, document: &str) -> anyhow::Result<String> {
    let unreadable = |problem: String| bad_at(&dir.store(), None, problem);
    let version: VersionId = proposal.initial_version.parse().map_err(|_| {
        unreadable(format!(
            "the run's first version {:?} is not a version",
            escape_controls(&proposal.initial_version)
        ))
    })?;
    let store = FsStore::open(dir.store())
        .map_err(|e| unreadable(format!("cannot open the run's store: {e}")))?;
    store
        .read_at(version, document)
        .map_err(|e| unreadable(format!("cannot read the text the run imported: {e}")))
}

impl UndoPlan {
    /// The run's name (escaped).
    pub fn run(&self) -> String {
        self.run.clone()
    }

    /// The unified diff of every document that would be restored, escaped.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for r in &self.ready {
            let shown = r.user_file.display().to_string();
            out.push_str(&unified_diff(
                &r.current,
                &r.restored,
                &format!("a/{shown}"),
                &format!("b/{shown}"),
            ));
        }
        escape_controls(&out)
    }

    /// Restores the documents, each as a new version of its own store, and records in the
    /// run's proposal that they are no longer adopted. `confirmed` must say that the user saw
    /// [`UndoPlan::diff`] and said yes; without it nothing is written.
    ///
    /// Holds the run's adoption lock and every target store's lock while it checks each file
    /// again (it must still hold the adopted text) and writes.
    ///
    /// # Errors
    /// No confirmation, or a file changed since it was checked: bad input, nothing written. A
    /// store or file that cannot be written (the documents restored before it stay restored
    /// and recorded).
    pub fn apply(self, confirmed: bool) -> anyhow::Result<Vec<Adopted>> {
        if !confirmed {
            return Err(bad_option(
                "not undone: the undoing was not confirmed (nothing was written)",
            ));
        }
        let UndoPlan { dir, ready, .. } = self;
        let locks = AdoptionLocks::take(&dir, ready.iter().map(|r| r.store.clone()))?;
        let mut proposal = locks.proposal(&dir, "undone")?;
        // Every file checked again under the locks before the first write.
        let mut writes = Vec::new();
        for r in ready {
            let index = proposal
                .documents
                .iter()
                .position(|d| {
                    d.source.document == r.document
                        && d.adopted_as.as_deref() == Some(r.adopted_as.as_str())
                })
                .ok_or_else(|| {
                    bad_at(
                        &dir.proposal(),
                        None,
                        format!(
                            "{} is no longer recorded as adopted (as {}); nothing was undone",
                            escape_controls(&r.document),
                            r.adopted_as
                        ),
                    )
                })?;
            if read_document(&r.user_file)? != r.current {
                return Err(bad_at(
                    &r.user_file,
                    None,
                    "changed since it was checked (an edit or another command wrote it \
                     meanwhile); nothing was undone",
                ));
            }
            writes.push((index, r));
        }
        let message = format!("undid the adoption of run {}", proposal.run);
        let mut restored = Vec::new();
        for (index, r) in writes {
            let version = write_new_version_locked(
                locks.of(&r.store)?,
                &r.user_file,
                &r.store,
                &r.current,
                &r.restored,
                &message,
            )?;
            if let Some(doc) = proposal.documents.get_mut(index) {
                doc.adopted_as = None;
            }
            write_proposal(&dir, &proposal)?;
            restored.push(Adopted {
                user_file: r.user_file,
                version: version.to_string(),
            });
        }
        Ok(restored)
    }
}
