//! `skill-evolve status`: the runs of a project and what each staged (the library's
//! `status` gathers them).

use std::process::ExitCode;

use anyhow::Context as _;
use evolution_project::run::dir::runs_of;
use evolution_project::status::{find_project, status};

use crate::cli::StatusArgs;
use crate::out::outln;

/// One line (and its staged documents and run ids) per run.
pub(crate) fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let project = find_project(args.dir.as_deref(), &cwd)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let runs = runtime.block_on(status(&project))?;
    if runs.is_empty() {
        outln!("no runs in {}", runs_of(&project).display());
        return Ok(ExitCode::SUCCESS);
    }
    for run in runs {
        for line in run.lines() {
            outln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
