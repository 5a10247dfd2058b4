//! The run configuration (`evolve.toml`), checked in full before anything
//! runs. A leaf: it reads the file and the inputs it names, nothing else of
//! the `run` command.
//!
//! ```toml
//! [run]
//! name = "release-notes"          # prefix of every run id
//! skills = "skills"               # the skills: <name>/SKILL.md folders, <name>.md
//!                                 # files, or one SKILL.md (see the layout module)
//! prompts = "prompts"             # optional: prompt documents evolved too
//!                                 # (system prompt, <tool>_extract.md / _verify.md)
//! tree = "trees.json"             # optional: source id → tree, for the missed-nodes judge
//! max_epochs = 3
//!
//! [evolve]                        # all optional; flags of the same name win
//! schedule = "constant"           # constant | linear | cosine | autonomous
//! max_edits = 8                   # the first epoch's edit budget
//! min_edits = 2                   # the last epoch's, for linear and cosine
//! system_prompt = "system.md"     # which prompt document is the system prompt
//! skill_update = "patch"          # patch (small edits) | rewrite (whole document, shorter)
//! consolidate_notes = 6           # appendix notes (old + new) at which they are merged
//! consolidate_chars = 2000        # appendix size past which they are merged (at most 2000,
//!                                 # the appendix limit, past which they always are)
//!
//! [agent]                         # the SubprocessRunner's program
//! command = ["rule-agent"]        # program (PATH or relative to this file) and arguments
//! mode = "per_question"           # per_question | worker
//! concurrency = 1
//! timeout_secs = 600
//! scoring = "exact_match"         # exact_match | agent_reported
//! # env = { AGENT_MODE = "eval" } # variables set for the agent
//! # pass_env = ["AGENT_API_KEY"]  # variables passed through even when held back
//! # clear_env = true              # start from an empty environment: only the basics
//!                                 # (PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE,
//!                                 # TZ, TMPDIR), pass_env and env
//! max_steps = 1000                # trace steps per question; more is an INFRA error
//! max_output_bytes = 16777216     # bytes the agent writes per question (16 MiB); more is INFRA
//! max_field_chars = 65536         # raw_content / tool_output stored per step; longer is cut,
//!                                 # ending in "…[N more chars]"
//!
//! [questions]
//! file = "questions.jsonl"        # JSON array or JSON lines; each question scored by its
//!                                 # `answer`, or by its `check` when it has one (contains,
//!                                 # regex, json_field, or a rubric the LLM judges); a line with
//!                                 # "reviewed": false refuses the run (--allow-unreviewed)
//! train = 0.5                     # shares of the split, summing to 1
//! gate = 0.3
//! holdout = 0.2
//! seed = 0                        # of the split's shuffle
//!
//! [gate]
//! params = "seed"                 # seed | calibrated | thrifty | thorough (docs/gate.md)
//! ladder = [10, 20, 40]
//! guard_err = 0.2
//! fdr_alpha = 0.05                # false-discovery rate over the run's candidates
//!                                 # (e-LOND), or "off" for per-candidate bounds only
//! probation = 0.0                 # share of the gate questions held back to judge
//!                                 # provisional accepts (0: they stand unwatched)
//! # e_confirm = 20.0              # any of these overrides the preset's value; together
//! # e_provisional = 3.0           # they must pass the gate's own checks (docs/gate.md)
//! # w_net_min = 2
//! # delta_min = 0.02
//! # lambda_dir = -0.642
//! # e_rollback = 10.0
//! # alternative = 0.7             # Wald's likelihood ratio for this win rate instead of
//!                                 # the uniform mixture
//!
//! [budget]                        # evolution-harness BudgetLimits; unknown keys are errors
//! max_llm_calls = 400
//! max_rollouts = 2000
//! # max_tokens = 2000000
//! # max_cost = 5.0                # needs the [llm] model's price below
//!
//! # [budget.prices]               # model = price per million tokens, finite and >= 0
//! # deepseek-chat = { prompt_per_million = 0.27, completion_per_million = 1.1 }
//!
//! [skills]                        # optional: task type → skill name
//! "Release Notes" = "release-notes"
//! default = "general"             # the fallback for every other task type
//!
//! [llm]                           # as in skill-evolve.toml
//! provider = "replay"
//! cassette = "run.cassette"
//!
//! [profile]                       # as in skill-evolve.toml: the agent's tool names
//! span_eval_tools = ["lookup_order"]
//! ```
//!
//! Paths are relative to the configuration file. Every problem is one line
//! naming the file and line, exit code 2, and nothing is written.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evolution_evolve::{EditBudgetSchedule, EvolveOptions, SkillUpdateMode};
use evolution_gate::{EProcess, Gate, GateError, GateParams};
use evolution_harness::{
    BudgetLimits, ELond, GammaSequence, Gatekeeper, InheritedEnv, OutputLimits, ProcessMode,
    Scoring, SubprocessConfig, ValidationConfig, fixed_question_order,
};
use evolution_patch::APPENDIX_MAX_CHARS;
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

