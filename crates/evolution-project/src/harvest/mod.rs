//! Harvest: real agent sessions into trajectories that `evolve --trajectories` reads.
//!
//! Sources: Claude Code transcripts, Codex rollout files, Gemini CLI chats, OpenCode's and
//! Cursor's SQLite stores (read-only), GitHub Copilot's VS Code chat sessions and CLI event
//! logs, a SESSION-STATE.md, or a folder of this project's own trajectory files. Each session
//! is read line by line within a size limit, its secrets redacted (unless `--no-redact`, said on every run), judged by the `[harvest]`
//! rules with the reasons kept (with `--judge-followups` or `followup_judge = true`, the
//! `[llm]` provider's verdict on the user's follow-ups too, cached: [`followup_judge`]),
//! filtered (`--project`, `--since`, `--skill`) and, with `--out`, written as one JSON file per
//! session. A malformed line skips its session with a
//! note naming the file and the line; record types the reader does not know are
//! skipped and counted. Bad options and a bad configuration are a bad-input error before
//! anything is written.
//!
//! With `--tasks FILE`, the sessions' recurring first requests become a question set for
//! `run` (`evolution_harvest::tasks` explains the grouping rule). Harvesting again into the
//! same file keeps every line a person left there as it is, never brings back a task they
//! deleted (remembered in `FILE.dropped.json` beside it) and appends the new tasks unreviewed
//! (`evolution_harvest::task_file`).

mod config;
mod copilot_files;
mod cursor_store;
pub(crate) mod dir;
mod files;
mod filters;
pub mod followup_judge;
#[cfg(test)]
mod hostile_tests;
mod locations;
mod opencode_store;
mod output;
pub(crate) mod session_state;
mod sink;
mod supply;
pub mod variants;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evolution_harvest::claude_code::ClaudeCodeReader;
use evolution_harvest::codex::CodexReader;
use evolution_harvest::gemini::read_gemini_session;
use evolution_harvest::redact::Redactor;
use evolution_harvest::session::{Session, SourceKind, TextPolicy};
use evolution_harvest::task_file::MergedTasks;
use evolution_harvest::tasks::{MiningReport, TaskMiner};
use serde_json::{Map, Value};

pub use self::dir::read_bounded;
use self::files::{FileProblem, SessionFiles, find_gemini_sessions, find_sessions, for_each_line};
use self::filters::{Filters, check_date};
use self::followup_judge::{FollowupCounts, FollowupJudge};
use self::locations::{recorded_session_files, source_locations};
use self::output::{Harvested, Writer, check_out_dir, read_task_file, write_tasks};
use self::sink::Sink;
use crate::error::{bad_at, bad_option};
use crate::render::terminal_safe;

/// Where sessions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HarvestSource {
    /// Claude Code transcripts (default: `~/.claude/projects`).
    ClaudeCode,
    /// Codex CLI sessions (default: `$CODEX_HOME/sessions`, else `~/.codex/sessions`).
    Codex,
    /// Gemini CLI chats (default: `~/.gemini/tmp`, one folder per project).
    Gemini,
    /// OpenCode sessions, from its SQLite store (default:
    /// `$XDG_DATA_HOME/opencode/opencode.db`, else `~/.local/share/opencode/opencode.db`).
    OpenCode,
    /// Cursor's chats, from its SQLite stores (default: Cursor's `User` folder,
    /// `$XDG_CONFIG_HOME/Cursor/User` or `~/.config/Cursor/User`, on macOS
    /// `~/Library/Application Support/Cursor/User`).
    Cursor,
    /// GitHub Copilot's sessions: VS Code's chat sessions (default: `workspaceStorage` and
    /// `globalStorage/emptyWindowChatSessions` of VS Code's `User` folder) and the `copilot`
    /// CLI's (default: `session-state` and, of its earlier versions, `history-session-state` in
    /// `$COPILOT_HOME`, else in `~/.copilot`).
    Copilot,
    /// A SESSION-STATE.md, judged by its outcome fields (default: `./SESSION-STATE.md`).
    SessionState,
    /// A folder of this project's trajectory `.json` files (`--from` required).
    Dir,
}

