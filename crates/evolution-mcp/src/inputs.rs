//! The inputs of the MCP server's tools: checked as the command checks its flags (unknown
//! fields are refused), with the JSON schema the client is shown.

use schemars::JsonSchema;
use serde::Deserialize;

/// Inputs naming a run configuration.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ConfigInput {
    /// The run configuration, relative to the project. Default: the `evolve.toml` found from
    /// the project folder upward, as `skill-evolve run` finds it.
    #[serde(default)]
    pub(super) config: Option<String>,
    /// Start over instead of resuming an earlier run of the same name (`--fresh`).
    #[serde(default)]
    pub(super) fresh: bool,
    /// The project's house rules (`--preferences`), relative to the project: text every
    /// proposal prompt carries and checks a proposal must pass before its gate. Default: the
    /// configuration's `[preferences] file`, else `preferences.md` beside it when there is one.
    #[serde(default)]
    pub(super) preferences: Option<String>,
}

/// Inputs naming one background run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct JobInput {
    /// The job number `run` returned. Default: the latest.
    #[serde(default)]
    pub(super) job: Option<u64>,
}

/// Inputs of `stop_run`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StopInput {
    /// The job number `run` returned.
    pub(super) job: u64,
}

/// Inputs of `adopt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AdoptInput {
    /// The run: its name (as `status` lists it) or its folder inside the project.
    pub(super) run: String,
    /// Only these documents (skill or document names). Default: every one not adopted yet.
    #[serde(default)]
    pub(super) skills: Vec<String>,
    /// Write the staged documents. Only after the user saw the diff this tool returned
    /// without it and said yes.
    #[serde(default)]
    pub(super) confirm: bool,
    /// Take an adoption of the run back instead: each file it wrote gets the text the run
    /// started from again (the diff first, the write with `confirm`).
    #[serde(default)]
    pub(super) undo: bool,
}

/// Where `harvest` reads sessions from.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(super) enum SourceInput {
    /// Claude Code transcripts (`~/.claude/projects`).
    ClaudeCode,
    /// Codex sessions (`$CODEX_HOME/sessions`).
    Codex,
    /// Gemini CLI chats (`~/.gemini/tmp`).
    Gemini,
    /// OpenCode's store (`~/.local/share/opencode/opencode.db`).
    Opencode,
    /// Cursor's stores (`~/.config/Cursor/User`).
    Cursor,
    /// GitHub Copilot's VS Code chat sessions and `copilot` CLI sessions.
    Copilot,
    /// A SESSION-STATE.md file.
    SessionState,
    /// A folder of trajectory files (`from` required).
    Dir,
}

/// Inputs of `harvest`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct HarvestInput {
    /// Which agent's sessions to read.
    pub(super) source: SourceInput,
    /// Read from here instead of the source's default location.
    #[serde(default)]
    pub(super) from: Option<String>,
    /// Read sessions of every project, not only those that ran in this one (Claude Code and
    /// Codex).
    #[serde(default)]
    pub(super) all_projects: bool,
    /// Only sessions active on or after this day (`YYYY-MM-DD`, UTC).
    #[serde(default)]
    pub(super) since: Option<String>,
    /// Only sessions that loaded this skill.
    #[serde(default)]
    pub(super) skill: Option<String>,
    /// Folder (inside the project) to write one trajectory per session to.
    #[serde(default)]
    pub(super) out: Option<String>,
    /// File (inside the project) to write the recurring tasks to, as an unreviewed question
    /// set.
    #[serde(default)]
    pub(super) tasks: Option<String>,
    /// With `tasks`: fewest sessions a task must recur in (default 2).
    #[serde(default)]
    pub(super) min_sessions: Option<usize>,
    /// Only the sessions the host's session-end hook recorded for this project.
    #[serde(default)]
    pub(super) recorded: bool,
}

/// How often `schedule` runs the pipeline.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum EveryInput {
    /// Once a night, at 03:00.
    Night,
    /// Once an hour.
    Hour,
}

/// Inputs of `schedule`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScheduleInput {
    /// How often.
    pub(super) every: EveryInput,
    /// The run configuration, relative to the project (default `evolve.toml`).
    #[serde(default)]
    pub(super) config: Option<String>,
    /// A crontab file inside the project to add the entry to (loaded by the user with
    /// `crontab FILE`). Without it the entry is only returned.
    #[serde(default)]
    pub(super) install: Option<String>,
}

/// Inputs of `unschedule`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct UnscheduleInput {
    /// The crontab file inside the project that `schedule` installed the entry into; this
    /// project's entry is taken out of it, every other line kept.
    pub(super) file: String,
}

/// Gate presets.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum PresetInput {
    /// The default thresholds.
    Seed,
    /// Tuned by simulation.
    Calibrated,
    /// Few questions on a useless candidate.
    Thrifty,
    /// More questions, finds smaller improvements.
    Thorough,
}

/// Inputs of `gate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GateInput {
    /// Questions the candidate answered right and the version it challenges wrong.
    pub(super) wins: u64,
    /// The reverse.
    pub(super) losses: u64,
    /// Questions used so far.
    pub(super) used: u64,
    /// Questions left.
    pub(super) remaining: u64,
    /// The parameter preset (default `seed`).
    #[serde(default)]
    pub(super) preset: Option<PresetInput>,
    /// A run's false-discovery level: thresholds raised as e-LOND raises them for the first
    /// of `horizon` candidates.
    #[serde(default)]
    pub(super) fdr_level: Option<f64>,
    /// With `fdr_level`: the run's most candidates (default 1).
    #[serde(default)]
    pub(super) horizon: Option<u64>,
    /// The e-value an accept needs (instead of `fdr_level`).
    #[serde(default)]
    pub(super) e_needed: Option<f64>,
}

/// Inputs of `report`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReportInput {
    /// The run: its name or its folder inside the project.
    pub(super) run: String,
}

/// Inputs of `handoff_prompts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PromptsInput {
    /// The run: its name or its folder inside the project.
    pub(super) run: String,
}

/// Inputs of `answer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerInput {
    /// The run: its name or its folder inside the project.
    pub(super) run: String,
    /// The waiting request's key, as `handoff_prompts` lists it.
    pub(super) key: String,
    /// The whole reply, as the model would give it (for a request that asks for JSON, the
    /// JSON value alone).
    pub(super) reply: String,
}