use crate::cli::{RunArgs, ScheduleArg};
use crate::config::LlmSection;
use crate::error::{bad_at, bad_option, line_of};
use crate::input::{InputKind, read_input_text};
use crate::layout::{MapProblem, SkillDoc, TaskSkills, map_tasks, read_skills};
use crate::questions::{load_questions, read_tree};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    run: RunSection,
    agent: AgentSection,
    questions: QuestionsSection,
    #[serde(default)]
    gate: GateSection,
    #[serde(default)]
    budget: BudgetLimits,
    #[serde(default)]
    llm: LlmSection,
    #[serde(default)]
    evolve: EvolveSection,
    #[serde(default)]
    profile: crate::profile::ProfileSection,
    #[serde(default)]
    skills: BTreeMap<String, Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvolveSection {
    schedule: Option<ScheduleArg>,
    max_edits: Option<usize>,
    min_edits: Option<usize>,
    system_prompt: Option<Spanned<String>>,
    skill_update: Option<SkillUpdateMode>,
    consolidate_notes: Option<Spanned<usize>>,
    consolidate_chars: Option<Spanned<usize>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunSection {
    name: Spanned<String>,
    skills: Spanned<PathBuf>,
    prompts: Option<Spanned<PathBuf>>,
    tree: Option<Spanned<PathBuf>>,
    #[serde(default = "default_epochs")]
    max_epochs: Spanned<u32>,
}

fn default_epochs() -> Spanned<u32> {
    Spanned::new(0..0, 3)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentSection {
    command: Spanned<Vec<String>>,
    #[serde(default)]
    mode: Mode,
    #[serde(default = "one")]
    concurrency: Spanned<usize>,
    #[serde(default = "ten_minutes")]
    timeout_secs: Spanned<u64>,
    #[serde(default)]
    scoring: ScoringChoice,
    #[serde(default = "unspanned")]
    env: Spanned<BTreeMap<String, String>>,
    #[serde(default = "unspanned")]
    pass_env: Spanned<Vec<String>>,
    #[serde(default)]
    clear_env: bool,
    #[serde(default)]
    max_steps: Option<Spanned<usize>>,
    #[serde(default)]
    max_output_bytes: Option<Spanned<usize>>,
    #[serde(default)]
    max_field_chars: Option<Spanned<usize>>,
}

/// The default of an optional key, with no place in the file.
fn unspanned<T: Default>() -> Spanned<T> {
    Spanned::new(0..0, T::default())
}

fn one() -> Spanned<usize> {
    Spanned::new(0..0, 1)
}

fn ten_minutes() -> Spanned<u64> {
    Spanned::new(0..0, 600)
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    PerQuestion,
    Worker,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ScoringChoice {
    #[default]
    ExactMatch,
    AgentReported,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionsSection {
    file: Spanned<PathBuf>,
    train: Spanned<f64>,
    gate: Spanned<f64>,
    #[serde(default = "no_share")]
    holdout: Spanned<f64>,
    #[serde(default)]
    seed: u64,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ParamsChoice {
    #[default]
    Seed,
    Calibrated,
    Thrifty,
    Thorough,
}

impl ParamsChoice {
    /// The preset's name, as `evolution_gate::GateParams::preset` spells it.
    fn name(self) -> &'static str {
        match self {
            ParamsChoice::Seed => "seed",
            ParamsChoice::Calibrated => "calibrated",
            ParamsChoice::Thrifty => "thrifty",
            ParamsChoice::Thorough => "thorough",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GateSection {
    #[serde(default)]
    params: ParamsChoice,
    #[serde(default = "default_ladder")]
    ladder: Spanned<Vec<usize>>,
    #[serde(default = "default_guard")]
    guard_err: Spanned<f64>,
    #[serde(default)]
    seed: u64,
    #[serde(default = "default_fdr")]
    fdr_alpha: Spanned<FdrChoice>,
    #[serde(default = "no_share")]
    probation: Spanned<f64>,
    /// The preset's values, overridden one by one (checked together by `Gate::new`).
    e_confirm: Option<Spanned<f64>>,
    e_provisional: Option<Spanned<f64>>,
    w_net_min: Option<Spanned<i64>>,
    delta_min: Option<Spanned<f64>>,
    lambda_dir: Option<Spanned<f64>>,
    e_rollback: Option<Spanned<f64>>,
    /// Wald's likelihood ratio tuned to this win rate instead of the uniform mixture.
    alternative: Option<Spanned<f64>>,
}

impl Default for GateSection {
    fn default() -> Self {
        GateSection {
            params: ParamsChoice::default(),
            ladder: default_ladder(),
            guard_err: default_guard(),
            seed: 0,
            fdr_alpha: default_fdr(),
            probation: no_share(),
            e_confirm: None,
            e_provisional: None,
            w_net_min: None,
            delta_min: None,
            lambda_dir: None,
            e_rollback: None,
            alternative: None,
        }
    }
}

/// `[gate] fdr_alpha`: a level, or a word (only `"off"` is valid).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum FdrChoice {
    Level(f64),
    Word(String),
}

/// The run-wide false-discovery rate `run` controls unless told otherwise.
pub(crate) const DEFAULT_FDR_ALPHA: f64 = 0.05;

fn default_fdr() -> Spanned<FdrChoice> {
    Spanned::new(0..0, FdrChoice::Level(DEFAULT_FDR_ALPHA))
}

fn no_share() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
}

fn default_ladder() -> Spanned<Vec<usize>> {
    Spanned::new(0..0, vec![10, 20, 40])
}

fn default_guard() -> Spanned<f64> {
    Spanned::new(0..0, 0.2)
}

/// A run configuration, checked.
#[derive(Debug)]
pub(crate) struct RunConfig {
    /// Prefix of every run id.
    pub(crate) name: String,
    /// Folder of the starting skill documents.
    pub(crate) skills: PathBuf,
    /// Epochs at most.
    pub(crate) max_epochs: u32,
    /// The agent (`[agent]`).
    pub(crate) agent: AgentSettings,
    /// Training questions.
    pub(crate) train: Vec<GeneratedQuestion>,
    /// Gate questions.
    pub(crate) gate: Vec<GeneratedQuestion>,
    /// Held-out questions.
    pub(crate) holdout: Vec<GeneratedQuestion>,
    /// Questions that judge provisional accepts, held back from the gate's.
    pub(crate) probation: Vec<GeneratedQuestion>,
    /// The gate (`[gate]`); its false-discovery rate is controlled over the run's candidates.
    pub(crate) gate_settings: GateSettings,
    /// Budget caps.
    pub(crate) budget: BudgetLimits,
    /// The `[llm]` section.
    pub(crate) llm: LlmSection,
    /// The model name, when the configuration names one.
    pub(crate) model: String,
    /// Skill documents found in `skills` (their document names).
    pub(crate) skill_files: Vec<String>,
    /// The skills found in `skills`: document name and the user's file.
    pub(crate) skill_docs: Vec<SkillDoc>,
    /// Which skill document serves each task type of the question set.
    pub(crate) task_skills: TaskSkills,
    /// Folder of the starting prompt documents, when prompts are evolved too.
    pub(crate) prompts: Option<PathBuf>,
    /// Prompt documents found in `prompts`.
    pub(crate) prompt_files: Vec<String>,
    /// Source trees for the missed-nodes judge (source id → tree).
    pub(crate) tree_data: BTreeMap<String, serde_json::Value>,
    /// The edit budget over the epochs.
    pub(crate) schedule: EditBudgetSchedule,
    /// How the schedule was asked for, for the pre-flight line.
    pub(crate) schedule_text: String,
    /// Which prompt document is the system prompt.
    pub(crate) system_prompt: String,
    /// Patch or rewrite, for skills.
    pub(crate) skill_update: SkillUpdateMode,
    /// Appendix note count at which notes are consolidated.
    pub(crate) consolidate_notes: usize,
    /// Appendix size in characters above which notes are consolidated.
    pub(crate) consolidate_chars: usize,
    /// The agent's domain constants (`[profile]`).
    pub(crate) profile: evolution_types::Profile,
    /// Questions marked `"reviewed": false`, run because of `--allow-unreviewed`.
    pub(crate) unreviewed: usize,
}

/// The configuration file's path and text, for problems that name a line.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// A problem at `span` of the file (no line for a default value).
    fn at(&self, span: Range<usize>, problem: String) -> anyhow::Error {
        let line = (span.end > 0).then(|| line_of(self.text, span.start));
        bad_at(self.path, line, problem)
    }
}

/// Reads and checks `path`, with the flags of `args` winning over its keys;
/// nothing is written.
pub(crate) fn load(path: &Path, args: &RunArgs) -> anyhow::Result<RunConfig> {
    let text = read_input_text(path, InputKind::RunConfig)?;
    let file: RunFile = parse(path, &text)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let src = Source { path, text: &text };

    let run = check_run(&src, &file.run, &base)?;
    let skill_files: Vec<String> = run.skill_docs.iter().map(|d| d.document.clone()).collect();
    let (prompts, prompt_files) = check_prompts(&src, args, &file.run, &base, &skill_files)?;
    let tree_data = match (&args.tree, &file.run.tree) {
        (Some(tree), _) => read_tree(tree)?,
        (None, Some(tree)) => read_tree(&base.join(tree.get_ref()))?,
        (None, None) => BTreeMap::new(),
    };
    let evolve = check_evolve(&src, args, &file.evolve, run.max_epochs, &prompt_files)?;
    let agent = check_agent(&src, &file.agent, &file.llm, &base, None)?;
    let ((train, gate, holdout), unreviewed) =
        check_questions(&src, &file.questions, &base, true, args.allow_unreviewed)?;
    let task_skills = check_task_skills(
        &src,
        &file.skills,
        &run.skill_docs,
        [&train, &gate, &holdout],
    )?;
    let gate_settings = check_gate(&src, &file.gate)?;
    let (gate, probation) = hold_back_probation(&src, &file.gate, gate)?;
    let model = check_budget(path, &file.budget, &file.llm)?;
    let profile = file.profile.resolve(path, &text)?;
    Ok(RunConfig {
        name: run.name,
        skills: run.skills,
        max_epochs: run.max_epochs,
        agent,
        train,
        gate,
        holdout,
        probation,
        gate_settings,
        budget: file.budget,
        llm: file.llm,
        model,
        skill_files: run.skill_docs.iter().map(|d| d.document.clone()).collect(),
        skill_docs: run.skill_docs,
        task_skills,
        prompts,
        prompt_files,
        tree_data,
        schedule: evolve.schedule,
        schedule_text: evolve.schedule_text,
        system_prompt: evolve.system_prompt,
        skill_update: evolve.skill_update,
        consolidate_notes: evolve.consolidate_notes,
        consolidate_chars: evolve.consolidate_chars,
        profile,
        unreviewed,
    })
}

/// A run configuration read for `evolve`'s gate: the `[agent]`,
/// `[questions]`, `[gate]` and `[budget]` sections. The sections only `run`
/// reads (`[run]`, `[evolve]`, `[skills]`, `[profile]`, `[llm]`) may be
/// present, so one `evolve.toml` serves both commands; any other is an error.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GatingFile {
    agent: AgentSection,
    questions: QuestionsSection,
    #[serde(default)]
    gate: GateSection,
    #[serde(default)]
    budget: BudgetLimits,
    #[serde(default)]
    llm: LlmSection,
    #[serde(default, rename = "run")]
    _run: Option<toml::Value>,
    #[serde(default, rename = "evolve")]
    _evolve: Option<toml::Value>,
    #[serde(default, rename = "profile")]
    _profile: Option<toml::Value>,
    #[serde(default, rename = "skills")]
    _skills: Option<toml::Value>,
}

/// What `evolve` needs to gate a candidate against an agent, checked as
/// `run` checks the same sections.
#[derive(Debug)]
pub(crate) struct GatingConfig {
    /// The configuration file, for messages.
    pub(crate) path: PathBuf,
    /// The question set file, for messages.
    pub(crate) questions_file: PathBuf,
    /// The agent (`[agent]`).
    pub(crate) agent: AgentSettings,
    /// Training questions (the slow update compares the two versions on them).
    pub(crate) train: Vec<GeneratedQuestion>,
    /// Gate questions.
    pub(crate) gate: Vec<GeneratedQuestion>,
    /// Questions that judge a provisional accept, held back from the gate's.
    pub(crate) probation: Vec<GeneratedQuestion>,
    /// The gate (`[gate]`); its false-discovery rate is controlled over the session's
    /// candidates.
    pub(crate) gate_settings: GateSettings,
    /// Budget caps.
    pub(crate) budget: BudgetLimits,
}

/// Reads and checks the gating sections of the run configuration `path`
/// for `evolve`; nothing is written. `hidden_key` names the environment
/// variable holding the API key of the LLM `evolve` talks to: like the key
/// of the file's own `[llm]`, the agent does not inherit it unless
/// `[agent] pass_env` names it. With `need_train`, the split must leave a
/// training question.
pub(crate) fn load_gating(
    path: &Path,
    hidden_key: Option<&str>,
    need_train: bool,
) -> anyhow::Result<GatingConfig> {
    let text = read_input_text(path, InputKind::RunConfig)?;
    let file: GatingFile = parse(path, &text)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let src = Source { path, text: &text };
    let agent = check_agent(&src, &file.agent, &file.llm, &base, hidden_key)?;
    // `evolve` gates one candidate on the set as it is: review is `run`'s discipline.
    let ((train, gate, _holdout), _) =
        check_questions(&src, &file.questions, &base, need_train, true)?;
    let gate_settings = check_gate(&src, &file.gate)?;
    let (gate, probation) = hold_back_probation(&src, &file.gate, gate)?;
    check_budget(path, &file.budget, &file.llm)?;
    Ok(GatingConfig {
        path: path.to_path_buf(),
        questions_file: base.join(file.questions.file.get_ref()),
        agent,
        train,
        gate,
        probation,
        gate_settings,
        budget: file.budget,
    })
}

/// The sections of the configuration file `path` holding `text`; a syntax error, a
/// missing table or an unknown key is one line naming where it is.
fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> anyhow::Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|span| line_of(text, span.start));
        bad_at(path, line, e.message().to_owned())
    })
}

