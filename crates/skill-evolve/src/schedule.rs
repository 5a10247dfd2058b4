//! `skill-evolve schedule`: the crontab line that harvests the night's sessions and runs the
//! loop, unattended, leaving every result staged.
//!
//! The line changes to the current folder, runs `harvest --tasks FILE` (newly mined tasks,
//! every one unreviewed, wait there for a person: the run does not read them) and then, even
//! when the harvest found nothing to read, `run --config FILE --fresh`, which replays the reviewed question set the configuration
//! names and stages what the gate accepted. `--fresh` starts each scheduled run over, so a
//! proposal not adopted by the next run is replaced by that run's. Nothing is adopted:
//! `skill-evolve adopt` stays a person's step. Both commands append to
//! `.skill-evolve/schedule.log`.
//!
//! Without `--install` the entry is only printed. With `--install FILE` it is appended to that
//! file (created when missing; an entry already there is not added twice), which the user loads
//! with `crontab FILE`; the program never edits a crontab it was not given.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::out::outln;
use crate::render::terminal_safe;
use evolution_project::error::{bad_at, bad_option};

/// Largest crontab file `--install` reads and rewrites.
const MAX_CRONTAB_BYTES: u64 = 1024 * 1024;

/// How often the pipeline runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Every {
    /// Once a night, at 03:00 (the machine's time zone).
    Night,
    /// Once an hour, on the hour.
    Hour,
}

impl Every {
    /// The five time fields of the crontab line.
    fn fields(self) -> &'static str {
        match self {
            Every::Night => "0 3 * * *",
            Every::Hour => "0 * * * *",
        }
    }
}

/// Which transcripts the scheduled harvest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ScheduledSource {
    /// Claude Code transcripts.
    ClaudeCode,
    /// Codex CLI sessions.
    Codex,
}

/// Options of `schedule`.
#[derive(Debug, Args)]
pub(crate) struct ScheduleArgs {
    /// How often: `night` (03:00) or `hour`.
    #[arg(long, value_enum)]
    pub(crate) every: Every,
    /// Whose sessions to harvest.
    #[arg(long, value_enum, default_value = "claude-code")]
    pub(crate) source: ScheduledSource,
    /// Harvest from here instead of the source's default location.
    #[arg(long, value_name = "PATH")]
    pub(crate) from: Option<PathBuf>,
    /// Where the harvest writes the mined tasks, for review (relative to the current folder).
    #[arg(long, value_name = "FILE", default_value = "mined-tasks.jsonl")]
    pub(crate) tasks: PathBuf,
    /// The run configuration `run` uses (it must exist now).
    #[arg(long, value_name = "FILE", default_value = "evolve.toml")]
    pub(crate) config: PathBuf,
    /// Append the entry to this crontab file instead of only printing it.
    #[arg(long, value_name = "FILE")]
    pub(crate) install: Option<PathBuf>,
}

/// Runs `schedule`.
pub(crate) fn run(args: &ScheduleArgs) -> anyhow::Result<ExitCode> {
    if !args.config.is_file() {
        return Err(bad_at(
            &args.config,
            None,
            "no run configuration here (write one with `skill-evolve init`, or pass --config)",
        ));
    }
    let here = std::env::current_dir()
        .map_err(|e| bad_option(format!("cannot read the current folder: {e}")))?;
    let program = std::env::current_exe()
        .map_err(|e| bad_option(format!("cannot find this program's path: {e}")))?;
    let from = args
        .from
        .as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| bad_option(format!("--from: {e}")))?;
    let entry = entry(args, &here, &program, from.as_deref())?;
    match &args.install {
        None => outln!("{}", terminal_safe(&entry)),
        Some(file) => {
            if install(file, &entry)? {
                outln!(
                    "added to {}; load it with `crontab {}`",
                    terminal_safe(&file.display().to_string()),
                    terminal_safe(&file.display().to_string())
                );
            } else {
                outln!(
                    "{} has this entry already; nothing written",
                    terminal_safe(&file.display().to_string())
                );
            }
        }
    }
    eprintln!(
        "note: cron starts commands with a bare environment; name the LLM's API key in \
         skill-evolve.toml or set it on a line of the crontab"
    );
    Ok(ExitCode::SUCCESS)
}

/// The comment and the crontab line.
fn entry(
    args: &ScheduleArgs,
    here: &Path,
    program: &Path,
    from: Option<&Path>,
) -> anyhow::Result<String> {
    let source = match args.source {
        ScheduledSource::ClaudeCode => "claude-code",
        ScheduledSource::Codex => "codex",
    };
    let mut harvest = format!(
        "{} harvest --source {source} --tasks {}",
        quote("the program's path", program)?,
        quote("--tasks", &args.tasks)?
    );
    if let Some(from) = from {
        harvest.push_str(&format!(" --from {}", quote("--from", from)?));
    }
    let run = format!(
        "{} run --config {} --fresh",
        quote("the program's path", program)?,
        quote("--config", &args.config)?
    );
    let log = ">> .skill-evolve/schedule.log 2>&1";
    Ok(format!(
        "# skill-evolve: harvest, then run (results staged; adopt with `skill-evolve adopt`)\n\
         {} cd {} && mkdir -p .skill-evolve && {harvest} {log}; {run} {log}",
        args.every.fields(),
        quote("the current folder", here)?
    ))
}

/// `path` in single quotes for the shell cron runs. A `'` would end the quotes, a `%` is a
/// newline to cron, and a control character has no place in a crontab: each is refused.
fn quote(what: &str, path: &Path) -> anyhow::Result<String> {
    let text = path
        .to_str()
        .ok_or_else(|| bad_option(format!("{what} is not valid UTF-8")))?;
    if let Some(c) = text
        .chars()
        .find(|c| matches!(c, '\'' | '%') || c.is_control())
    {
        return Err(bad_option(format!(
            "{what} {} holds {c:?}, which a crontab line cannot carry safely; use another path",
            terminal_safe(text)
        )));
    }
    Ok(format!("'{text}'"))
}

/// Appends `entry` to `file` unless its line is there already; true when written.
fn install(file: &Path, entry: &str) -> anyhow::Result<bool> {
    let existing = match std::fs::symlink_metadata(file) {
        Ok(meta) if !meta.is_file() => {
            return Err(bad_at(file, None, "--install must name a regular file"));
        }
        Ok(meta) if meta.len() > MAX_CRONTAB_BYTES => {
            return Err(bad_at(
                file,
                None,
                format!("larger than {MAX_CRONTAB_BYTES} bytes; not a crontab"),
            ));
        }
        Ok(_) => std::fs::read_to_string(file)
            .map_err(|e| bad_at(file, None, format!("cannot read it: {e}")))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(bad_at(file, None, format!("cannot read it: {e}"))),
    };
    let line = entry.lines().last().unwrap_or(entry);
    if existing.lines().any(|l| l == line) {
        return Ok(false);
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(entry);
    text.push('\n');
    evolution_project::working_copy::write_atomically(file, &text)?;
    Ok(true)
}
