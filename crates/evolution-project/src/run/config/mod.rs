//! The run configuration (`evolve.toml`), checked in full before anything
//! runs. A leaf: it reads the file and the inputs it names, nothing else of
//! a run.
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
//!                                 # regex, json_field, exact, section_present,
//!                                 # section_contains, min_chars, max_chars, no_refusal,
//!                                 # tool_called, all_of, or a rubric the LLM judges); a line
//!                                 # with "reviewed": false refuses the run (--allow-unreviewed)
//! train = 0.5                     # shares of the split, summing to 1
//! gate = 0.3
//! holdout = 0.2
//! seed = 0                        # of the split's shuffle
//! # suite = "suite"               # instead of file and its shares: a folder already split
//!                                 # into train.jsonl, gate.jsonl (required) and holdout.jsonl
//!
//! [gate]
//! calibration = "pool"            # each test's accept boundary exactly for its gate
//!                                 # questions ("e-process": the unbounded e-process)
//! # discordance = 0.5             # share of gate questions assumed won or lost until the
//!                                 # run measures it (shapes the boundary, not its validity)
//! params = "seed"                 # seed | calibrated | thrifty | thorough (docs/gate.md)
//! ladder = [5]                   # the gate decides after every 5 gate questions
//! guard_err = 0.2
//! fdr_alpha = 0.05                # false-discovery rate over the run's candidates
//!                                 # (e-LOND), or "off" for per-candidate bounds only
//! # ledger = true                 # each skill's tests across runs in .skill-evolve/ledger/:
//! # ledger_horizon = 365          # fdr_alpha spread over this many tests of the skill
//! # reuse_questions = false       # gate questions that accepted a version gate no successor
//! # probation = 0.25              # share of the gate questions held back to judge
//!                                 # provisional accepts (0: they stand unwatched); unset,
//!                                 # a quarter when an accept can be provisional and the
//!                                 # questions suffice, else none (the pre-flight says which)
//! # e_confirm = 20.0              # any of these overrides the preset's value; together
//! # e_provisional = 3.0           # they must pass the gate's own checks (docs/gate.md)
//! # w_net_min = 2
//! # delta_min = 0.02
//! # lambda_dir = -3.0             # -0.642 in the preset; -3 under calibration = "pool"
//! # e_rollback = 10.0
//! # alternative = 0.7             # Wald's likelihood ratio for this win rate instead of
//!                                 # the uniform mixture
//! # futility_risk = 0.05          # stop early a candidate that mostly answers like the
//!                                 # current version ("off": use the gate questions up)
//! # carry_over = false            # an accepted candidate's answers are the new baseline's
//!                                 # (for an agent that answers alike every time)
//! # answers_per_question = "auto" # each arm answers each gate question this many times
//!                                 # (1 to 10); "auto": once for an agent that answers alike,
//!                                 # up to 5 for one that does not (measured first)
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
//!
//! [preferences]                   # optional: the project's house rules (text for every
//! file = "preferences.md"         # proposal prompt, checks a proposal must pass before
//!                                 # its gate); default: preferences.md beside this file
//!                                 # when there is one; --preferences wins
//! ```
//!
//! Paths are relative to the configuration file. Every problem is one line
//! naming the file and line, exit code 2, and nothing is written.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use evolution_evolve::{EditBudgetSchedule, SkillUpdateMode};
use evolution_harness::BudgetLimits;
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

mod agent;
mod candidates;
mod evolve;
mod gate;
mod gating;
mod pool_reach;
mod preferences;
mod probation;
mod questions;
mod reach;
mod references;
mod supply;