/// The checked `[run]` keys.
struct RunChecked {
    name: String,
    max_epochs: u32,
    skills: PathBuf,
    skill_docs: Vec<SkillDoc>,
}

/// `[run]`: the name, the epochs and the skills folder.
fn check_run(src: &Source<'_>, run: &RunSection, base: &Path) -> anyhow::Result<RunChecked> {
    let name = run.name.get_ref().trim().to_owned();
    // The name becomes a folder under `.skill-evolve/runs/`: `.`, `..` or a hidden name would
    // put the run somewhere else (or inside another command's folder).
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(src.at(
            run.name.span(),
            "[run] name must start with a letter or digit and hold only letters, digits, '-', \
             '_' or '.'"
                .to_owned(),
        ));
    }
    let max_epochs = *run.max_epochs.get_ref();
    if !(1..=100).contains(&max_epochs) {
        return Err(src.at(
            run.max_epochs.span(),
            format!("[run] max_epochs must be 1 to 100, not {max_epochs}"),
        ));
    }
    let skills = base.join(run.skills.get_ref());
    let skill_docs = read_skills(&skills).map_err(|problem| {
        src.at(
            run.skills.span(),
            format!("[run] skills {}: {problem}", skills.display()),
        )
    })?;
    Ok(RunChecked {
        name,
        max_epochs,
        skills,
        skill_docs,
    })
}

