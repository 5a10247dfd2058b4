//! `skill-evolve adopt <run>`: a finished run's staged documents written to
//! the user's files, after the diff was shown and the user said yes.
//!
//! Every check comes before the first write: the documents asked for must
//! be staged, each user file must still be the text the run imported (its
//! SHA-256 is compared with the one recorded at import) and must not be a
//! symbolic link. Each file is then written through its own version store
//! (`.skill-evolve/store` beside it, as `evolve` does), so `history`, `diff`
//! and `rollback` cover the adoption.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::AdoptArgs;
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::doctor::read_document;
use crate::error::{bad_at, bad_option};
use crate::render::{colour_diff, unified_diff};
use crate::run::dir::{RunDir, runs_of};
use crate::run::stage::{Proposal, by_name, read_proposal, sha256_hex, write_proposal};
use crate::status::{find_project, list_runs};
use crate::store::write_new_version;

/// A document checked and ready to write.
struct Ready {
    index: usize,
    user_file: PathBuf,
    current: String,
    staged: String,
}

/// The run folder `run` names: a run folder's path, or a run's name.
fn find_run(args: &AdoptArgs) -> anyhow::Result<RunDir> {
    let as_path = Path::new(&args.run);
    if as_path.join("staged").is_dir() {
        return Ok(RunDir::at(as_path.to_path_buf()));
    }
    let project = find_project(args.dir.as_deref())?;
    let valid = args.run.starts_with(|c: char| c.is_ascii_alphanumeric())
        && args
            .run
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let root = runs_of(&project).join(&args.run);
    if valid && root.is_dir() {
        return Ok(RunDir::at(root));
    }
    let names: Vec<String> = list_runs(&project)?.into_iter().map(|(n, _)| n).collect();
    Err(bad_option(format!(
        "no run named {:?} in {} (runs: {})",
        args.run,
        runs_of(&project).display(),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )))
}

/// The indices of the documents to adopt: those named, else every one not
/// adopted yet.
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
                proposal.run,
                staged.join(", ")
            ))
        })?;
        if !picked.contains(&index) {
            picked.push(index);
        }
    }
    Ok(picked)
}

/// Checks one staged document against its user file; `None` when it was
/// adopted already.
fn check(dir: &RunDir, proposal: &Proposal, index: usize) -> anyhow::Result<Option<Ready>> {
    let Some(doc) = proposal.documents.get(index) else {
        return Ok(None);
    };
    if let Some(version) = &doc.adopted_as {
        println!(
            "{} was adopted already (as {version})",
            doc.source.path.display()
        );
        return Ok(None);
    }
    // The staged file's path is rebuilt from the document name, never read from the record.
    let document = &doc.source.document;
    if document.is_empty() || document.starts_with('.') || document.contains(['/', '\\']) {
        return Err(bad_at(
            &dir.proposal(),
            None,
            format!("{document:?} is not a document name"),
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
        println!("{} already has the staged text", user_file.display());
        return Ok(None);
    }
    if sha256_hex(&current) != doc.source.sha256 {
        return Err(bad_at(
            &user_file,
            None,
            format!(
                "changed since run {:?} read it, so the staged version would undo your edits; \
                 nothing was adopted (start a new run from the edited file, e.g. with --fresh)",
                proposal.run
            ),
        ));
    }
    Ok(Some(Ready {
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

/// `skill-evolve adopt`.
pub(crate) fn run(args: &AdoptArgs) -> anyhow::Result<ExitCode> {
    let dir = find_run(args)?;
    let Some(mut proposal) = read_proposal(&dir)? else {
        return Err(bad_option(format!(
            "run {:?} has staged nothing yet: it has not finished (the same `run` command \
             resumes it)",
            args.run
        )));
    };
    if proposal.documents.is_empty() {
        println!(
            "run {:?} staged nothing: no candidate was accepted, so there is nothing to adopt",
            proposal.run
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut ready = Vec::new();
    for index in select(&proposal, &args.skills)? {
        if let Some(r) = check(&dir, &proposal, index)? {
            ready.push(r);
        }
    }
    if ready.is_empty() {
        println!("nothing left to adopt from run {:?}", proposal.run);
        return Ok(ExitCode::SUCCESS);
    }
    for r in &ready {
        let shown = r.user_file.display().to_string();
        let diff = unified_diff(
            &r.current,
            &r.staged,
            &format!("a/{shown}"),
            &format!("b/{shown}"),
        );
        print!("{}", colour_diff(&escape_controls(&diff)));
    }
    let question = format!(
        "Write {} document(s) of run {:?} to your files?",
        ready.len(),
        proposal.run
    );
    let approved = if args.yes {
        true
    } else if stdin_is_terminal() {
        ask_yes_no(&question)? == Answer::Yes
    } else {
        return Err(bad_option(
            "not adopted: there is no terminal to confirm on; review the diff above and run \
             again with --yes (nothing was written)",
        ));
    };
    if !approved {
        println!("discarded: nothing was written");
        return Ok(ExitCode::SUCCESS);
    }
    let message = format!(
        "adopted from run {} ({})",
        proposal.run, proposal.final_version
    );
    for r in ready {
        let version = write_new_version(&r.user_file, None, &r.current, &r.staged, &message)?;
        if let Some(doc) = proposal.documents.get_mut(r.index) {
            doc.adopted_as = Some(version.to_string());
        }
        write_proposal(&dir, &proposal)?;
        println!(
            "adopted {} as {version} (see `skill-evolve history {}`)",
            r.user_file.display(),
            r.user_file.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `text` with every control character but newline and tab (and the
/// Unicode bidirectional controls) written as `\u{…}`, so that a staged
/// document cannot drive the terminal.
pub(crate) fn escape_controls(text: &str) -> String {
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
