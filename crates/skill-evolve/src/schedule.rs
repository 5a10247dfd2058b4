//! `skill-evolve schedule`: the crontab line that harvests the night's sessions and runs the
//! loop, unattended, leaving every result staged.
//!
//! The line changes to the current folder, runs `harvest --project FOLDER --tasks FILE` (the
//! folder's own sessions only; newly mined tasks are appended unreviewed and wait there for a
//! person, the run does not read them, while the lines a person reviewed or deleted stay as
//! they left them) and then, even
//! when the harvest found nothing to read, `run --config FILE --fresh --ledger`, which replays the
//! reviewed question set the configuration names and stages what the gate accepted. `--fresh`
//! starts each scheduled run over, so a proposal not adopted by the next run is replaced by that
//! run's; `--ledger` makes every run's tests of a skill share one level (`--no-ledger` lets each
//! run spend its own, and the note says what a month of runs then risks). Nothing is adopted:
//! `skill-evolve adopt` stays a person's step. Both commands append to
//! `.skill-evolve/schedule.log`.
//!
//! Without `--install` the entry is only printed. With `--install FILE` it goes into that file
//! (created when missing), which the user loads with `crontab FILE`; the program never edits a
//! crontab it was not given. A folder has one entry: its comment line names the folder, and
//! installing again replaces that folder's earlier entry (say `--every night`, then
//! `--every hour`) instead of adding a second one that would start at the same time.
//! `--uninstall FILE` takes the folder's entry out of that file again. Lines of other folders'
//! entries and the user's own lines stay as they are, byte for byte.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::out::outln;
use crate::render::terminal_safe;
use crate::schedule_host::ScheduledHost;
use evolution_project::error::{bad_at, bad_option};
use evolution_project::host_check::{HostCheck, HostRole, check_hosts};
use evolution_project::llm::run_key_variable;
use evolution_project::run::config::{DEFAULT_FDR_ALPHA, DEFAULT_LEDGER_HORIZON};

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
    #[arg(long, value_enum, required_unless_present = "uninstall")]
    pub(crate) every: Option<Every>,
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
    /// Remove this folder's entry from this crontab file (what `--install FILE` added).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["every", "install", "source", "from", "tasks", "config"]
    )]
    pub(crate) uninstall: Option<PathBuf>,
    /// Let each run spend its own `fdr_alpha` instead of sharing one level over every run's
    /// tests of a skill (the ledger, which the entry's `run --ledger` keeps by default).
    #[arg(long, conflicts_with = "uninstall")]
    pub(crate) no_ledger: bool,
}