/// `[skills]`: every task type of the question set resolved to a skill
/// document before anything runs.
fn check_task_skills(
    src: &Source<'_>,
    mapping: &BTreeMap<String, Spanned<String>>,
    docs: &[SkillDoc],
    sets: [&[GeneratedQuestion]; 3],
) -> anyhow::Result<TaskSkills> {
    let plain: BTreeMap<String, String> = mapping
        .iter()
        .map(|(k, v)| (k.clone(), v.get_ref().clone()))
        .collect();
    let tasks = sets.into_iter().flatten().map(|q| q.task_type.as_str());
    map_tasks(docs, tasks, &plain).map_err(|problem| {
        let span = match &problem {
            MapProblem::UnknownSkill { key, .. } | MapProblem::UnknownTask { key, .. } => {
                mapping.get(key).map(Spanned::span)
            }
            MapProblem::NoSkill { .. } => None,
        };
        match span {
            Some(span) => src.at(span, problem.to_string()),
            None => bad_at(src.path, None, problem.to_string()),
        }
    })
}

/// The prompts folder (`--prompts` or `[run] prompts`) and its documents,
/// none named like a skill document.
fn check_prompts(
    src: &Source<'_>,
    args: &RunArgs,
    run: &RunSection,
    base: &Path,
    skill_files: &[String],
) -> anyhow::Result<(Option<PathBuf>, Vec<String>)> {
    // Flags are relative to the current folder, keys to the configuration.
    let prompts = match (&args.prompts, &run.prompts) {
        (Some(dir), _) => Some((dir.clone(), None)),
        (None, Some(dir)) => Some((base.join(dir.get_ref()), Some(dir.span()))),
        (None, None) => None,
    };
    let prompt_files = match &prompts {
        Some((dir, span)) => {
            let problem = |problem: String| match span {
                Some(span) => src.at(
                    span.clone(),
                    format!("[run] prompts {}: {problem}", dir.display()),
                ),
                None => bad_option(format!("--prompts {}: {problem}", dir.display())),
            };
            let names = list_documents(dir)
                .map_err(|p| problem(p.replace("skill document", "prompt document")))?;
            if let Some(name) = names.iter().find(|n| skill_files.contains(n)) {
                return Err(problem(format!(
                    "{name} is also a skill document; skills and prompts share one store, \
                     so their names must differ"
                )));
            }
            names
        }
        None => Vec::new(),
    };
    Ok((prompts.map(|(dir, _)| dir), prompt_files))
}

