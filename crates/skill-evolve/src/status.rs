//! `skill-evolve status`: the runs of a project and what each staged, then its `evolve`
//! sessions (the library's `status` and `evolve_sessions` gather them), then each skill's
//! ledger of gate tests across runs (`evolution_project::ledger`).

use std::process::ExitCode;

use anyhow::Context as _;
use evolution_project::run::dir::runs_of;
use evolution_project::status::{evolve_sessions, find_project, status};

use crate::cli::StatusArgs;
use crate::out::outln;

/// One line (and its staged documents and run ids) per run.
pub(crate) fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let (project, runs) = match find_project(args.dir.as_deref(), &cwd) {
        Ok(project) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            let runs = runtime.block_on(status(&project))?;
            (project, runs)
        }
        // No runs, but perhaps `evolve` sessions beside the skills of this folder.
        Err(no_runs) => {
            let here = args.dir.clone().unwrap_or(cwd);
            if evolve_sessions(&here).is_empty() {
                return Err(no_runs);
            }
            (here, Vec::new())
        }
    };
    let sessions = evolve_sessions(&project);
    if runs.is_empty() {
        outln!("no runs in {}", runs_of(&project).display());
    }
    for run in runs {
        for line in run.lines() {
            outln!("{line}");
        }
    }
    for session in &sessions {
        outln!("{}", session.line(&project));
    }
    // Each skill's ledger of gate tests across runs (`[gate] ledger = true`).
    let ledgers = evolution_project::ledger::project_ledgers(&project)
        .map_err(|e| evolution_project::error::bad_option(e.to_string()))?;
    for ledger in &ledgers {
        outln!("{}", ledger.line());
    }
    Ok(ExitCode::SUCCESS)
}
