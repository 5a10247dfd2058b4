//! `skill-evolve harvest`: real agent sessions into trajectories `evolve --trajectories` reads
//! (the library's `harvest` explains what is read, redacted, judged and written).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use evolution_project::harvest::{HarvestNote, HarvestOptions, HarvestSource, harvest};

use crate::out::outln;

/// Where sessions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SourceArg {
    /// Claude Code transcripts (default: `~/.claude/projects`).
    ClaudeCode,
    /// Codex CLI sessions (default: `$CODEX_HOME/sessions`, else `~/.codex/sessions`).
    Codex,
    /// Gemini CLI chats (default: `~/.gemini/tmp`).
    Gemini,
    /// OpenCode's SQLite store (default: `~/.local/share/opencode/opencode.db`).
    Opencode,
    /// Cursor's chats, from its SQLite stores (default: `~/.config/Cursor/User`; macOS:
    /// `~/Library/Application Support/Cursor/User`).
    Cursor,
    /// GitHub Copilot: VS Code's chat sessions (default: `~/.config/Code/User`; macOS:
    /// `~/Library/Application Support/Code/User`) and the `copilot` CLI's
    /// (`~/.copilot/session-state`, and `~/.copilot/history-session-state` of its earlier
    /// versions).
    Copilot,
    /// A SESSION-STATE.md, judged by its outcome fields (default: `./SESSION-STATE.md`).
    SessionState,
    /// A folder of this project's trajectory `.json` files (`--from` required).
    Dir,
}

impl From<SourceArg> for HarvestSource {
    fn from(source: SourceArg) -> Self {
        match source {
            SourceArg::ClaudeCode => HarvestSource::ClaudeCode,
            SourceArg::Codex => HarvestSource::Codex,
            SourceArg::Gemini => HarvestSource::Gemini,
            SourceArg::Opencode => HarvestSource::OpenCode,
            SourceArg::Cursor => HarvestSource::Cursor,
            SourceArg::Copilot => HarvestSource::Copilot,
            SourceArg::SessionState => HarvestSource::SessionState,
            SourceArg::Dir => HarvestSource::Dir,
        }
    }
}

/// Options of `harvest`.
#[derive(Debug, Args)]
pub(crate) struct HarvestArgs {
    /// Which agent's sessions to read.
    #[arg(long, value_enum)]
    pub(crate) source: SourceArg,
    /// Read from here instead of the source's default location (a folder, or one file).
    #[arg(long, value_name = "PATH")]
    pub(crate) from: Option<PathBuf>,
    /// Only sessions that ran in this project folder (or a folder under it). Default: the
    /// current project (the folder above with `.skill-evolve/` or `evolve.toml`, else the
    /// current folder).
    #[arg(long, value_name = "PATH")]
    pub(crate) project: Option<PathBuf>,
    /// Read the sessions of every project, not only the current one's.
    #[arg(long, conflicts_with = "project")]
    pub(crate) all_projects: bool,
    /// Only sessions active on or after this day (`YYYY-MM-DD`, UTC).
    #[arg(long, value_name = "DATE")]
    pub(crate) since: Option<String>,
    /// Only sessions that loaded this skill (`name`, or `plugin:name`); with a `dir` source, only
    /// the trajectories that name it (in `harvest.skills`, `skill_id` or `task_type`).
    #[arg(long, value_name = "NAME")]
    pub(crate) skill: Option<String>,
    /// Write one trajectory JSON per session here (created if missing; a session harvested
    /// again replaces its file). Without it, only the counts are printed.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Also write the recurring requests of the sessions as a question set to review
    /// (JSON lines: `question_id`, `task_type`, `question`, `sessions`, a suggested `check`,
    /// `"reviewed": false`). Into an existing file, the lines there are kept as they are,
    /// tasks deleted from it stay out (remembered in `FILE.dropped.json`) and new tasks are
    /// appended.
    #[arg(long, value_name = "FILE")]
    pub(crate) tasks: Option<PathBuf>,
    /// With `--tasks`: fewest sessions whose first requests match for a task to be written
    /// (1: also requests asked once). The summary says, for each skill the tasks touch, how
    /// many gate questions `run`'s default split makes of them and how many a decision needs.
    #[arg(long, value_name = "N", default_value_t = 2, requires = "tasks")]
    pub(crate) min_sessions: usize,
    /// Keep secrets as written instead of replacing them with `[REDACTED:<kind>]`.
    #[arg(long)]
    pub(crate) no_redact: bool,
    /// Configuration file with a `[harvest]` table (which failure signals count, thresholds).
    /// Default: `./skill-evolve.toml` when it exists.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Read only the sessions the agent host's session-end hook recorded for this project
    /// (`.skill-evolve/sessions.jsonl`; the Claude Code plugin records them). Claude Code and
    /// Codex sources only.
    #[arg(long)]
    pub(crate) recorded: bool,
    /// Ask the configuration's `[llm]` provider whether the user's follow-up messages correct
    /// the agent (as `[harvest] followup_judge = true` does): a `correction` fails the session.
    /// One call per session not judged before; the verdicts are cached in the project's
    /// `.skill-evolve/followup-judge.jsonl`. Agent transcripts only.
    #[arg(long)]
    pub(crate) judge_followups: bool,
    /// With `--tasks`: ask the configuration's `[llm]` provider for up to N variants (1 to 20)
    /// of each reviewed task of the file not varied before, appended unreviewed and marked
    /// `variant_of` their task. One call per task varied.
    #[arg(long, value_name = "N", requires = "tasks")]
    pub(crate) variants: Option<usize>,
}

impl HarvestArgs {
    /// The library's options of these flags.
    fn options(&self) -> anyhow::Result<HarvestOptions> {
        Ok(HarvestOptions {
            source: self.source.into(),
            from: self.from.clone(),
            project: self.project_scope()?,
            since: self.since.clone(),
            skill: self.skill.clone(),
            out: self.out.clone(),
            tasks: self.tasks.clone(),
            min_sessions: self.min_sessions,
            no_redact: self.no_redact,
            config: self.config.clone(),
            recorded: self.recorded,
            judge_followups: self.judge_followups,
            variants: self.variants,
        })
    }

    /// The project whose sessions are read: `--project`; nothing with `--all-projects`, a
    /// source without projects or `--recorded` (whose sessions are the current project's
    /// already); else the current project.
    fn project_scope(&self) -> anyhow::Result<Option<PathBuf>> {
        if self.project.is_some() || self.all_projects {
            return Ok(self.project.clone());
        }
        if matches!(self.source, SourceArg::SessionState | SourceArg::Dir) {
            return Ok(None);
        }
        let here = std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("cannot read the current folder: {e}"))?;
        // The recorded sessions are the project's already (the library finds the project).
        if self.recorded {
            return Ok(None);
        }
        Ok(Some(
            evolution_project::session_log::project_of(&here).unwrap_or(here),
        ))
    }
}

/// Runs `harvest`: a line per session on stdout, skipped files on stderr, then the counts.
pub(crate) fn run(args: &HarvestArgs) -> anyhow::Result<ExitCode> {
    let summary = harvest(&args.options()?, &mut |note| match note {
        HarvestNote::Warning(line) | HarvestNote::Skipped(line) => eprintln!("{line}"),
        HarvestNote::Session {
            id,
            passed,
            reasons,
        } => {
            let verdict = if passed { "passed" } else { "failed" };
            outln!("{verdict}  {id}  {reasons}");
        }
    })?;
    for line in summary.lines() {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}