/// The checked `[evolve]` keys (flags winning).
struct EvolveChecked {
    schedule: EditBudgetSchedule,
    schedule_text: String,
    system_prompt: String,
    skill_update: SkillUpdateMode,
    consolidate_notes: usize,
    consolidate_chars: usize,
}

/// `[evolve]`: the edit budget schedule and the system prompt's name.
fn check_evolve(
    src: &Source<'_>,
    args: &RunArgs,
    evolve: &EvolveSection,
    max_epochs: u32,
    prompt_files: &[String],
) -> anyhow::Result<EvolveChecked> {
    let schedule_arg = args
        .schedule
        .or(evolve.schedule)
        .unwrap_or(ScheduleArg::Constant);
    let max_edits = args.max_edits.or(evolve.max_edits).unwrap_or(8);
    let min_edits = args.min_edits.or(evolve.min_edits).unwrap_or(2);
    let schedule = schedule_arg.schedule(max_edits, min_edits);
    schedule
        .budget_at(0, u64::from(max_epochs))
        .map_err(|e| bad_option(format!("max_edits/min_edits (flags or [evolve]): {e}")))?;
    let schedule_text = match schedule_arg {
        ScheduleArg::Constant => format!("constant, {max_edits} edits per candidate"),
        ScheduleArg::Linear => format!("linear, {max_edits} → {min_edits} edits per candidate"),
        ScheduleArg::Cosine => format!("cosine, {max_edits} → {min_edits} edits per candidate"),
        ScheduleArg::Autonomous => "autonomous, no edit limit".to_owned(),
    };
    let system_prompt = match &evolve.system_prompt {
        Some(name) => {
            let text = name.get_ref().trim();
            if text.is_empty() || text.contains(['/', '\\']) {
                return Err(src.at(
                    name.span(),
                    "[evolve] system_prompt must be a file name in the prompts folder".to_owned(),
                ));
            }
            if !prompt_files.is_empty() && !prompt_files.iter().any(|f| f == text) {
                return Err(src.at(
                    name.span(),
                    format!(
                        "[evolve] system_prompt {text:?} is not in the prompts folder (it holds {})",
                        prompt_files.join(", ")
                    ),
                ));
            }
            text.to_owned()
        }
        None => EvolveOptions::default().system_prompt_file,
    };
    let defaults = EvolveOptions::default();
    let consolidate_notes = match &evolve.consolidate_notes {
        Some(n) if *n.get_ref() < 2 => {
            return Err(src.at(
                n.span(),
                format!(
                    "[evolve] consolidate_notes must be at least 2 (notes are merged into fewer), \
                     not {}",
                    n.get_ref()
                ),
            ));
        }
        Some(n) => *n.get_ref(),
        None => defaults.consolidate_threshold,
    };
    let consolidate_chars = match &evolve.consolidate_chars {
        Some(n) if !(1..=APPENDIX_MAX_CHARS).contains(n.get_ref()) => {
            return Err(src.at(
                n.span(),
                format!(
                    "[evolve] consolidate_chars must be 1 to {APPENDIX_MAX_CHARS} (the appendix \
                     limit, past which notes are always consolidated), not {}",
                    n.get_ref()
                ),
            ));
        }
        Some(n) => *n.get_ref(),
        None => defaults.consolidate_chars,
    };
    Ok(EvolveChecked {
        schedule,
        schedule_text,
        system_prompt,
        skill_update: evolve.skill_update.unwrap_or_default(),
        consolidate_notes,
        consolidate_chars,
    })
}

/// The agent of `[agent]`, checked: what both `run` and `evolve`'s gate start it with.
#[derive(Debug)]
pub(crate) struct AgentSettings {
    /// The agent program (found).
    pub(crate) program: PathBuf,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// Variables set for the agent.
    env: BTreeMap<String, String>,
    /// What the agent inherits of this program's environment.
    inherit_env: InheritedEnv,
    /// Long-lived workers instead of a process per question.
    worker: bool,
    /// Questions at once.
    concurrency: usize,
    /// Seconds per question.
    timeout_secs: u64,
    /// Trust the agent's own `correct` field.
    pub(crate) agent_scores: bool,
    /// Bounds on what the agent writes per question.
    limits: OutputLimits,
}

impl AgentSettings {
    /// The subprocess runner's configuration, each question's folder made under `workspaces`.
    pub(crate) fn subprocess_config(&self, workspaces: PathBuf) -> SubprocessConfig {
        SubprocessConfig {
            program: self.program.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            inherit_env: self.inherit_env.clone(),
            mode: if self.worker {
                ProcessMode::Worker
            } else {
                ProcessMode::PerQuestion
            },
            concurrency: self.concurrency,
            question_timeout: Duration::from_secs(self.timeout_secs),
            scoring: if self.agent_scores {
                Scoring::AgentReported
            } else {
                Scoring::ExactMatch
            },
            workspace_root: Some(workspaces),
            limits: self.limits,
        }
    }
}