impl HarvestSource {
    /// The source's name on the command line (`claude-code`, `codex`, …).
    pub fn name(self) -> &'static str {
        match self {
            HarvestSource::ClaudeCode => "claude-code",
            HarvestSource::Codex => "codex",
            HarvestSource::Gemini => "gemini",
            HarvestSource::OpenCode => "opencode",
            HarvestSource::Cursor => "cursor",
            HarvestSource::Copilot => "copilot",
            HarvestSource::SessionState => "session-state",
            HarvestSource::Dir => "dir",
        }
    }
}

/// What to harvest and where to write it (the `harvest` command's flags).
#[derive(Debug, Clone)]
pub struct HarvestOptions {
    /// Which agent's sessions to read.
    pub source: HarvestSource,
    /// Read from here instead of the source's default location (a folder, or one file).
    pub from: Option<PathBuf>,
    /// Only sessions that ran in this project folder (or a folder under it).
    pub project: Option<PathBuf>,
    /// Only sessions active on or after this day (`YYYY-MM-DD`, UTC).
    pub since: Option<String>,
    /// Only sessions that loaded this skill (`name`, or `plugin:name`); with a `dir` source, only
    /// the trajectories that name it (in `harvest.skills`, `skill_id` or `task_type`).
    pub skill: Option<String>,
    /// Write one trajectory JSON per session here (created if missing; a session harvested
    /// again replaces its file). Without it, only the counts are printed.
    pub out: Option<PathBuf>,
    /// Also write the recurring requests of the sessions as a question set to review
    /// (JSON lines: `question_id`, `task_type`, `question`, `sessions`, a suggested `check`,
    /// `"reviewed": false`). Claude Code and Codex sources only.
    pub tasks: Option<PathBuf>,
    /// With `tasks`: fewest sessions whose first requests match for a task to be written
    /// (the command's default is 2).
    pub min_sessions: usize,
    /// Keep secrets as written instead of replacing them with `[REDACTED:<kind>]`.
    pub no_redact: bool,
    /// Configuration file with a `[harvest]` table (which failure signals count, thresholds).
    /// Default: `./skill-evolve.toml` when it exists.
    pub config: Option<PathBuf>,
    /// Read only the sessions a host's session-end hook recorded for the project (`project`,
    /// else the one the current folder lies in): see [`crate::session_log`]. Claude Code and
    /// Codex sources only.
    pub recorded: bool,
    /// Ask the configuration's `[llm]` provider whether the user's follow-up messages correct
    /// the agent (as `[harvest] followup_judge = true` does); agent transcripts only.
    pub judge_followups: bool,
    /// With `tasks`: ask the configuration's `[llm]` provider for up to this many variants
    /// of each reviewed task of the file not varied before ([`variants`]).
    pub variants: Option<usize>,
}

/// What a harvest counted.
#[derive(Debug, Default, Clone)]
pub struct HarvestCounts {
    /// Sessions read and kept.
    pub sessions: usize,
    /// Their turns.
    pub turns: usize,
    /// Their tool calls.
    pub tool_calls: usize,
    /// Tool calls that failed.
    pub tool_errors: usize,
    /// Turns the user interrupted.
    pub interruptions: usize,
    /// Sessions judged failed.
    pub failed: usize,
    /// Sessions judged passed.
    pub passed: usize,
    /// Sessions the filters left out.
    pub filtered_out: usize,
    /// Records of a type the reader does not know, skipped.
    pub skipped_records: usize,
    /// Sessions skipped because a file or a line could not be read.
    pub skipped_sessions: usize,
    /// Trajectory files written.
    pub written: usize,
}