use self::agent::{AgentSection, check_agent};
pub use self::agent::{AgentSettings, BASIC_ENV, load_agent};
use self::candidates::{capped_horizon, companions_of, horizon_of};
use self::evolve::{EvolveSection, check_evolve};
pub use self::gate::{
    AnswersPerQuestion, DEFAULT_DISCORDANCE, DEFAULT_FDR_ALPHA, DEFAULT_FUTILITY_RISK,
    DEFAULT_LEDGER_HORIZON, GateSettings, POOL_LAMBDA_DIR,
};
use self::gate::{GateSection, check_gate};
pub use self::gating::{GatingConfig, load_gating};
pub use self::pool_reach::POOL_POWER_WIN_RATES;
use self::preferences::{PreferencesSection, check_preferences};
pub use self::probation::AUTO_PROBATION_SHARE;
use self::probation::hold_back_probation;
pub use self::questions::SUITE_FILES;
use self::questions::{QuestionsSection, check_questions};
pub use self::reach::{
    GateReach, LOW_POWER, LedgerReach, MAX_REACH_QUESTIONS, POWER_WIN_RATES, PoolReach, ReachScope,
    refuse_unreachable,
};
pub use self::supply::{
    DEFAULT_GATE_SHARE, DEFAULT_MAX_EPOCHS, DEFAULT_TRAIN_SHARE, GateSupply, default_gate_supply,
};
use crate::error::{bad_at, bad_option, line_of};
use crate::input::{InputKind, read_input_text};
use crate::layout::{MapProblem, SkillDoc, TaskSkills, map_tasks, read_skills};
use crate::llm::LlmSection;
use crate::preferences::ProjectPreferences;
use crate::questions::{load_questions, read_tree};

/// What a caller says about a run, winning over the keys of its configuration file: the
/// command line's flags, or a Python caller's arguments. `Default` says nothing.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Folder of prompt documents evolved with the skills (relative to the current folder);
    /// wins over `[run] prompts`.
    pub prompts: Option<PathBuf>,
    /// Source trees for the missed-nodes judge; wins over `[run] tree`.
    pub tree: Option<PathBuf>,
    /// Edit-budget schedule across epochs; wins over `[evolve] schedule`.
    pub schedule: Option<EditSchedule>,
    /// Most edits per candidate; wins over `[evolve] max_edits`.
    pub max_edits: Option<usize>,
    /// The last epoch's budget for decaying schedules; wins over `[evolve] min_edits`.
    pub min_edits: Option<usize>,
    /// Run a question set with lines marked `"reviewed": false` instead of refusing it.
    pub allow_unreviewed: bool,
    /// The project's house rules (relative to the current folder); wins over
    /// `[preferences] file` and the `preferences.md` beside the configuration.
    pub preferences: Option<PathBuf>,
    /// Count the run's tests in each skill's ledger, as `[gate] ledger = true` does (over
    /// `[gate] ledger_horizon` tests, or the default); a scheduled run is started so, to share
    /// one level over every night. Nothing changes with `fdr_alpha = "off"`.
    pub ledger: bool,
}

/// How the number of edits per candidate changes across epochs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditSchedule {
    /// The same budget (`max_edits`) every epoch.
    Constant,
    /// Linear decay from `max_edits` to `min_edits`.
    Linear,
    /// Cosine annealing from `max_edits` to `min_edits`.
    Cosine,
    /// No limit: the model decides.
    Autonomous,
}

impl EditSchedule {
    /// The kernel's schedule: `max` edits at the first step, decaying to `min` at the last
    /// for `linear` and `cosine`.
    pub fn schedule(self, max: usize, min: usize) -> EditBudgetSchedule {
        match self {
            EditSchedule::Constant => EditBudgetSchedule::Constant { max_edits: max },
            EditSchedule::Linear => EditBudgetSchedule::Linear {
                start: max,
                end: min,
            },
            EditSchedule::Cosine => EditBudgetSchedule::Cosine {
                start: max,
                end: min,
            },
            EditSchedule::Autonomous => EditBudgetSchedule::Autonomous,
        }
    }
}

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
    #[serde(default)]
    preferences: PreferencesSection,
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
    evolve_references: Option<Spanned<Vec<String>>>,
}

fn default_epochs() -> Spanned<u32> {
    Spanned::new(0..0, 3)
}

/// The default of an optional key, with no place in the file.
fn unspanned<T: Default>() -> Spanned<T> {
    Spanned::new(0..0, T::default())
}

fn no_share() -> Spanned<f64> {
    Spanned::new(0..0, 0.0)
}