/// `[agent]`: the program (found), its concurrency, its timeout, its output bounds and its
/// environment. `hidden_key` names one more variable the agent does not inherit unless
/// `pass_env` names it (the key of an LLM other than the file's own `[llm]`).
fn check_agent(
    src: &Source<'_>,
    agent: &AgentSection,
    llm: &LlmSection,
    base: &Path,
    hidden_key: Option<&str>,
) -> anyhow::Result<AgentSettings> {
    let command = agent.command.get_ref();
    let Some((program, args)) = command.split_first() else {
        return Err(src.at(agent.command.span(), "[agent] command is empty".to_owned()));
    };
    let program = find_program(program, base).ok_or_else(|| {
        src.at(
            agent.command.span(),
            format!("[agent] command: program {program:?} not found (not a file, nor on PATH)"),
        )
    })?;
    let concurrency = *agent.concurrency.get_ref();
    if !(1..=64).contains(&concurrency) {
        return Err(src.at(
            agent.concurrency.span(),
            format!("[agent] concurrency must be 1 to 64, not {concurrency}"),
        ));
    }
    let timeout_secs = *agent.timeout_secs.get_ref();
    if timeout_secs == 0 {
        return Err(src.at(
            agent.timeout_secs.span(),
            "[agent] timeout_secs must be at least 1".to_owned(),
        ));
    }
    let mut limits = OutputLimits::default();
    for (key, value, slot) in [
        ("max_steps", &agent.max_steps, &mut limits.max_steps),
        (
            "max_output_bytes",
            &agent.max_output_bytes,
            &mut limits.max_output_bytes,
        ),
        (
            "max_field_chars",
            &agent.max_field_chars,
            &mut limits.max_field_chars,
        ),
    ] {
        if let Some(value) = value {
            if *value.get_ref() == 0 {
                return Err(src.at(value.span(), format!("[agent] {key} must be at least 1")));
            }
            *slot = *value.get_ref();
        }
    }
    let inherit_env = agent_environment(src, agent, llm, hidden_key)?;
    Ok(AgentSettings {
        program,
        args: args.to_vec(),
        env: agent.env.get_ref().clone(),
        inherit_env,
        worker: matches!(agent.mode, Mode::Worker),
        concurrency,
        timeout_secs,
        agent_scores: matches!(agent.scoring, ScoringChoice::AgentReported),
        limits,
    })
}

/// What a cleared agent environment (`clear_env = true`) keeps: where programs are, whose
/// home it is, the language and time zone, the temporary folder.
pub(crate) const BASIC_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// `[agent] env`, `pass_env` and `clear_env` against the `[llm]` key's variable (and
/// `hidden_key`): the variable holding the optimizer's API key never reaches the agent unless
/// named in `pass_env` (or given a value in `env`).
fn agent_environment(
    src: &Source<'_>,
    agent: &AgentSection,
    llm: &LlmSection,
    hidden_key: Option<&str>,
) -> anyhow::Result<InheritedEnv> {
    let valid = |name: &str| !name.is_empty() && !name.contains(['=', '\0']);
    if let Some(name) = agent.pass_env.get_ref().iter().find(|n| !valid(n)) {
        return Err(src.at(
            agent.pass_env.span(),
            format!("[agent] pass_env: {name:?} is not a variable name"),
        ));
    }
    if let Some(name) = agent.env.get_ref().keys().find(|n| !valid(n)) {
        return Err(src.at(
            agent.env.span(),
            format!("[agent] env: {name:?} is not a variable name"),
        ));
    }
    let passed: std::collections::BTreeSet<String> =
        agent.pass_env.get_ref().iter().cloned().collect();
    if agent.clear_env {
        let mut names = passed;
        names.extend(BASIC_ENV.iter().map(|n| (*n).to_owned()));
        return Ok(InheritedEnv::Only(names));
    }
    // The variable named by `api_key_env`, or the usual one the key is read from without it.
    let key = llm.key_variable(None);
    let hidden = key
        .into_iter()
        .chain(hidden_key.map(str::to_owned))
        .filter(|name| !passed.contains(name))
        .collect();
    Ok(InheritedEnv::AllExcept(hidden))
}

/// Train, gate and holdout questions.
type Split = (
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
);

/// `[questions]`: the shares, the question set, and its split. The gate
/// always needs a question; the training share only when `need_train`. Also the number of
/// unreviewed questions (refused unless `allow_unreviewed`).
fn check_questions(
    src: &Source<'_>,
    q: &QuestionsSection,
    base: &Path,
    need_train: bool,
    allow_unreviewed: bool,
) -> anyhow::Result<(Split, usize)> {
    for (label, share) in [
        ("train", &q.train),
        ("gate", &q.gate),
        ("holdout", &q.holdout),
    ] {
        let v = *share.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(src.at(
                share.span(),
                format!("[questions] {label} must be a share from 0 to 1, not {v}"),
            ));
        }
    }
    let (train_share, gate_share, holdout_share) =
        (*q.train.get_ref(), *q.gate.get_ref(), *q.holdout.get_ref());
    let sum = train_share + gate_share + holdout_share;
    if (sum - 1.0).abs() > 1e-6 {
        return Err(src.at(
            q.train.span(),
            format!("[questions] train + gate + holdout must be 1, not {sum}"),
        ));
    }
    let questions_path = base.join(q.file.get_ref());
    let questions = load_questions(&questions_path)?;
    let unreviewed = check_review(&questions_path, &questions, allow_unreviewed)?;
    let (train, gate, holdout) = split(&questions, q.seed, train_share, gate_share);
    if (need_train && train.is_empty()) || gate.is_empty() {
        let needs = if need_train {
            "both need at least one"
        } else {
            "the gate needs at least one"
        };
        return Err(src.at(
            q.gate.span(),
            format!(
                "[questions] the split leaves {} training and {} gate questions of {}; {needs}",
                train.len(),
                gate.len(),
                questions.len()
            ),
        ));
    }
    Ok(((train, gate, holdout), unreviewed))
}

/// The number of questions marked `"reviewed": false`, in file order. Without `allow`, any
/// such question refuses the run, naming the count and the first id.
fn check_review(
    path: &Path,
    questions: &[GeneratedQuestion],
    allow: bool,
) -> anyhow::Result<usize> {
    let unreviewed: Vec<&GeneratedQuestion> = questions
        .iter()
        .filter(|q| q.extra.get("reviewed") == Some(&serde_json::Value::Bool(false)))
        .collect();
    match unreviewed.first() {
        Some(first) if !allow => Err(bad_at(
            path,
            None,
            format!(
                "{} question(s) are marked \"reviewed\": false (first: {:?}); read each, fix \
                 its question and check, set \"reviewed\": true, or pass --allow-unreviewed",
                unreviewed.len(),
                first.question_id
            ),
        )),
        _ => Ok(unreviewed.len()),
    }
}

