//! `skill-evolve mcp`: the command's operations as a Model Context Protocol server on stdio
//! (the `evolution-mcp` library), serving one project.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

/// Options of `mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The project folder the tools work in (the folder of its run configuration).
    /// Default: the current folder.
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
}

/// Runs the server on stdin and stdout until the client closes them.
pub(crate) fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current folder")?,
    };
    let program = std::env::current_exe().context("cannot find this program to run it")?;
    evolution_mcp::serve(&evolution_mcp::ServeOptions { project, program })?;
    Ok(ExitCode::SUCCESS)
}
