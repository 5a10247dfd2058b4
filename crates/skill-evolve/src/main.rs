//! `skill-evolve`: the command-line front door of the evolution kernel.
//!
//! The operations (run, stage, adopt, harvest, reports) are the `evolution-project`
//! library's; this program adds the flags, the terminal's output and progress, and the
//! prompts, for people who have a folder of skills and some failure trajectories.
//! Key design choice: nothing is written before the user has seen the diff
//! and said yes (or passed `--yes`); every input problem is found first and
//! reported as one line with exit code 2.

#![allow(clippy::print_stdout, clippy::print_stderr)]
// A command-line program may still not panic on any input: bad input is a
// one-line error with exit code 2 (tests keep these, see clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

mod adopt;
mod capture;
mod cli;
mod confirm;
mod diagnose;
mod doctor;
mod evolve;
#[cfg(feature = "local")]
mod fetch_model;
mod gate;
mod harvest;
mod hook;
mod host_agent;
mod init;
mod mcp;
mod out;
mod render;
mod report;
mod run;
mod schedule;
mod schedule_host;
mod status;
mod store;
mod verbose;

use crate::cli::{Cli, Command};
use crate::render::terminal_safe;
use evolution_project::error::{BadInput, one_line};
use evolution_project::run::failures::RunStopped;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    if cli.verbose {
        verbose::init();
    }
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(bad) = e.downcast_ref::<BadInput>() {
                eprintln!("error: {}", terminal_safe(&bad.headline()));
                for line in bad.lines_below() {
                    eprintln!("{}", terminal_safe(line));
                }
                ExitCode::from(2)
            } else if let Some(stopped) = e.downcast_ref::<RunStopped>() {
                // The agent's (or the judge's) own words, a few escaped lines under the
                // headline, instead of one line that would cut them.
                for (i, line) in stopped.lines().iter().enumerate() {
                    let prefix = if i == 0 { "error: " } else { "" };
                    eprintln!("{prefix}{}", terminal_safe(line));
                }
                ExitCode::from(1)
            } else {
                eprintln!("error: {}", terminal_safe(&one_line(&chain_line(&e))));
                ExitCode::from(1)
            }
        }
    }
}

/// Help and version go out as clap renders them; a usage error becomes one
/// line and exit code 2.
fn clap_exit(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            eprintln!("error: {} (see --help)", usage_error_line(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, `: `-separated like `{:#}`, leaving out a
/// cause whose text the message already quotes (an error that prints its
/// source would otherwise show it twice).
fn chain_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// clap's message in one line: its first paragraph, then its tips ("a
/// similar subcommand exists: 'evolve'"); the usage block is left out.
fn usage_error_line(text: &str) -> String {
    let mut paragraphs = text.split("\n\n");
    let first = paragraphs.next().unwrap_or_default();
    let mut parts = vec![first.lines().map(str::trim).collect::<Vec<_>>().join(" ")];
    for paragraph in paragraphs {
        parts.extend(
            paragraph
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("tip:"))
                .map(str::to_owned),
        );
    }
    let line = parts.join("; ");
    line.strip_prefix("error: ").unwrap_or(&line).to_owned()
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Evolve(args) => evolve::run(&args),
        Command::Gate(args) => gate::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        #[cfg(feature = "local")]
        Command::FetchModel(args) => fetch_model::run(&args),
        Command::History(args) => store::history(&args),
        Command::Diff(args) => store::diff(&args),
        Command::Rollback(args) => store::rollback(&args),
        Command::Run(args) => run::run(&args),
        Command::Diagnose(args) => diagnose::run(&args),
        Command::Init(args) => init::run(&args),
        Command::Status(args) => status::run(&args),
        Command::Adopt(args) => adopt::run(&args),
        Command::Harvest(args) => harvest::run(&args),
        Command::Capture(args) => capture::run(&args),
        Command::Schedule(args) => schedule::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Mcp(args) => mcp::run(&args),
        Command::Hook(args) => Ok(hook::run(&args)),
        Command::HostAgent(args) => host_agent::run(&args),
    }
}