/// The gate of `[gate]`, checked: how both `run` and `evolve` test a candidate.
#[derive(Debug)]
pub(crate) struct GateSettings {
    /// Gate thresholds.
    pub(crate) params: GateParams,
    /// The preset they come from, and the keys of `[gate]` that changed it.
    pub(crate) preset: String,
    /// Validation block sizes.
    pub(crate) ladder: Vec<usize>,
    /// Tolerated INFRA error rate.
    pub(crate) guard_err: f64,
    /// Seed of the gate's question order.
    seed: u64,
    /// The false-discovery rate controlled over the candidates (e-LOND), or `None` when
    /// `[gate] fdr_alpha = "off"`.
    pub(crate) fdr_alpha: Option<f64>,
}

impl GateSettings {
    /// A gatekeeper whose run ids start with `run_prefix`; with a false-discovery rate,
    /// e-LOND spreads it evenly over `horizon` candidates (at least one).
    pub(crate) fn gatekeeper(
        &self,
        run_prefix: String,
        horizon: u64,
    ) -> anyhow::Result<Gatekeeper> {
        let keeper = Gatekeeper::new(ValidationConfig {
            gate_run_prefix: run_prefix,
            ladder: self.ladder.clone(),
            seed: self.seed,
            gate_guard_err: self.guard_err,
            params: self.params,
        });
        Ok(match self.fdr_alpha {
            Some(alpha) => keeper.with_fdr(
                ELond::new(
                    alpha,
                    GammaSequence::Horizon {
                        proposals: horizon.max(1),
                    },
                )
                .map_err(|e| bad_option(format!("[gate] fdr_alpha: {e}")))?,
            ),
            None => keeper,
        })
    }
}

/// `[gate]`: the ladder, the INFRA guard, the parameter preset, `seed` and the
/// false-discovery rate.
fn check_gate(src: &Source<'_>, g: &GateSection) -> anyhow::Result<GateSettings> {
    let ladder = g.ladder.get_ref().clone();
    if ladder.is_empty() || ladder.contains(&0) {
        return Err(src.at(
            g.ladder.span(),
            "[gate] ladder must list block sizes of at least 1".to_owned(),
        ));
    }
    let guard_err = *g.guard_err.get_ref();
    if !(0.0..=1.0).contains(&guard_err) {
        return Err(src.at(
            g.guard_err.span(),
            format!("[gate] guard_err must be from 0 to 1, not {guard_err}"),
        ));
    }
    let (params, preset) = custom_params(src, g)?;
    let fdr_alpha = match g.fdr_alpha.get_ref() {
        FdrChoice::Level(alpha) if *alpha > 0.0 && *alpha < 1.0 => Some(*alpha),
        FdrChoice::Word(word) if word == "off" => None,
        FdrChoice::Level(alpha) => {
            return Err(src.at(
                g.fdr_alpha.span(),
                format!("[gate] fdr_alpha must lie strictly between 0 and 1, not {alpha}"),
            ));
        }
        FdrChoice::Word(word) => {
            return Err(src.at(
                g.fdr_alpha.span(),
                format!(
                    "[gate] fdr_alpha must be a level between 0 and 1 or \"off\", not {word:?}"
                ),
            ));
        }
    };
    Ok(GateSettings {
        params,
        preset,
        ladder,
        guard_err,
        seed: g.seed,
        fdr_alpha,
    })
}

/// `[gate] params` and the keys that override its values one by one, checked together by
/// `Gate::new`; a value it refuses is reported at its key. Returns the parameters and how
/// they were chosen (`seed`, or `seed (e_confirm, w_net_min set in [gate])`).
fn custom_params(src: &Source<'_>, g: &GateSection) -> anyhow::Result<(GateParams, String)> {
    let name = g.params.name();
    let mut params = GateParams::preset(name).map_err(|e| anyhow::anyhow!("[gate] params: {e}"))?;
    let mut changed: Vec<(&str, Range<usize>)> = Vec::new();
    for (key, given, field) in [
        ("e_confirm", &g.e_confirm, &mut params.e_confirm),
        ("e_provisional", &g.e_provisional, &mut params.e_provisional),
        ("delta_min", &g.delta_min, &mut params.delta_min),
        ("lambda_dir", &g.lambda_dir, &mut params.lambda_dir),
        ("e_rollback", &g.e_rollback, &mut params.e_rollback),
    ] {
        if let Some(value) = given {
            *field = *value.get_ref();
            changed.push((key, value.span()));
        }
    }
    if let Some(value) = &g.w_net_min {
        params.w_net_min = *value.get_ref();
        changed.push(("w_net_min", value.span()));
    }
    if let Some(value) = &g.alternative {
        params.e_process = EProcess::LikelihoodRatio {
            alternative: *value.get_ref(),
        };
        changed.push(("alternative", value.span()));
    }
    if let Err(error) = Gate::new(params) {
        let key = match &error {
            GateError::InvalidParams { field, .. } => field.rsplit('.').next().unwrap_or(field),
            _ => "",
        };
        let span = changed
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0..0, |(_, span)| span.clone());
        return Err(src.at(span, format!("[gate]: {error}")));
    }
    let preset = if changed.is_empty() {
        name.to_owned()
    } else {
        let keys: Vec<&str> = changed.iter().map(|(k, _)| *k).collect();
        format!("{name} ({} set in [gate])", keys.join(", "))
    };
    Ok((params, preset))
}

