//! `skill-evolve harvest`: real agent sessions into trajectories `evolve --trajectories` reads.
//!
//! Sources: Claude Code transcripts, Codex rollout files, a SESSION-STATE.md, or a folder of
//! this project's own trajectory files. Each session is read line by line within a size limit,
//! its secrets redacted (unless `--no-redact`, said on every run), judged by the `[harvest]`
//! rules with the reasons kept, filtered (`--project`, `--since`, `--skill`) and, with
//! `--out`, written as one JSON file per session. A malformed line skips its session with a
//! diagnostic naming the file and the line; record types the reader does not know are
//! skipped and counted. Bad options and a bad configuration stop the command before anything
//! is written (exit code 2).
//!
//! With `--tasks FILE`, the sessions' recurring first requests become a question set for
//! `run` (`evolution_harvest::tasks` explains the grouping rule), every line unreviewed.

mod config;
pub(crate) mod dir;
mod files;
pub(crate) mod session_state;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use evolution_harvest::claude_code::ClaudeCodeReader;
use evolution_harvest::codex::CodexReader;
use evolution_harvest::redact::Redactor;
use evolution_harvest::session::{Session, SourceKind, TextPolicy};
use evolution_harvest::signals::judge;
use evolution_harvest::tasks::{MinedTask, TaskMiner};
use evolution_harvest::trajectory::{to_trajectory, trajectory_id};
use serde_json::{Map, Value};

use self::files::{FileProblem, SessionFiles, find_sessions, for_each_line};
use crate::error::{bad_at, bad_option};
use crate::out::outln;
use crate::render::terminal_safe;

/// Where sessions come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HarvestSource {
    /// Claude Code transcripts (default: `~/.claude/projects`).
    ClaudeCode,
    /// Codex CLI sessions (default: `$CODEX_HOME/sessions`, else `~/.codex/sessions`).
    Codex,
    /// A SESSION-STATE.md, judged by its outcome fields (default: `./SESSION-STATE.md`).
    SessionState,
    /// A folder of this project's trajectory `.json` files (`--from` required).
    Dir,
}

impl HarvestSource {
    fn name(self) -> &'static str {
        match self {
            HarvestSource::ClaudeCode => "claude-code",
            HarvestSource::Codex => "codex",
            HarvestSource::SessionState => "session-state",
            HarvestSource::Dir => "dir",
        }
    }
}

