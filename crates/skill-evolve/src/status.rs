//! `skill-evolve status`: the runs of a project and what each staged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use evolution_runlog_sqlite::SqliteRunLog;

use crate::cli::StatusArgs;
use crate::error::{bad_at, bad_option};
use crate::out::outln;
use crate::render::terminal_safe;
use crate::run::dir::{RunDir, runs_of};
use crate::run::stage::read_proposal;

/// The project folder: `explicit`, else the current folder or the nearest
/// parent that has a runs folder.
pub(crate) fn find_project(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = explicit {
        if !runs_of(dir).is_dir() {
            return Err(bad_at(
                dir,
                None,
                "has no runs (no .skill-evolve/runs folder); `skill-evolve run --config FILE` \
                 makes one",
            ));
        }
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir()
        .map_err(|e| anyhow::anyhow!("cannot read the current folder: {e}"))?;
    cwd.ancestors()
        .find(|d| runs_of(d).is_dir())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            bad_option(
                "no runs here: neither this folder nor a parent has a .skill-evolve/runs folder; \
                 `skill-evolve run --config FILE` makes one",
            )
        })
}

/// The run folders of a project, sorted by name.
pub(crate) fn list_runs(project: &Path) -> anyhow::Result<Vec<(String, RunDir)>> {
    let runs = runs_of(project);
    let entries = std::fs::read_dir(&runs)
        .map_err(|e| bad_at(&runs, None, format!("cannot read the runs folder: {e}")))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| bad_at(&runs, None, format!("cannot read the runs folder: {e}")))?
            .path();
        if !path.is_dir() {
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        out.push((name, RunDir::at(path)));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The run ids a run's log holds (its training and gate rollouts), oldest
/// first; empty before the run log exists.
fn run_ids(runtime: &tokio::runtime::Runtime, dir: &RunDir) -> anyhow::Result<Vec<String>> {
    let path = dir.runlog();
    if !path.is_file() {
        return Ok(Vec::new());
    }
    runtime.block_on(async {
        let log = SqliteRunLog::open_read_only(&path)
            .map_err(|e| bad_at(&path, None, format!("not a run log: {e}")))?;
        let runs = log
            .runs()
            .await
            .map_err(|e| bad_at(&path, None, format!("not a run log: {e}")))?;
        Ok(runs.into_iter().map(|r| r.run_id).collect())
    })
}

/// One line (and its staged documents and run ids) per run.
pub(crate) fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let project = find_project(args.dir.as_deref())?;
    let runs = list_runs(&project)?;
    if runs.is_empty() {
        outln!("no runs in {}", runs_of(&project).display());
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    for (name, dir) in runs {
        let proposal = read_proposal(&dir)?;
        let state = match &proposal {
            Some(p) if p.documents.is_empty() => {
                format!("finished ({}): nothing staged", p.final_version)
            }
            Some(p) => {
                let waiting = p
                    .documents
                    .iter()
                    .filter(|d| d.adopted_as.is_none())
                    .count();
                format!(
                    "finished ({}): {} document(s) staged, {waiting} not adopted yet",
                    p.final_version,
                    p.documents.len()
                )
            }
            None if dir.report_md().is_file() => "finished: nothing staged".to_owned(),
            None if dir.checkpoint().is_file() => {
                "not finished: the same `run` command resumes it".to_owned()
            }
            None => "not finished".to_owned(),
        };
        outln!("{name}: {state}");
        for d in proposal.iter().flat_map(|p| &p.documents) {
            let adopted = d
                .adopted_as
                .as_ref()
                .map_or_else(|| "staged".to_owned(), |v| format!("adopted as {v}"));
            outln!(
                "  {} → {} ({adopted}; diff {})",
                d.source.name,
                d.source.path.display(),
                dir.root().join(&d.diff_file).display()
            );
        }
        if proposal
            .iter()
            .flat_map(|p| &p.documents)
            .any(|d| d.adopted_as.is_none())
        {
            outln!("  adopt with: skill-evolve adopt {name}");
        }
        let ids = run_ids(&runtime, &dir)?;
        if !ids.is_empty() {
            outln!(
                "  run ids in {} (for `skill-evolve diagnose --runlog FILE --run-id ID`): {}",
                dir.runlog().display(),
                terminal_safe(&ids.join(", "))
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
