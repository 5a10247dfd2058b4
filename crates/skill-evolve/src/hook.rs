//! `skill-evolve hook session-end`: what an agent host's session-end hook runs (the Claude Code
//! plugin's `SessionEnd`). It reads the hook's JSON on stdin and records the finished session
//! for the next `harvest --recorded` (the library's `session_log`); a session the host-agent
//! adapter started for a rollout (its process carries `SKILL_EVOLVE_ROLLOUT`) is not
//! recorded, being a replay rather than the user's. It is quick, reads nothing
//! but its input, sends nothing anywhere, and always exits 0 so that it can never hold up or
//! fail the host's exit; a problem is one line on stderr.

use std::io::{IsTerminal as _, Read as _};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use evolution_project::session_log::{MAX_HOOK_INPUT_BYTES, Recorded, record_session_end};

use crate::render::terminal_safe;

/// The host events this command handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HookEvent {
    /// A session ended: record it for the next harvest.
    SessionEnd,
}

/// Options of `hook`.
#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    /// The event the host reports.
    #[arg(value_enum)]
    pub(crate) event: HookEvent,
}

/// Runs the hook; exit code 0 whatever happens.
pub(crate) fn run(args: &HookArgs) -> ExitCode {
    match args.event {
        HookEvent::SessionEnd => {
            if let Err(problem) = session_end() {
                eprintln!("skill-evolve hook session-end: {}", terminal_safe(&problem));
            }
        }
    }
    ExitCode::SUCCESS
}

/// Records the session the hook's input names, unless it is a rollout's.
fn session_end() -> Result<(), String> {
    if evolution_project::rollout::in_rollout() {
        return Ok(());
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(
            "expects the host's JSON on stdin (it is run by a session-end hook)".to_owned(),
        );
    }
    let mut input = String::new();
    stdin
        .lock()
        .take(
            u64::try_from(MAX_HOOK_INPUT_BYTES)
                .unwrap_or(u64::MAX)
                .saturating_add(1),
        )
        .read_to_string(&mut input)
        .map_err(|e| format!("cannot read the hook's input: {e}"))?;
    match record_session_end(&input).map_err(|e| format!("{e:#}"))? {
        Recorded::Written(_) | Recorded::NoProject => Ok(()),
        Recorded::Full(file) => Err(format!(
            "{} is full; the session was not recorded (harvest without --recorded reads it)",
            file.display()
        )),
    }
}
