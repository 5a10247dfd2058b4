//! Adopt: a finished run's staged documents written to the user's files, once the caller has
//! shown the diff and the user said yes.
//!
//! Every check comes before the first write: the documents asked for must be staged, each
//! user file must still be the text the run imported (its SHA-256 is compared with the one
//! recorded at import) and must not be a symbolic link. Each file is then written through its
//! own version store (`.skill-evolve/store` beside it, as `evolve` does), so `history`, `diff`
//! and `rollback` cover the adoption.

use std::path::{Path, PathBuf};

use crate::error::{bad_at, bad_option};
use crate::input::read_document;
use crate::render::unified_diff;
use crate::run::dir::{RunDir, runs_of};
use crate::run::stage::{Proposal, by_name, read_proposal, sha256_hex, write_proposal};
use crate::skill_store::write_new_version;
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
    index: usize,
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
    /// No confirmation (bad input, nothing written), or a store or file that cannot be
    /// written (the documents written before it stay adopted and recorded).
    pub fn apply(self, confirmed: bool) -> anyhow::Result<Vec<Adopted>> {
        if !confirmed {
            return Err(bad_option(
                "not adopted: the adoption was not confirmed (nothing was written)",
            ));
        }
        let AdoptPlan {
            dir,
            mut proposal,
            ready,
            ..
        } = self;
        let message = format!(
            "adopted from run {} ({})",
            proposal.run, proposal.final_version
        );
        let mut adopted = Vec::new();
        for r in ready {
            let version = write_new_version(&r.user_file, None, &r.current, &r.staged, &message)?;
            if let Some(doc) = proposal.documents.get_mut(r.index) {
                doc.adopted_as = Some(version.to_string());
            }
            write_proposal(&dir, &proposal)?;
            adopted.push(Adopted {
                user_file: r.user_file,
                version: version.to_string(),
            });
        }
        Ok(adopted)
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
        let index = names.get(name.as_str()).copied().ok_or_else(|| {
            let staged: Vec<&str> = proposal
                .documents
                .iter()
                .map(|d| d.source.name.as_str())
                .collect();
            bad_option(format!(
                "--skill {:?}: run {:?} staged no such document (it staged {})",
                escape_controls(name),
                escape_controls(&proposal.run),
                escape_controls(&staged.join(", "))
            ))
        })?;
        if !picked.contains(&index) {
            picked.push(index);
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
    // The staged file's path is rebuilt from the document name, never read from the record.
    let document = &doc.source.document;
    if document.is_empty() || document.starts_with('.') || document.contains(['/', '\\']) {
        return Err(bad_at(
            &dir.proposal(),
            None,
            format!("{:?} is not a document name", escape_controls(document)),
        ));
    }
    let staged_path = dir.staged().join("files").join(document);
    let staged = read_document(&staged_path)?;
    let user_file = shown(&dir.project().join(&doc.source.path));
    if std::fs::symlink_metadata(&user_file).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(bad_at(
            &user_file,
            None,
            "is a symbolic link; adopt writes only regular files",
        ));
    }
    let current = read_document(&user_file)?;
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
        index,
        user_file,
        current,
        staged,
    }))
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
