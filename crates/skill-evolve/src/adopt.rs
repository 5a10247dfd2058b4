//! `skill-evolve adopt <run>`: the library's adopt with the diff on the terminal and the
//! user's yes (a prompt, or `--yes`) before anything is written.

use std::process::ExitCode;

use anyhow::Context as _;
use evolution_project::adopt::undo::{UndoCheck, check_undo};
use evolution_project::adopt::{AdoptCheck, check_adopt, find_run};
use evolution_project::error::bad_option;

use crate::cli::AdoptArgs;
use crate::confirm::{Answer, ask_yes_no, stdin_is_terminal};
use crate::out::{out, outln};
use crate::render::colour_diff;

/// `skill-evolve adopt`.
pub(crate) fn run(args: &AdoptArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let dir = find_run(&args.run, args.dir.as_deref(), &cwd)?;
    if args.undo {
        return undo(&dir, args);
    }
    let plan = match check_adopt(&dir, &args.skills)? {
        AdoptCheck::NothingStaged { run } => {
            outln!(
                "run {run:?} staged nothing: no candidate was accepted, so there is nothing to \
                 adopt"
            );
            return Ok(ExitCode::SUCCESS);
        }
        AdoptCheck::NothingLeft { run, notes } => {
            for note in notes {
                outln!("{note}");
            }
            outln!("nothing left to adopt from run {run:?}");
            return Ok(ExitCode::SUCCESS);
        }
        AdoptCheck::Ready(plan) => plan,
    };
    for note in &plan.notes {
        outln!("{note}");
    }
    out!("{}", colour_diff(&plan.diff()));
    let question = format!(
        "Write {} document(s) of run {:?} to your files?",
        plan.ready.len(),
        plan.run()
    );
    if !confirmed(args, &question, "adopted")? {
        outln!("discarded: nothing was written");
        return Ok(ExitCode::SUCCESS);
    }
    let run = plan.run();
    let applied = plan.apply_with_notes(true)?;
    for note in &applied.notes {
        outln!("{note}");
    }
    if applied.adopted.is_empty() {
        outln!("nothing left to adopt from run {run:?}");
    }
    for adopted in applied.adopted {
        let file = adopted.user_file.display();
        outln!(
            "adopted {file} as {} (see `skill-evolve history {file}`)",
            adopted.version
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The user's yes to `question`: `--yes`, or an answer on the terminal; without a terminal
/// nothing is `done` (a bad option naming `--yes`).
fn confirmed(args: &AdoptArgs, question: &str, done: &str) -> anyhow::Result<bool> {
    if args.yes {
        Ok(true)
    } else if stdin_is_terminal() {
        Ok(ask_yes_no(question)? == Answer::Yes)
    } else {
        Err(bad_option(format!(
            "not {done}: there is no terminal to confirm on; review the diff above and run \
             again with --yes (nothing was written)"
        )))
    }
}

/// `skill-evolve adopt <run> --undo`.
fn undo(dir: &evolution_project::run::dir::RunDir, args: &AdoptArgs) -> anyhow::Result<ExitCode> {
    let plan = match check_undo(dir, &args.skills)? {
        UndoCheck::NothingAdopted { run, notes } => {
            for note in notes {
                outln!("{note}");
            }
            outln!("nothing of run {run:?} is adopted, so there is nothing to undo");
            return Ok(ExitCode::SUCCESS);
        }
        UndoCheck::Ready(plan) => plan,
    };
    for note in &plan.notes {
        outln!("{note}");
    }
    out!("{}", colour_diff(&plan.diff()));
    let question = format!(
        "Give {} file(s) back the text run {:?} started from?",
        plan.ready.len(),
        plan.run()
    );
    if !confirmed(args, &question, "undone")? {
        outln!("discarded: nothing was written");
        return Ok(ExitCode::SUCCESS);
    }
    for restored in plan.apply(true)? {
        let file = restored.user_file.display();
        outln!(
            "restored {file} as {} (see `skill-evolve history {file}`)",
            restored.version
        );
    }
    Ok(ExitCode::SUCCESS)
}