/// Runs `schedule`.
pub(crate) fn run(args: &ScheduleArgs) -> anyhow::Result<ExitCode> {
    let here = std::env::current_dir()
        .map_err(|e| bad_option(format!("cannot read the current folder: {e}")))?;
    if let Some(file) = &args.uninstall {
        return uninstall_from(file, &here);
    }
    let every = args
        .every
        .ok_or_else(|| bad_option("--every is required (night or hour)"))?;
    if !args.config.is_file() {
        return Err(bad_at(
            &args.config,
            None,
            "no run configuration here (write one with `skill-evolve init`, or pass --config)",
        ));
    }
    let program = std::env::current_exe()
        .map_err(|e| bad_option(format!("cannot find this program's path: {e}")))?;
    let from = args
        .from
        .as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| bad_option(format!("--from: {e}")))?;
    // A host agent's program must be found by cron's bare PATH too.
    let host = crate::schedule_host::scheduled_host(&args.config)?;
    let optimizer = crate::schedule_host::scheduled_optimizer(&args.config)?;
    // Each host must find its login when the entry is installed, not first at night.
    let logins = match &args.install {
        Some(_) if host.is_some() || optimizer.is_some() => host_logins(&args.config)?,
        _ => Vec::new(),
    };
    let hosts: Vec<_> = host.iter().chain(optimizer.iter()).collect();
    let entry = entry(args, every, &here, &program, from.as_deref(), &hosts)?;
    match &args.install {
        None => outln!("{}", terminal_safe(&entry)),
        Some(file) => {
            let path = file.display().to_string();
            let shown = terminal_safe(&path);
            match install(file, &entry, &here)? {
                Installed::Added => {
                    outln!("added to {shown}; load it with `crontab {shown}`");
                }
                Installed::Replaced(removed) => outln!(
                    "replaced this folder's earlier entry in {shown} ({removed} line{} \
                     removed); load it with `crontab {shown}`",
                    if removed == 1 { "" } else { "s" }
                ),
                Installed::Unchanged => {
                    outln!("{shown} has this entry already; nothing written");
                }
            }
        }
    }
    eprintln!("{}", terminal_safe(&key_note(&args.config)));
    for (role, scheduled) in [(HostRole::Agent, &host), (HostRole::Optimizer, &optimizer)] {
        if let Some(scheduled) = scheduled {
            eprintln!("{}", terminal_safe(&login_note(role, scheduled, &logins)));
        }
    }
    if let Some(note) = ledger_note(&args.config, every, args.no_ledger) {
        eprintln!("{}", terminal_safe(&note));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every host of `config` checked as its scheduled run will check it (the agent's in the
/// environment the agent gets, the optimizer's in this one).
///
/// # Errors
/// A host that finds no login: a bad input naming `config` and what is missing.
fn host_logins(config: &Path) -> anyhow::Result<Vec<HostCheck>> {
    let checks = check_hosts(config)?;
    let missing: Vec<&str> = checks
        .iter()
        .filter(|c| !c.ready())
        .map(HostCheck::line)
        .collect();
    if missing.is_empty() {
        return Ok(checks);
    }
    Err(bad_at(
        config,
        None,
        format!("the scheduled run could not log in: {}", missing.join("; ")),
    ))
}

/// The note on the host `scheduled` of `role`: its program, the credentials it logs in with
/// and, when `logins` checked it, the login found now.
fn login_note(role: HostRole, scheduled: &ScheduledHost, logins: &[HostCheck]) -> String {
    let host = match scheduled.name.as_str() {
        "codex" => evolution_host::Host::Codex,
        _ => evolution_host::Host::ClaudeCode,
    };
    let found = logins.iter().find(|c| c.role == role).map(|c| {
        // `… ready (/path/to/cli; how it logs in)`: the part after the program.
        let line = c.line();
        line.rsplit_once("; ")
            .map_or(line, |(_, how)| how.trim_end_matches(')'))
            .to_owned()
    });
    let how = found.map_or_else(
        || "its login is checked when the entry is installed".to_owned(),
        |how| format!("it found {how} now"),
    );
    let what = match role {
        HostRole::Agent => "the agent",
        _ => "the optimizer's model",
    };
    let start = match role {
        HostRole::Agent => {
            "; the run checks at its start that it finds your login and says what is missing \
             in .skill-evolve/schedule.log"
        }
        _ => "",
    };
    format!(
        "note: {what} is {} at {} (first on the entry's PATH); it logs in with {}: {how}; a \
         login of your home folder works at night, a key from your shell's environment must be \
         set on a line of the crontab too{start}",
        scheduled.name,
        scheduled.cli.display(),
        host.credentials()
    )
}

/// Runs in 30 days at each frequency, for the note on what a month of runs risks.
fn runs_a_month(every: Every) -> i32 {
    match every {
        Every::Night => 30,
        Every::Hour => 30 * 24,
    }
}

/// What bounds false accepts over the scheduled runs, said for `config`: with the ledger (the
/// entry's `--ledger`, or `[gate] ledger = true`) every run's tests of a skill share one
/// `fdr_alpha`; with `--no-ledger` each run spends its own, and the chance of some false
/// accept over a month of runs grows toward one. `None` when e-LOND is off (the pre-flight
/// says so) or the configuration cannot be read (`run` will say why).
fn ledger_note(config: &Path, every: Every, no_ledger: bool) -> Option<String> {
    /// The `[gate]` keys the note depends on, the rest left to `run`.
    #[derive(serde::Deserialize)]
    struct GateOnly {
        #[serde(default)]
        gate: GateKeys,
    }
    #[derive(Default, serde::Deserialize)]
    struct GateKeys {
        #[serde(default)]
        ledger: bool,
        #[serde(default)]
        ledger_horizon: Option<u64>,
        #[serde(default)]
        fdr_alpha: Option<toml::Value>,
    }
    let text = std::fs::read_to_string(config).ok()?;
    let GateOnly { gate } = toml::from_str(&text).ok()?;
    let alpha = match &gate.fdr_alpha {
        None => DEFAULT_FDR_ALPHA,
        Some(toml::Value::Float(a)) => *a,
        Some(_) => return None,
    };
    let runs = runs_a_month(every);
    let how_often = match every {
        Every::Night => "nightly",
        Every::Hour => "hourly",
    };
    if gate.ledger || !no_ledger {
        let horizon = gate.ledger_horizon.unwrap_or(DEFAULT_LEDGER_HORIZON);
        return Some(format!(
            "note: every run's candidates are tests of their skill's ledger \
             (.skill-evolve/ledger/): fdr_alpha {alpha} is shared by {horizon} tests of a skill, \
             whichever runs make them, so however long the schedule runs the false-discovery rate \
             over them stays at most {alpha} (and, when no candidate is better, so does the \
             chance of any accept at all); each test is held to about {:.1e} until a discovery, \
             and a skill's tests past the {horizon}th accept nothing (`ledger_horizon` in [gate] \
             of {} sets it)",
            alpha / horizon as f64,
            config.display()
        ));
    }
    let month = 1.0 - (1.0 - alpha).powi(runs);
    Some(format!(
        "note: with --no-ledger each run spends its own fdr_alpha {alpha}, so over a month of \
         {how_often} runs ({runs}) the chance of at least one false accept when no candidate is \
         better can reach {month:.3}; without --no-ledger the runs share one level"
    ))
}

/// Where the scheduled `run` finds its API key, said for the run configuration `config`:
/// cron starts commands with a bare environment, so the variable `run` reads must be set in
/// the crontab itself.
fn key_note(config: &Path) -> String {
    const BARE: &str = "note: cron starts commands with a bare environment";
    match run_key_variable(config) {
        Ok(None) => format!(
            "{BARE}; the run's model ([llm] of {}) needs no API key",
            config.display()
        ),
        Ok(Some(variable)) => format!(
            "{BARE}: `run` reads the model's API key from ${variable} ([llm] of {}), so set \
             it on a line of the crontab above the entry ({variable}=…) and keep that crontab \
             readable by you alone",
            config.display()
        ),
        Err(_) => format!(
            "{BARE}: set the variable holding the model's API key ([llm.openai] api_key_env \
             of {}) on a line of the crontab above the entry",
            config.display()
        ),
    }
}

/// `--uninstall FILE`: the folder `here`'s entry taken out of `file`.
fn uninstall_from(file: &Path, here: &Path) -> anyhow::Result<ExitCode> {
    let path = file.display().to_string();
    let shown = terminal_safe(&path);
    match uninstall(file, here)? {
        0 => outln!("{shown} has no entry of this folder; nothing removed"),
        removed => outln!(
            "removed this folder's entry from {shown} ({removed} line{}); load it with \
             `crontab {shown}`",
            if removed == 1 { "" } else { "s" }
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The comment and the crontab line.
fn entry(
    args: &ScheduleArgs,
    every: Every,
    here: &Path,
    program: &Path,
    from: Option<&Path>,
    hosts: &[&crate::schedule_host::ScheduledHost],
) -> anyhow::Result<String> {
    let source = match args.source {
        ScheduledSource::ClaudeCode => "claude-code",
        ScheduledSource::Codex => "codex",
    };
    let mut harvest = format!(
        "{} harvest --source {source} --project {} --tasks {}",
        quote("the program's path", program)?,
        quote("the current folder", here)?,
        quote("--tasks", &args.tasks)?
    );
    if let Some(from) = from {
        harvest.push_str(&format!(" --from {}", quote("--from", from)?));
    }
    let run = format!(
        "{} run --config {} --fresh{}",
        quote("the program's path", program)?,
        quote("--config", &args.config)?,
        if args.no_ledger { "" } else { " --ledger" }
    );
    let log = ">> .skill-evolve/schedule.log 2>&1";
    let mut path = String::new();
    let mut folders: Vec<&Path> = Vec::new();
    for dir in hosts.iter().flat_map(|host| &host.path_dirs) {
        if !folders.contains(&dir.as_path()) {
            folders.push(dir);
        }
    }
    if !folders.is_empty() {
        let dirs = folders
            .iter()
            .map(|dir| quote("the host's program folder", dir))
            .collect::<anyhow::Result<Vec<_>>>()?;
        path = format!("export PATH={}:\"$PATH\" && ", dirs.join(":"));
    }
    Ok(format!(
        "{}\n{} {} {path}{harvest} {log}; {run} {log}",
        marker(here)?,
        every.fields(),
        command_start(here)?
    ))
}

/// The comment line that names the folder an entry belongs to.
fn marker(here: &Path) -> anyhow::Result<String> {
    Ok(format!(
        "{MARKER_START}{}: harvest, then run (results staged; adopt with `skill-evolve adopt`)",
        quote("the current folder", here)?
    ))
}

/// How the command of the folder's crontab line starts, after its time fields.
fn command_start(here: &Path) -> anyhow::Result<String> {
    Ok(format!(
        "cd {} && mkdir -p .skill-evolve &&",
        quote("the current folder", here)?
    ))
}

/// How an entry's comment line starts; the folder's quoted path follows.
const MARKER_START: &str = "# skill-evolve schedule of ";
/// The comment line entries had before it named their folder.
const OLD_MARKER: &str =
    "# skill-evolve: harvest, then run (results staged; adopt with `skill-evolve adopt`)";

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

/// What `install` did to the crontab file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Installed {
    /// The file had no entry of this folder; the entry was appended.
    Added,
    /// This many lines of the folder's earlier entries were removed and the entry appended.
    Replaced(usize),
    /// The file's only entry of this folder was this one already.
    Unchanged,
}

/// The text of the crontab file `file` (`flag` names the option that gave it), or `None`
/// when there is no such file. A link, a folder or a file too large to be a crontab is refused.
fn read_crontab(file: &Path, flag: &str) -> anyhow::Result<Option<String>> {
    match std::fs::symlink_metadata(file) {
        Ok(meta) if !meta.is_file() => Err(bad_at(
            file,
            None,
            format!("{flag} must name a regular file"),
        )),
        Ok(meta) if meta.len() > MAX_CRONTAB_BYTES => Err(bad_at(
            file,
            None,
            format!("larger than {MAX_CRONTAB_BYTES} bytes; not a crontab"),
        )),
        Ok(_) => std::fs::read_to_string(file)
            .map(Some)
            .map_err(|e| bad_at(file, None, format!("cannot read it: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad_at(file, None, format!("cannot read it: {e}"))),
    }
}

/// Takes the entries of the folder `here` out of `file`; how many lines that removed (the
/// file is left untouched when none).
fn uninstall(file: &Path, here: &Path) -> anyhow::Result<usize> {
    let Some(existing) = read_crontab(file, "--uninstall")? else {
        return Err(bad_at(
            file,
            None,
            "no such crontab file (give the file `--install` wrote to)",
        ));
    };
    let (text, removed) = without_entries_of(&existing, here)?;
    if removed > 0 {
        evolution_project::working_copy::write_keeping_mode(file, &text)?;
    }
    Ok(removed)
}

/// Puts `entry` (the entry of the folder `here`) into `file` in place of the folder's earlier
/// entries.
fn install(file: &Path, entry: &str, here: &Path) -> anyhow::Result<Installed> {
    let existing = read_crontab(file, "--install")?.unwrap_or_default();
    let (mut text, removed) = without_entries_of(&existing, here)?;
    let appended_once = existing
        .strip_suffix('\n')
        .unwrap_or(&existing)
        .ends_with(entry);
    if appended_once && removed == entry.lines().count() {
        return Ok(Installed::Unchanged);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(entry);
    text.push('\n');
    evolution_project::working_copy::write_keeping_mode(file, &text)?;
    Ok(if removed == 0 {
        Installed::Added
    } else {
        Installed::Replaced(removed)
    })
}

/// `crontab` without the lines of the folder `here`'s entries, and how many lines that removed.
/// Every other line is kept byte for byte, with its own line ending (or none, for a last line
/// without one).
///
/// A line is the folder's when it is the comment naming the folder, or a crontab line whose
/// command changes to the folder and makes its `.skill-evolve` folder (with the comment
/// entries had before they named their folder, when that comment comes right before it).
fn without_entries_of(crontab: &str, here: &Path) -> anyhow::Result<(String, usize)> {
    let marker_start = format!("{MARKER_START}{}:", quote("the current folder", here)?);
    let command = format!(" {}", command_start(here)?);
    // Each line with its ending, and its text without it.
    let lines: Vec<(&str, &str)> = crontab
        .split_inclusive('\n')
        .map(|raw| {
            let text = raw.strip_suffix('\n').unwrap_or(raw);
            (raw, text.strip_suffix('\r').unwrap_or(text))
        })
        .collect();
    let is_our_command = |text: &str| !text.starts_with('#') && text.contains(&command);
    let mut kept = String::with_capacity(crontab.len());
    let mut removed = 0;
    for (at, (raw, text)) in lines.iter().enumerate() {
        let old_comment_of_ours = *text == OLD_MARKER
            && lines
                .get(at.saturating_add(1))
                .is_some_and(|(_, next)| is_our_command(next));
        if text.starts_with(&marker_start) || is_our_command(text) || old_comment_of_ours {
            removed += 1;
        } else {
            kept.push_str(raw);
        }
    }
    Ok((kept, removed))
}
