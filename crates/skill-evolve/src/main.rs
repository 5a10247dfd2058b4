//! `skill-evolve`: the command-line front door of the evolution kernel.
//!
//! It wires the kernel crates (gate, patch, evolve) to the adapters (the
//! versioned file store, the OpenAI-compatible provider and its cassettes)
//! for people who have a folder of skills and some failure trajectories.
//! Key design choice: nothing is written before the user has seen the diff
//! and said yes (or passed `--yes`); every input problem is found first and
//! reported as one line with exit code 2.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

mod adopt;
mod cli;
mod config;
mod confirm;
mod diagnose;
mod doctor;
mod error;
mod evolve;
mod gate;
mod init;
mod input;
mod layout;
#[cfg(feature = "local")]
mod local;
mod out;
mod profile;
mod questions;
mod render;
mod report_html;
mod run;
mod status;
mod store;
mod working_copy;

use crate::cli::{Cli, Command};
use crate::error::{BadInput, one_line};
use crate::render::terminal_safe;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(bad) = e.downcast_ref::<BadInput>() {
                eprintln!("error: {}", terminal_safe(&bad.to_string()));
                ExitCode::from(2)
            } else {
                eprintln!("error: {}", terminal_safe(&one_line(&format!("{e:#}"))));
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
            // The message is the first paragraph; usage and tips follow a blank line.
            let text = e.to_string();
            let message = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            eprintln!("error: {message} (see --help)");
            ExitCode::from(2)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Evolve(args) => evolve::run(&args),
        Command::Gate(args) => gate::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::History(args) => store::history(&args),
        Command::Diff(args) => store::diff(&args),
        Command::Rollback(args) => store::rollback(&args),
        Command::Run(args) => run::run(&args),
        Command::Diagnose(args) => diagnose::run(&args),
        Command::Init(args) => init::run(&args),
        Command::Status(args) => status::run(&args),
        Command::Adopt(args) => adopt::run(&args),
        Command::Report(args) => report_html::run(&args),
    }
}