/// What a run's question split is made from: the question set and what divides it (a
/// resumed run must split the same questions the same way).
#[derive(Debug, Clone, PartialEq)]
pub struct SplitInputs {
    /// `[questions] file` or `suite`, as the configuration writes it.
    pub path: PathBuf,
    /// The questions and how they were divided.
    pub source: SplitSource,
    /// `[gate] probation`: the share of the gate questions held back for probation.
    pub probation: f64,
}

/// Where a run's training, gate and held-out questions come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SplitSource {
    /// `[questions] file`, shuffled and divided by shares.
    Shares {
        /// SHA-256 (hex) of the question set: every question, in file order.
        questions_sha256: String,
        /// `[questions] train`, `gate` and `holdout`.
        shares: [f64; 3],
        /// `[questions] seed`: the shuffle before the split.
        seed: u64,
    },
    /// `[questions] suite`: each of its files ([`SUITE_FILES`]) with the SHA-256 (hex) of its
    /// questions in file order, `None` when the suite has no such file.
    Suite {
        /// File name and hash, in the order of [`SUITE_FILES`].
        files: Vec<(&'static str, Option<String>)>,
    },
}

/// A run configuration, checked.
#[derive(Debug)]
pub struct RunConfig {
    /// Prefix of every run id.
    pub name: String,
    /// Folder of the starting skill documents.
    pub skills: PathBuf,
    /// Epochs at most.
    pub max_epochs: u32,
    /// The agent (`[agent]`).
    pub agent: AgentSettings,
    /// Training questions.
    pub train: Vec<GeneratedQuestion>,
    /// Gate questions.
    pub gate: Vec<GeneratedQuestion>,
    /// Held-out questions.
    pub holdout: Vec<GeneratedQuestion>,
    /// Questions that judge provisional accepts, held back from the gate's.
    pub probation: Vec<GeneratedQuestion>,
    /// One line: how many questions probation holds back, and why.
    pub probation_note: String,
    /// What the split of the questions was made from.
    pub split_inputs: SplitInputs,
    /// The gate (`[gate]`); its false-discovery rate is controlled over the run's candidates.
    pub gate_settings: GateSettings,
    /// Budget caps.
    pub budget: BudgetLimits,
    /// The `[llm]` section.
    pub llm: LlmSection,
    /// The model name, when the configuration names one.
    pub model: String,
    /// Skill documents found in `skills` (their document names).
    pub skill_files: Vec<String>,
    /// The skills found in `skills`: document name and the user's file.
    pub skill_docs: Vec<SkillDoc>,
    /// The `references/*.md` files of the skills `[run] evolve_references` lists, each
    /// evolved as a document of its own (`<skill>.references.<name>.md`) from its skill's
    /// case packs.
    pub reference_docs: Vec<SkillDoc>,
    /// Which skill document serves each task type of the question set.
    pub task_skills: TaskSkills,
    /// Folder of the starting prompt documents, when prompts are evolved too.
    pub prompts: Option<PathBuf>,
    /// Prompt documents found in `prompts`.
    pub prompt_files: Vec<String>,
    /// Source trees for the missed-nodes judge (source id → tree).
    pub tree_data: BTreeMap<String, serde_json::Value>,
    /// The edit budget over the epochs.
    pub schedule: EditBudgetSchedule,
    /// How the schedule was asked for, for the pre-flight line.
    pub schedule_text: String,
    /// Which prompt document is the system prompt.
    pub system_prompt: String,
    /// Patch or rewrite, for skills.
    pub skill_update: SkillUpdateMode,
    /// Appendix note count at which notes are consolidated.
    pub consolidate_notes: usize,
    /// Appendix size in characters above which notes are consolidated.
    pub consolidate_chars: usize,
    /// The agent's domain constants (`[profile]`).
    pub profile: evolution_types::Profile,
    /// Questions marked `"reviewed": false`, run because of `--allow-unreviewed`.
    pub unreviewed: usize,
    /// The project's house rules (`[preferences]`, `--preferences`, or `preferences.md`
    /// beside the configuration): their text goes into every proposal prompt, and a
    /// proposal that breaks one of their checks is dropped before its gate.
    pub preferences: ProjectPreferences,
}