/// `[gate] probation`: the share of the gate questions held back to judge
/// provisional accepts — the last ones of the seeded order, so they are
/// never the training questions a candidate was written from, nor the
/// questions that accepted it.
fn hold_back_probation(
    src: &Source<'_>,
    g: &GateSection,
    mut gate: Vec<GeneratedQuestion>,
) -> anyhow::Result<(Vec<GeneratedQuestion>, Vec<GeneratedQuestion>)> {
    let share = *g.probation.get_ref();
    if !(0.0..1.0).contains(&share) {
        return Err(src.at(
            g.probation.span(),
            format!("[gate] probation must be a share from 0 up to (not including) 1, not {share}"),
        ));
    }
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a share in [0, 1) of a question count, rounded: exact below 2^53"
    )]
    let held = ((gate.len() as f64) * share).round() as usize;
    if held >= gate.len() {
        return Err(src.at(
            g.probation.span(),
            format!(
                "[gate] probation = {share} leaves none of the {} gate questions to the gate",
                gate.len()
            ),
        ));
    }
    let probation = gate.split_off(gate.len().saturating_sub(held));
    Ok((gate, probation))
}

/// `[budget]` against `[llm]`: a cost cap needs the model's price. Returns
/// the model name (`unknown` when the configuration names none).
fn check_budget(path: &Path, budget: &BudgetLimits, llm: &LlmSection) -> anyhow::Result<String> {
    let model = llm
        .openai
        .get("model")
        .and_then(toml::Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    for (label, value) in [("max_cost", budget.max_cost)] {
        if let Some(v) = value
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(bad_at(
                path,
                None,
                format!("[budget] {label} must be a non-negative number"),
            ));
        }
    }
    if budget.max_cost.is_some() && !budget.prices.contains_key(&model) {
        return Err(bad_at(
            path,
            None,
            format!("[budget] max_cost needs a price for model {model:?} under [budget.prices]"),
        ));
    }
    Ok(model)
}

/// The regular, non-hidden files of `dir`, sorted.
fn list_documents(dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the folder: {e}"))?;
    let mut names = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot read the folder: {e}"))?
            .path();
        if !path.is_file() {
            continue;
        }
        if let Some(name) = path.file_name().and_then(|n| n.to_str())
            && !name.starts_with('.')
        {
            names.push(name.to_owned());
        }
    }
    names.sort();
    if names.is_empty() {
        return Err("holds no skill document".to_owned());
    }
    Ok(names)
}

/// A program named with a path (relative to `base`) or found on `PATH`.
fn find_program(name: &str, base: &Path) -> Option<PathBuf> {
    if name.contains('/') || name.contains(std::path::MAIN_SEPARATOR) {
        let path = base.join(name);
        return path.is_file().then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// A seeded shuffle, then train, gate and holdout by share (holdout takes the rest).
fn split(
    questions: &[GeneratedQuestion],
    seed: u64,
    train_share: f64,
    gate_share: f64,
) -> (
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
) {
    let ordered = fixed_question_order(questions, seed);
    let n = ordered.len();
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let count = |share: f64| ((n as f64) * share).round().max(0.0) as usize;
    let n_train = count(train_share).min(n);
    let n_gate = count(gate_share).min(n.saturating_sub(n_train));
    let mut rest = ordered;
    let holdout = rest.split_off(n_train.saturating_add(n_gate).min(rest.len()));
    let gate = rest.split_off(n_train.min(rest.len()));
    (rest, gate, holdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn questions(n: usize) -> Vec<GeneratedQuestion> {
        (0..n)
            .map(|i| GeneratedQuestion {
                question_id: format!("q{i:02}"),
                ..GeneratedQuestion::default()
            })
            .collect()
    }

    /// What the agent of the `[agent]` keys `agent` inherits when the file's `[llm]` reads
    /// its key from `FILE_KEY` and the caller's LLM from `hidden`.
    fn inherited(agent: &str, hidden: Option<&str>) -> InheritedEnv {
        let section: AgentSection = toml::from_str(agent).unwrap();
        let llm: LlmSection = toml::from_str("openai = { api_key_env = \"FILE_KEY\" }").unwrap();
        let src = Source {
            path: Path::new("evolve.toml"),
            text: agent,
        };
        agent_environment(&src, &section, &llm, hidden).unwrap()
    }

    #[test]
    fn no_key_variable_reaches_the_agent_unless_pass_env_names_it() {
        let names = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        let command = "command = [\"agent\"]\n";
        assert_eq!(
            inherited(command, Some("EVOLVE_KEY")),
            InheritedEnv::AllExcept(names(&["EVOLVE_KEY", "FILE_KEY"]))
        );
        assert_eq!(
            inherited(command, None),
            InheritedEnv::AllExcept(names(&["FILE_KEY"]))
        );
        let passed = format!("{command}pass_env = [\"EVOLVE_KEY\"]\n");
        assert_eq!(
            inherited(&passed, Some("EVOLVE_KEY")),
            InheritedEnv::AllExcept(names(&["FILE_KEY"]))
        );
        // A cleared environment holds the basics and what pass_env names, no key.
        let cleared = format!("{command}clear_env = true\npass_env = [\"EXTRA\"]\n");
        let mut kept = names(&["EXTRA"]);
        kept.extend(BASIC_ENV.iter().map(|n| (*n).to_owned()));
        assert_eq!(
            inherited(&cleared, Some("EVOLVE_KEY")),
            InheritedEnv::Only(kept)
        );
    }

    #[test]
    fn split_is_disjoint_complete_and_seeded() {
        let qs = questions(10);
        let (train, gate, holdout) = split(&qs, 7, 0.5, 0.3);
        assert_eq!((train.len(), gate.len(), holdout.len()), (5, 3, 2));
        let mut all: Vec<_> = train
            .iter()
            .chain(&gate)
            .chain(&holdout)
            .map(|q| q.question_id.clone())
            .collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 10);
        assert_eq!(split(&qs, 7, 0.5, 0.3).1, gate);
        assert_ne!(split(&qs, 8, 0.5, 0.3).1, gate);
    }
}