/// Options of `harvest`.
#[derive(Debug, Args)]
pub(crate) struct HarvestArgs {
    /// Which agent's sessions to read.
    #[arg(long, value_enum)]
    pub(crate) source: HarvestSource,
    /// Read from here instead of the source's default location (a folder, or one file).
    #[arg(long, value_name = "PATH")]
    pub(crate) from: Option<PathBuf>,
    /// Only sessions that ran in this project folder (or a folder under it).
    #[arg(long, value_name = "PATH")]
    pub(crate) project: Option<PathBuf>,
    /// Only sessions active on or after this day (`YYYY-MM-DD`, UTC).
    #[arg(long, value_name = "DATE")]
    pub(crate) since: Option<String>,
    /// Only sessions that loaded this skill (`name`, or `plugin:name`).
    #[arg(long, value_name = "NAME")]
    pub(crate) skill: Option<String>,
    /// Write one trajectory JSON per session here (created if missing; a session harvested
    /// again replaces its file). Without it, only the counts are printed.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Also write the recurring requests of the sessions as a question set to review
    /// (JSON lines: `question_id`, `task_type`, `question`, `sessions`, a suggested `check`,
    /// `"reviewed": false`). Claude Code and Codex sources only.
    #[arg(long, value_name = "FILE")]
    pub(crate) tasks: Option<PathBuf>,
    /// With `--tasks`: fewest sessions whose first requests match for a task to be written.
    #[arg(long, value_name = "N", default_value_t = 2, requires = "tasks")]
    pub(crate) min_sessions: usize,
    /// Keep secrets as written instead of replacing them with `[REDACTED:<kind>]`.
    #[arg(long)]
    pub(crate) no_redact: bool,
    /// Configuration file with a `[harvest]` table (which failure signals count, thresholds).
    /// Default: `./skill-evolve.toml` when it exists.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

/// What the run counted.
#[derive(Debug, Default)]
struct Counts {
    sessions: usize,
    turns: usize,
    tool_calls: usize,
    tool_errors: usize,
    interruptions: usize,
    failed: usize,
    passed: usize,
    filtered_out: usize,
    skipped_records: usize,
    skipped_sessions: usize,
    written: usize,
}

/// A harvested trajectory ready to write.
struct Harvested {
    id: String,
    object: Map<String, Value>,
    passed: bool,
    reasons: String,
}

/// Runs `harvest`.
pub(crate) fn run(args: &HarvestArgs) -> anyhow::Result<ExitCode> {
    let rules = config::read_rules(args.config.as_deref())?;
    let since = args.since.as_deref().map(check_date).transpose()?;
    let from = source_location(args)?;
    if matches!(
        args.source,
        HarvestSource::SessionState | HarvestSource::Dir
    ) && (args.project.is_some() || args.since.is_some() || args.skill.is_some())
    {
        return Err(bad_option(format!(
            "--project, --since and --skill filter agent transcripts; a {} source has no \
             project, date or skill to filter on",
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
        eprintln!(
            "warning: --no-redact: secrets in the sessions are kept as written in everything \
             this command writes"
        );
    }
    let filters = Filters {
        project: project.map(|p| p.display().to_string()),
        since,
        skill: args.skill.clone(),
    };
    let mut counts = Counts::default();
    let mut redactions = Redactor::default();
    let mut writer = Writer::new(args.out.as_deref());
    let mut miner = TaskMiner::new(args.min_sessions);
    match args.source {
        HarvestSource::ClaudeCode | HarvestSource::Codex => {
            let kind = if args.source == HarvestSource::Codex {
                SourceKind::Codex
            } else {
                SourceKind::ClaudeCode
            };
            if !from.exists() {
                return Err(bad_at(
                    &from,
                    None,
                    format!(
                        "no {} sessions here (pass --from with the folder that holds them)",
                        kind.display_name()
                    ),
                ));
            }
            let (sessions, problems) = find_sessions(&from);
            for (path, reason) in problems {
                eprintln!("skipped {}: {}", path.display(), terminal_safe(&reason));
            }
            for files in sessions {
                let policy = TextPolicy {
                    redactor: (!args.no_redact).then(Redactor::default),
                    ..TextPolicy::default()
                };
                let (session, policy) = match read_session(kind, &files, policy) {
                    Ok(read) => read,
                    Err((path, problem)) => {
                        counts.skipped_sessions = counts.skipped_sessions.saturating_add(1);
                        report_skip(&path, &problem);
                        continue;
                    }
                };
                counts.skipped_records = counts
                    .skipped_records
                    .saturating_add(session.skipped_records);
                if !filters.keep(&session) {
                    counts.filtered_out = counts.filtered_out.saturating_add(1);
                    continue;
                }
                if let Some(r) = &policy.redactor {
                    redactions.absorb(r);
                }
                let verdict = judge(&session, &rules);
                miner.add(&session, verdict.passed);
                counts.add_session(&session);
                writer.write(
                    &mut counts,
                    Harvested {
                        id: trajectory_id(&session),
                        object: to_trajectory(&session, &verdict),
                        passed: verdict.passed,
                        reasons: verdict.describe(),
                    },
                )?;
            }
        }
        HarvestSource::SessionState => {
            let harvested = dir::session_state(&from, !args.no_redact, &mut redactions)?;
            for h in harvested {
                counts.sessions = counts.sessions.saturating_add(1);
                writer.write(&mut counts, h)?;
            }
        }
        HarvestSource::Dir => {
            let (harvested, skipped) =
                dir::trajectory_dir(&from, !args.no_redact, &mut redactions)?;
            for (path, reason) in skipped {
                counts.skipped_sessions = counts.skipped_sessions.saturating_add(1);
                eprintln!(
                    "skipped {}",
                    terminal_safe(&format!("{}: {reason}", path.display()))
                );
            }
            for h in harvested {
                counts.sessions = counts.sessions.saturating_add(1);
                writer.write(&mut counts, h)?;
            }
        }
    }
    print_summary(args, &from, &counts, &redactions);
    if let Some(path) = &args.tasks {
        let tasks = miner.finish();
        write_tasks(path, &tasks)?;
        outln!(
            "tasks: {} recurring (seen in at least {} sessions) written to {}, to review",
            tasks.len(),
            args.min_sessions.max(1),
            terminal_safe(&path.display().to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes mined tasks as JSON lines, replacing the file atomically.
fn write_tasks(path: &Path, tasks: &[MinedTask]) -> anyhow::Result<()> {
    let mut text = String::new();
    for task in tasks {
        text.push_str(&serde_json::to_string(task)?);
        text.push('\n');
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    crate::working_copy::write_atomically(path, &text)
}

impl Counts {
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
    }
}

fn report_skip(path: &Path, problem: &FileProblem) {
    let text = match problem {
        FileProblem::File(reason) => format!("{}: {reason}", path.display()),
        FileProblem::Line(e) => format!("{}:{}: {}", path.display(), e.line, e.reason),
    };
    eprintln!(
        "skipped session {} (the session is left out)",
        terminal_safe(&text)
    );
}

/// The session filters of the command line.
struct Filters {
    project: Option<String>,
    since: Option<String>,
    skill: Option<String>,
}

impl Filters {
    fn keep(&self, session: &Session) -> bool {
        if let Some(project) = &self.project
            && !session.ran_in(project)
        {
            return false;
        }
        if let Some(since) = &self.since
            && session
                .last_timestamp
                .as_deref()
                .is_none_or(|last| last < since.as_str())
        {
            return false;
        }
        if let Some(skill) = &self.skill
            && !session.used_skill(skill)
        {
            return false;
        }
        true
    }
}

/// `YYYY-MM-DD` with a plausible month and day.
fn check_date(raw: &str) -> anyhow::Result<String> {
    let bad = || {
        bad_option(format!(
            "--since {raw:?}: expected a day as YYYY-MM-DD, such as 2026-01-31"
        ))
    };
    let parts: Vec<&str> = raw.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(bad());
    };
    let number = |s: &str, len: usize| {
        (s.len() == len && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    match (number(year, 4), number(month, 2), number(day, 2)) {
        (Some(_), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=31).contains(&d) => {
            Ok(raw.to_owned())
        }
        _ => Err(bad()),
    }
}

/// The folder or file to read: `--from`, else the source's default location.
fn source_location(args: &HarvestArgs) -> anyhow::Result<PathBuf> {
    if let Some(from) = &args.from {
        return Ok(from.clone());
    }
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| bad_option("HOME is not set: pass --from with the sessions' folder"))
    };
    match args.source {
        HarvestSource::ClaudeCode => Ok(home()?.join(".claude").join("projects")),
        HarvestSource::Codex => match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
            Some(codex_home) => Ok(PathBuf::from(codex_home).join("sessions")),
            None => Ok(home()?.join(".codex").join("sessions")),
        },
        HarvestSource::SessionState => Ok(PathBuf::from("SESSION-STATE.md")),
        HarvestSource::Dir => Err(bad_option(
            "--source dir needs --from DIR, the folder of trajectory .json files",
        )),
    }
}

/// The output folder is a folder, or does not exist yet.
fn check_out_dir(out: &Path) -> anyhow::Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(bad_at(out, None, "--out must be a folder; this is a file"));
    }
    Ok(())
}

/// Writes trajectories (with `--out`) and prints one line per session.
struct Writer {
    out: Option<PathBuf>,
    ids: std::collections::HashSet<String>,
}

impl Writer {
    fn new(out: Option<&Path>) -> Self {
        Writer {
            out: out.map(Path::to_path_buf),
            ids: std::collections::HashSet::new(),
        }
    }

    fn write(&mut self, counts: &mut Counts, mut h: Harvested) -> anyhow::Result<()> {
        if h.passed {
            counts.passed = counts.passed.saturating_add(1);
        } else {
            counts.failed = counts.failed.saturating_add(1);
        }
        // Two sessions whose ids clean up to the same name get `-2`, `-3`…
        let mut id = h.id.clone();
        let mut n = 1u32;
        while !self.ids.insert(id.clone()) {
            n = n.saturating_add(1);
            id = format!("{}-{n}", h.id);
        }
        h.object.insert("id".to_owned(), Value::String(id.clone()));
        let verdict = if h.passed { "passed" } else { "failed" };
        outln!(
            "{verdict}  {}  {}",
            terminal_safe(&id),
            terminal_safe(&h.reasons)
        );
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
            let text = serde_json::to_string_pretty(&Value::Object(h.object))?;
            crate::working_copy::write_atomically(&out.join(format!("{id}.json")), &text)?;
            counts.written = counts.written.saturating_add(1);
        }
        Ok(())
    }
}

fn print_summary(args: &HarvestArgs, from: &Path, c: &Counts, redactions: &Redactor) {
    outln!(
        "source: {} ({})",
        args.source.name(),
        terminal_safe(&from.display().to_string())
    );
    outln!("sessions: {}", c.sessions);
    if matches!(
        args.source,
        HarvestSource::ClaudeCode | HarvestSource::Codex
    ) {
        outln!("turns: {}", c.turns);
        outln!("tool calls: {}", c.tool_calls);
        outln!("tool errors: {}", c.tool_errors);
        outln!("interruptions: {}", c.interruptions);
    }
    outln!("failed: {}", c.failed);
    outln!("passed: {}", c.passed);
    outln!("filtered out: {}", c.filtered_out);
    outln!("skipped records: {}", c.skipped_records);
    outln!("skipped sessions: {}", c.skipped_sessions);
    if args.no_redact {
        outln!("redaction: off (--no-redact)");
    } else {
        let kinds: Vec<String> = redactions
            .counts()
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        if kinds.is_empty() {
            outln!("redacted secrets: 0");
        } else {
            outln!(
                "redacted secrets: {} ({})",
                redactions.total(),
                kinds.join(", ")
            );
        }
    }
    if let Some(out) = &args.out {
        outln!(
            "written: {} trajectories to {}",
            c.written,
            terminal_safe(&out.display().to_string())
        );
    }
}