/// Something a harvest says while it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarvestNote {
    /// A warning about the options (escaped).
    Warning(String),
    /// A file or a session left out, and why (escaped).
    Skipped(String),
    /// A session judged: its trajectory id, its verdict and the reasons (escaped).
    Session {
        /// The trajectory id.
        id: String,
        /// Whether the rules judged it passed.
        passed: bool,
        /// The reasons of the verdict.
        reasons: String,
    },
}

/// What a harvest did.
#[derive(Debug, Clone)]
pub struct HarvestSummary {
    /// Where the sessions came from.
    pub source: HarvestSource,
    /// The folder or file read.
    pub from: PathBuf,
    /// Further folders read (GitHub Copilot's default: VS Code's and the CLI's, when both
    /// exist).
    pub also_from: Vec<PathBuf>,
    /// What it counted.
    pub counts: HarvestCounts,
    /// Secrets redacted per kind; `None` when redaction was off.
    pub redactions: Option<BTreeMap<String, usize>>,
    /// The folder the trajectories were written to.
    pub out: Option<PathBuf>,
    /// The question set of recurring tasks written, and how many tasks were mined.
    pub tasks: Option<(PathBuf, usize)>,
    /// With `tasks`: what changed in that file (lines kept, tasks added, deleted tasks left
    /// out).
    pub task_file: Option<MergedTasks>,
    /// The project folder whose sessions were read; `None` for every project (or a source
    /// without projects).
    pub project: Option<PathBuf>,
    /// With `tasks`: which sessions gave a task, and why the others did not.
    pub mining: Option<MiningReport>,
    /// Fewest sessions a mined task was seen in.
    pub min_sessions: usize,
    /// What the follow-up judge did, when it ran.
    pub followup: Option<FollowupCounts>,
    /// With `tasks`: for each skill the mined tasks touch, its tasks in the file, the gate
    /// questions `run`'s default split makes of them and those a decision needs.
    pub gate_supply: Vec<crate::run::config::GateSupply>,
    /// What the variants step did, when it ran.
    pub variants: Option<variants::VariantCounts>,
}

impl HarvestSummary {
    /// The summary as the command prints it, one line each (escaped).
    pub fn lines(&self) -> Vec<String> {
        let c = &self.counts;
        let places: Vec<String> = std::iter::once(&self.from)
            .chain(&self.also_from)
            .map(|p| terminal_safe(&p.display().to_string()).into_owned())
            .collect();
        let mut lines = vec![format!(
            "source: {} ({})",
            self.source.name(),
            places.join(", ")
        )];
        if !matches!(
            self.source,
            HarvestSource::SessionState | HarvestSource::Dir
        ) {
            lines.push(match &self.project {
                Some(project) => format!(
                    "project: {} (and folders under it; --all-projects reads every project)",
                    terminal_safe(&project.display().to_string())
                ),
                None => "project: every project".to_owned(),
            });
        }
        lines.push(format!("sessions: {}", c.sessions));
        if matches!(
            self.source,
            HarvestSource::ClaudeCode
                | HarvestSource::Codex
                | HarvestSource::Gemini
                | HarvestSource::OpenCode
                | HarvestSource::Cursor
                | HarvestSource::Copilot
        ) {
            lines.push(format!("turns: {}", c.turns));
            lines.push(format!("tool calls: {}", c.tool_calls));
            lines.push(format!("tool errors: {}", c.tool_errors));
            lines.push(format!("interruptions: {}", c.interruptions));
        }
        lines.push(format!("failed: {}", c.failed));
        lines.push(format!("passed: {}", c.passed));
        lines.push(format!("filtered out: {}", c.filtered_out));
        lines.push(format!("skipped records: {}", c.skipped_records));
        lines.push(format!("skipped sessions: {}", c.skipped_sessions));
        match &self.redactions {
            None => lines.push("redaction: off (--no-redact)".to_owned()),
            Some(kinds) if kinds.is_empty() => lines.push("redacted secrets: 0".to_owned()),
            Some(kinds) => {
                let total: usize = kinds.values().sum();
                let each: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
                lines.push(format!("redacted secrets: {total} ({})", each.join(", ")));
            }
        }
        if let Some(out) = &self.out {
            lines.push(format!(
                "written: {} to {}",
                match c.written {
                    1 => "1 trajectory".to_owned(),
                    n => format!("{n} trajectories"),
                },
                terminal_safe(&out.display().to_string())
            ));
        }
        if let Some((path, n)) = &self.tasks {
            let path = terminal_safe(&path.display().to_string()).into_owned();
            lines.push(format!(
                "tasks: {n} recurring (seen in at least {}) mined into {path}",
                sessions(self.min_sessions.max(1)),
            ));
            if let Some(merged) = &self.task_file {
                lines.push(format!(
                    "tasks file: {}; review the new lines",
                    merged.describe()
                ));
            }
        }
        for why in self.mining.iter().flat_map(MiningReport::unmined) {
            lines.push(format!("sessions without a task: {why}"));
        }
        if let Some(variants) = &self.variants {
            lines.push(variants.line());
        }
        lines.extend(supply::supply_lines(&self.gate_supply, self.min_sessions));
        if let Some(followup) = &self.followup {
            lines.push(followup.line());
        }
        lines
    }
}