impl RunConfig {
    /// Which task types each skill document serves (document name → task types): a
    /// skill's candidate is gated on the gate questions of those task types only.
    pub fn gate_scope(&self) -> BTreeMap<String, std::collections::BTreeSet<String>> {
        crate::agent_workspace::gate_scope(&self.task_skills)
    }

    /// What the gate can accept for each document a candidate can change, before any
    /// rollout: each skill that serves a task type on the gate questions of its own task
    /// types, and (when prompts are evolved, or one skill serves every gate question) the
    /// whole gate set. A skill whose questions cannot accept any candidate refuses the
    /// whole run, in one line naming every such skill and the gate questions it would need
    /// (the documented choice: a run that could never change a skill it was asked to evolve
    /// is a configuration to fix, not one to run in part).
    ///
    /// # Errors
    /// That refusal, a bad input of the configuration `path`; and as
    /// [`GateSettings::reach`].
    pub fn check_reaches(&self, path: &Path) -> anyhow::Result<Vec<GateReach>> {
        let horizon = self.horizon();
        let total = self.gate.len();
        let scope = self.gate_scope();
        let project = path.parent().unwrap_or(Path::new("."));
        let mut reaches = Vec::new();
        let whole = |reaches: &mut Vec<GateReach>| -> anyhow::Result<()> {
            reaches.push(self.gate_settings.reach(total, horizon)?);
            Ok(())
        };
        // A skill's reach on `questions`, less those its ledger excludes.
        let skill_reach = |doc: &SkillDoc, questions: &[GeneratedQuestion]| {
            let ledger = self.ledger_reach(project, doc, questions)?;
            let n = questions
                .len()
                .saturating_sub(ledger.as_ref().map_or(0, |l| l.excluded));
            self.gate_settings.reach_with(n, horizon, ledger)
        };
        match (scope.values().next(), self.skill_docs.first()) {
            // One skill serves every task type: its questions are the whole gate set.
            (Some(_), Some(doc)) if scope.len() == 1 && self.skill_docs.len() == 1 => {
                let reach = skill_reach(doc, &self.gate)?;
                let with_ledger = reach.ledger.is_some();
                reaches.push(reach);
                if with_ledger && !self.prompt_files.is_empty() {
                    whole(&mut reaches)?;
                }
            }
            _ => {
                for doc in &self.skill_docs {
                    let Some(tasks) = scope.get(&doc.document) else {
                        continue;
                    };
                    let questions = crate::agent_workspace::serving(&self.gate, tasks);
                    let reach = skill_reach(doc, &questions)?.scoped(ReachScope {
                        skill: doc.skill.clone(),
                        of: total,
                    });
                    reaches.push(reach);
                }
                if !self.prompt_files.is_empty() {
                    whole(&mut reaches)?;
                }
            }
        }
        refuse_unreachable(path, &reaches)?;
        Ok(reaches)
    }
}