/// The skills a trajectory says it used: the `skills` of its `harvest` note (a harvested
/// session), its `skill_id` (a captured rollout) and, when given, its `task_type`, each once,
/// in that order; empty when it names none.
pub fn stated_skills(task_type: Option<&str>, fields: &Map<String, Value>) -> Vec<String> {
    let mut skills: Vec<String> = Vec::new();
    let harvested = fields
        .get("harvest")
        .and_then(|h| h.get("skills"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let captured = fields.get("skill_id").and_then(Value::as_str);
    for skill in harvested.chain(captured).chain(task_type) {
        let skill = skill.trim();
        if !skill.is_empty() && !skills.iter().any(|s| s == skill) {
            skills.push(skill.to_owned());
        }
    }
    skills
}

/// Whether `skills` (as [`stated_skills`] gives them) hold `name`, as itself or as the
/// `name` of a plugin's `plugin:name`.
pub fn names_skill(skills: &[String], name: &str) -> bool {
    skills
        .iter()
        .any(|s| s == name || s.rsplit(':').next() == Some(name))
}

/// `n session` or `n sessions`.
fn sessions(n: usize) -> String {
    if n == 1 {
        "1 session".to_owned()
    } else {
        format!("{n} sessions")
    }
}

/// Harvests the sessions `args` names: reads, redacts, judges, filters and (with `out`)
/// writes them, telling `notes` what it skips and how it judged each session.
///
/// # Errors
/// A bad option or configuration (bad input, before anything is written), or a file that
/// cannot be written.
pub fn harvest(
    args: &HarvestOptions,
    notes: &mut dyn FnMut(HarvestNote),
) -> anyhow::Result<HarvestSummary> {
    let config = config::read_config(args.config.as_deref())?;
    let rules = config.rules.clone();
    let since = args.since.as_deref().map(check_date).transpose()?;
    let mut places = source_locations(args)?;
    if places.len() > 1 {
        // Several default places: those that exist are read; none is an error below.
        let existing: Vec<PathBuf> = places.iter().filter(|p| p.exists()).cloned().collect();
        if !existing.is_empty() {
            places = existing;
        }
    }
    let from = places.first().cloned().unwrap_or_default();
    let also_from: Vec<PathBuf> = places.get(1..).unwrap_or_default().to_vec();
    if args.source == HarvestSource::SessionState
        && (args.project.is_some() || args.since.is_some() || args.skill.is_some())
    {
        return Err(bad_option(format!(
            "--project, --since and --skill filter agent transcripts; a {} source has no \
             project, date or skill to filter on",
            args.source.name()
        )));
    }
    if args.source == HarvestSource::Dir && (args.project.is_some() || args.since.is_some()) {
        return Err(bad_option(
            "--project and --since filter agent transcripts; a dir source has no project or \
             date to filter on (--skill keeps the trajectories that name the skill)",
        ));
    }
    if args.recorded
        && matches!(
            args.source,
            HarvestSource::SessionState
                | HarvestSource::Dir
                | HarvestSource::Gemini
                | HarvestSource::OpenCode
                | HarvestSource::Cursor
                | HarvestSource::Copilot
        )
    {
        return Err(bad_option(format!(
            "--recorded reads the sessions a host's hook recorded; a {} source has none",
            args.source.name()
        )));
    }
    if args.judge_followups
        && matches!(
            args.source,
            HarvestSource::SessionState | HarvestSource::Dir
        )
    {
        return Err(bad_option(format!(
            "--judge-followups reads the user's follow-up messages of agent transcripts; a {} \
             source has none",
            args.source.name()
        )));
    }
    if args.tasks.is_some()
        && matches!(
            args.source,
            HarvestSource::SessionState | HarvestSource::Dir
        )
    {
        return Err(bad_option(format!(
            "--tasks groups agent transcripts by their first request; a {} source has none",
            args.source.name()
        )));
    }
    if let Some(tasks) = &args.tasks
        && tasks.is_dir()
    {
        return Err(bad_at(
            tasks,
            None,
            "--tasks must name a file; this is a folder",
        ));
    }
    if args.variants.is_some() && args.tasks.is_none() {
        return Err(bad_option(
            "--variants writes variants of the reviewed tasks of the --tasks file: name it",
        ));
    }
    let variant_writer = args
        .variants
        .map(|count| variants::VariantWriter::start(&config, count))
        .transpose()?;
    let task_file_before = match &args.tasks {
        Some(tasks) => {
            crate::working_copy::refuse_link(tasks)?;
            Some(read_task_file(tasks)?)
        }
        None => None,
    };
    let project = args
        .project
        .as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| bad_option(format!("--project: {e}")))?;
    if let Some(out) = &args.out {
        check_out_dir(out)?;
    }
    if args.no_redact {
        notes(HarvestNote::Warning(
            "warning: --no-redact: secrets in the sessions are kept as written in everything \
             this command writes"
                .to_owned(),
        ));
    }
    let filters = Filters {
        project: project.map(|p| p.display().to_string()),
        since,
        skill: args.skill.clone(),
        rollouts: crate::rollout::default_rollouts_root(),
    };
    let mut counts = HarvestCounts::default();
    let mut redactions = Redactor::default();
    let mut writer = Writer::new(args.out.as_deref());
    let mut miner = TaskMiner::new(args.min_sessions);
    let transcripts = matches!(
        args.source,
        HarvestSource::ClaudeCode
            | HarvestSource::Codex
            | HarvestSource::Gemini
            | HarvestSource::OpenCode
    );
    let mut followup = if transcripts && (args.judge_followups || rules.followup_judge) {
        Some(FollowupJudge::start(
            &config,
            filters.project.as_deref().map(Path::new),
            notes,
        )?)
    } else {
        None
    };
    match args.source {
        HarvestSource::ClaudeCode
        | HarvestSource::Codex
        | HarvestSource::Gemini
        | HarvestSource::OpenCode
        | HarvestSource::Cursor
        | HarvestSource::Copilot => {
            let kind = match args.source {
                HarvestSource::Codex => SourceKind::Codex,
                HarvestSource::Gemini => SourceKind::Gemini,
                HarvestSource::OpenCode => SourceKind::OpenCode,
                HarvestSource::Cursor => SourceKind::Cursor,
                HarvestSource::Copilot => SourceKind::Copilot,
                _ => SourceKind::ClaudeCode,
            };
            if !from.exists() {
                let mut missing = from.display().to_string();
                for other in &also_from {
                    missing.push_str(&format!(", nor {}", other.display()));
                }
                return Err(bad_at(
                    Path::new(&missing),
                    None,
                    format!(
                        "no {} sessions here (pass --from with the folder that holds them)",
                        kind.display_name()
                    ),
                ));
            }
            let new_policy = || TextPolicy {
                redactor: (!args.no_redact).then(Redactor::default),
                ..TextPolicy::default()
            };
            let mut sink = Sink {
                kind,
                counts: &mut counts,
                redactions: &mut redactions,
                writer: &mut writer,
                miner: &mut miner,
                followup: followup.as_mut(),
                rules: &rules,
                filters: &filters,
            };
            // Each session goes to the sink as soon as it is read: one at a time in memory.
            if kind == SourceKind::OpenCode {
                opencode_store::read_store(&from, new_policy, &mut |one| sink.take(one, notes))?;
            } else if kind == SourceKind::Cursor {
                let problems =
                    cursor_store::read_store(&from, new_policy, &mut |one| sink.take(one, notes))?;
                say_skipped(notes, problems);
            } else if kind == SourceKind::Copilot {
                let (files, problems) = copilot_files::find_copilot_sessions(&places);
                say_skipped(notes, problems);
                for file in &files {
                    sink.take(copilot_files::read_copilot_file(file, new_policy()), notes)?;
                }
            } else {
                let (sessions, problems) = if args.recorded {
                    recorded_session_files(&from, args.project.as_deref())?
                } else if kind == SourceKind::Gemini {
                    find_gemini_sessions(&from)
                } else {
                    find_sessions(&from)
                };
                say_skipped(notes, problems);
                for files in &sessions {
                    sink.take(read_session(kind, files, new_policy()), notes)?;
                }
            }
        }
        HarvestSource::SessionState => {
            let harvested = dir::session_state(&from, !args.no_redact, &mut redactions)?;
            for h in harvested {
                counts.sessions = counts.sessions.saturating_add(1);
                writer.write(&mut counts, notes, h)?;
            }
        }
        HarvestSource::Dir => {
            let mut filtered_out = 0usize;
            dir::trajectory_dir(
                &from,
                !args.no_redact,
                &mut redactions,
                args.skill.as_deref(),
                &mut filtered_out,
                &mut |item| match item {
                    Ok(h) => {
                        counts.sessions = counts.sessions.saturating_add(1);
                        writer.write(&mut counts, notes, h)
                    }
                    Err((path, reason)) => {
                        counts.skipped_sessions = counts.skipped_sessions.saturating_add(1);
                        notes(HarvestNote::Skipped(format!(
                            "skipped {}",
                            terminal_safe(&format!("{}: {reason}", path.display()))
                        )));
                        Ok(())
                    }
                },
            )?;
            counts.filtered_out = counts.filtered_out.saturating_add(filtered_out);
        }
    }
    let mut gate_supply = Vec::new();
    let mut variant_counts = None;
    let (tasks, mining, task_file) = match (&args.tasks, &task_file_before) {
        (Some(path), Some(before)) => {
            let (tasks, report) = miner.finish_with_report();
            let merged = write_tasks(path, before, &tasks)?;
            if let Some(writer) = variant_writer {
                variant_counts = Some(writer.vary(path, notes)?);
            }
            // The file is written: a supply that cannot be computed is said, not an error.
            match supply::supply_of(path, &tasks) {
                Ok(supply) => gate_supply = supply,
                Err(e) => notes(HarvestNote::Warning(format!(
                    "gate questions per skill not computed: {}",
                    terminal_safe(&e.to_string())
                ))),
            }
            (
                Some((path.clone(), tasks.len())),
                Some(report),
                Some(merged),
            )
        }
        _ => (None, None, None),
    };
    Ok(HarvestSummary {
        source: args.source,
        from,
        also_from,
        counts,
        redactions: (!args.no_redact).then(|| {
            redactions
                .counts()
                .iter()
                .map(|(kind, n)| (kind.to_string(), *n))
                .collect()
        }),
        out: args.out.clone(),
        tasks,
        task_file,
        project: filters.project.as_ref().map(PathBuf::from).or_else(|| {
            // The recorded sessions are those of the current folder's project.
            args.recorded
                .then(|| std::env::current_dir().ok())
                .flatten()
                .and_then(|here| crate::session_log::project_of(&here))
        }),
        mining,
        min_sessions: args.min_sessions,
        followup: followup.map(|judge| judge.counts),
        gate_supply,
        variants: variant_counts,
    })
}

impl HarvestCounts {
    fn add_session(&mut self, s: &Session) {
        self.sessions = self.sessions.saturating_add(1);
        self.turns = self.turns.saturating_add(s.turns.len());
        self.tool_calls = self.tool_calls.saturating_add(s.tool_calls.len());
        self.tool_errors = self.tool_errors.saturating_add(s.tool_errors());
        self.interruptions = self.interruptions.saturating_add(s.interruptions);
    }
}

/// Reads one session: its main file, then each side file, all through one reader.
fn read_session(
    kind: SourceKind,
    files: &SessionFiles,
    policy: TextPolicy,
) -> Result<(Session, TextPolicy), (PathBuf, FileProblem)> {
    let fallback = files
        .main
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match kind {
        SourceKind::ClaudeCode => {
            let mut reader = ClaudeCodeReader::new(&fallback, policy);
            for_each_line(&files.main, |n, l| reader.push_line(n, l))
                .map_err(|p| (files.main.clone(), p))?;
            for (agent, path) in &files.side {
                reader.start_side_file(agent);
                for_each_line(path, |n, l| reader.push_line(n, l))
                    .map_err(|p| (path.clone(), p))?;
            }
            Ok(reader.finish())
        }
        SourceKind::Codex => {
            let mut reader = CodexReader::new(&fallback, policy);
            for_each_line(&files.main, |n, l| reader.push_line(n, l))
                .map_err(|p| (files.main.clone(), p))?;
            Ok(reader.finish())
        }
        SourceKind::Gemini => {
            // One JSON document per file: read whole (within the transcript limit), then parsed.
            let mut text = String::new();
            for_each_line(&files.main, |_, line| {
                text.push_str(line);
                text.push('\n');
                Ok(())
            })
            .map_err(|p| (files.main.clone(), p))?;
            read_gemini_session(&text, &fallback, policy)
                .map_err(|e| (files.main.clone(), FileProblem::Line(e)))
        }
        // Stores of many sessions and files of their own formats: `opencode_store`,
        // `cursor_store` and `copilot_files` read them.
        SourceKind::OpenCode | SourceKind::Cursor | SourceKind::Copilot => Err((
            files.main.clone(),
            FileProblem::File(format!(
                "{} sessions are not read as transcript files",
                kind.display_name()
            )),
        )),
    }
}

/// Says each path left out of the walk, and why.
fn say_skipped(notes: &mut dyn FnMut(HarvestNote), problems: Vec<(PathBuf, String)>) {
    for (path, reason) in problems {
        notes(HarvestNote::Skipped(format!(
            "skipped {}",
            terminal_safe(&format!("{}: {reason}", path.display()))
        )));
    }
}

/// The note for a session left out because `path` could not be read.
fn skip_note(path: &Path, problem: &FileProblem) -> HarvestNote {
    let text = match problem {
        FileProblem::File(reason) => format!("{}: {reason}", path.display()),
        FileProblem::Line(e) => format!("{}:{}: {}", path.display(), e.line, e.reason),
        FileProblem::Limit(why) => format!("{}: {why}", path.display()),
    };
    HarvestNote::Skipped(format!(
        "skipped session {} (the session is left out)",
        terminal_safe(&text)
    ))
}