impl RunConfig {
    /// The ledger of `doc` in the project `project` as its next candidate meets it: the
    /// level it gives and how many of `questions` (the skill's gate questions) it excludes;
    /// `None` without a ledger (`[gate] ledger` unset, or `fdr_alpha = "off"`).
    ///
    /// # Errors
    /// A ledger file that cannot be read or is not a ledger.
    pub fn ledger_reach(
        &self,
        project: &Path,
        doc: &SkillDoc,
        questions: &[GeneratedQuestion],
    ) -> anyhow::Result<Option<LedgerReach>> {
        let Some(budget) = self.gate_settings.ledger_budget() else {
            return Ok(None);
        };
        let file = crate::ledger::LedgerFile::of(project, &doc.path);
        let ledger = file.read().map_err(|e| bad_option(e.to_string()))?;
        let (next, excluded) = ledger.next(&budget, self.gate_settings.reuse_questions);
        Ok(Some(LedgerReach {
            skill: file.skill,
            level: next.level,
            budget,
            excluded: questions
                .iter()
                .filter(|q| excluded.contains(&q.question_id))
                .count(),
        }))
    }
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

/// Reads and checks the run configuration at `path`, with `args` winning over its keys;
/// nothing is written. Every problem is one bad-input error naming the file, the line and
/// the key.
pub fn load(path: &Path, args: &RunOptions) -> anyhow::Result<RunConfig> {
    let text = read_input_text(path, InputKind::RunConfig)?;
    let file: RunFile = parse(path, &text)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let src = Source { path, text: &text };

    let run = check_run(&src, &file.run, &base)?;
    let preferences =
        check_preferences(&src, args.preferences.as_deref(), &file.preferences, &base)?;
    let skill_files: Vec<String> = run.skill_docs.iter().map(|d| d.document.clone()).collect();
    let documents: Vec<String> = (run.skill_docs.iter())
        .chain(&run.reference_docs)
        .map(|d| d.document.clone())
        .collect();
    let (prompts, prompt_files) = check_prompts(
        &src,
        args.prompts.as_ref(),
        file.run.prompts.as_ref(),
        &base,
        &documents,
    )?;
    let tree_data = match (&args.tree, &file.run.tree) {
        (Some(tree), _) => read_tree(tree)?,
        (None, Some(tree)) => read_tree(&base.join(tree.get_ref()))?,
        (None, None) => BTreeMap::new(),
    };
    let evolve = check_evolve(&src, args, &file.evolve, run.max_epochs, &prompt_files)?;
    let agent = check_agent(&src, &file.agent, &file.llm, &base, None)?;
    let ((train, gate, holdout), unreviewed, mut split_inputs) =
        check_questions(&src, &file.questions, &base, true, args.allow_unreviewed)?;
    let task_skills = check_task_skills(
        &src,
        &file.skills,
        &run.skill_docs,
        [&train, &gate, &holdout],
    )?;
    let mut gate_settings = check_gate(&src, &file.gate)?;
    if args.ledger && gate_settings.ledger_horizon.is_none() {
        gate_settings.ledger_horizon = Some(DEFAULT_LEDGER_HORIZON);
    }
    let horizon = capped_horizon(
        horizon_of(
            &train,
            prompt_files.len(),
            run.max_epochs,
            skill_files.len(),
            &companions_of(&run.skill_docs, &run.reference_docs),
            &task_skills,
        ),
        run.max_epochs,
        gate_settings.best_per_epoch,
    );
    let split = hold_back_probation(
        &src,
        file.gate.probation.as_ref(),
        &gate_settings,
        gate,
        horizon,
    )?;
    split_inputs.probation = split.share;
    let model = check_budget(path, &file.budget, &file.llm)?;
    let profile = file.profile.resolve(path, &text)?;
    Ok(RunConfig {
        name: run.name,
        skills: run.skills,
        max_epochs: run.max_epochs,
        agent,
        train,
        gate: split.gate,
        holdout,
        probation: split.probation,
        probation_note: split.note,
        split_inputs,
        gate_settings,
        budget: file.budget,
        llm: file.llm,
        model,
        skill_files: run.skill_docs.iter().map(|d| d.document.clone()).collect(),
        skill_docs: run.skill_docs,
        reference_docs: run.reference_docs,
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
        preferences,
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
    reference_docs: Vec<SkillDoc>,
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
    let opted =
        references::check_evolve_references(src, run.evolve_references.as_ref(), &skill_docs)?;
    let reference_docs =
        references::reference_docs(src, run.evolve_references.as_ref(), &opted, &skill_docs)?;
    Ok(RunChecked {
        name,
        max_epochs,
        skills,
        skill_docs,
        reference_docs,
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
    flag: Option<&PathBuf>,
    key: Option<&Spanned<PathBuf>>,
    base: &Path,
    skill_files: &[String],
) -> anyhow::Result<(Option<PathBuf>, Vec<String>)> {
    // Flags are relative to the current folder, keys to the configuration.
    let prompts = match (flag, key) {
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

#[cfg(test)]
mod tests {
    use super::agent::agent_environment;
    use super::questions::split;
    use super::*;
    use evolution_harness::InheritedEnv;

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
