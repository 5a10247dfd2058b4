//! `skill-evolve run --config evolve.toml`: the harness loop's configuration,
//! checked in full before anything runs, and its pre-flight estimate.
//!
//! ```toml
//! [run]
//! name = "release-notes"          # prefix of every run id
//! skills = "skills"               # folder of the starting skill documents
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
//!
//! [agent]                         # the SubprocessRunner's program
//! command = ["rule-agent"]        # program (PATH or relative to this file) and arguments
//! mode = "per_question"           # per_question | worker
//! concurrency = 1
//! timeout_secs = 600
//! scoring = "exact_match"         # exact_match | agent_reported
//!
//! [questions]
//! file = "questions.jsonl"        # JSON array or JSON lines
//! train = 0.5                     # shares of the split, summing to 1
//! gate = 0.3
//! holdout = 0.2
//! seed = 0                        # of the split's shuffle
//!
//! [gate]
//! params = "seed"                 # seed | calibrated | thrifty | thorough (docs/gate.md)
//! ladder = [10, 20, 40]
//! guard_err = 0.2
//!
//! [budget]                        # evolution-harness BudgetLimits
//! max_llm_calls = 400
//! max_rollouts = 2000
//!
//! [llm]                           # as in skill-evolve.toml
//! provider = "replay"
//! cassette = "run.cassette"
//! ```
//!
//! Paths are relative to the configuration file. Every problem is one line
//! naming the file and line, exit code 2, and nothing is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use evolution_evolve::{EditBudgetSchedule, EvolveOptions};
use evolution_gate::GateParams;
use evolution_harness::{BudgetLimits, Estimate, RunPlan, fixed_question_order};
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

use crate::cli::{LlmArgs, RunArgs, ScheduleArg};
use crate::config::{LlmSection, build_llm_from};
use crate::error::{bad_at, bad_option, line_of};
use crate::questions::load_questions;
use crate::run_loop::{Ended, RunDir, run_loop};

/// Assumed LLM calls of diagnosis per training question (five judges and
/// the defect-vs-lapse call); spans add more, so the estimate is a floor
/// for span-heavy agents.
const DIAGNOSIS_CALLS_PER_QUESTION: u64 = 6;
/// Assumed LLM calls per candidate: evolve, rank, consolidate.
const CALLS_PER_CANDIDATE: u64 = 3;
/// Assumed average tokens per call.
const PROMPT_TOKENS_PER_CALL: u64 = 3_000;
/// Assumed average completion tokens per call.
const COMPLETION_TOKENS_PER_CALL: u64 = 600;

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
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvolveSection {
    schedule: Option<ScheduleArg>,
    max_edits: Option<usize>,
    min_edits: Option<usize>,
    system_prompt: Option<Spanned<String>>,
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
    #[serde(default)]
    env: BTreeMap<String, String>,
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
}

impl Default for GateSection {
    fn default() -> Self {
        GateSection {
            params: ParamsChoice::default(),
            ladder: default_ladder(),
            guard_err: default_guard(),
            seed: 0,
        }
    }
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
    /// The agent program and its arguments.
    pub(crate) program: PathBuf,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// Extra environment of the agent.
    pub(crate) env: BTreeMap<String, String>,
    /// Long-lived workers instead of a process per question.
    pub(crate) worker: bool,
    /// Questions at once.
    pub(crate) concurrency: usize,
    /// Seconds per question.
    pub(crate) timeout_secs: u64,
    /// Trust the agent's own `correct` field.
    pub(crate) agent_scores: bool,
    /// Training questions.
    pub(crate) train: Vec<GeneratedQuestion>,
    /// Gate questions.
    pub(crate) gate: Vec<GeneratedQuestion>,
    /// Held-out questions.
    pub(crate) holdout: Vec<GeneratedQuestion>,
    /// Gate thresholds.
    pub(crate) params: GateParams,
    /// The name of the preset they come from.
    pub(crate) preset: &'static str,
    /// Validation block sizes.
    pub(crate) ladder: Vec<usize>,
    /// Tolerated INFRA error rate.
    pub(crate) guard_err: f64,
    /// Seed of the gate's question order.
    pub(crate) gate_seed: u64,
    /// Budget caps.
    pub(crate) budget: BudgetLimits,
    /// The `[llm]` section.
    pub(crate) llm: LlmSection,
    /// The model name, when the configuration names one.
    pub(crate) model: String,
    /// Skill documents found in `skills`.
    pub(crate) skill_files: Vec<String>,
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
}

/// Reads and checks `path`, with the flags of `args` winning over its keys;
/// nothing is written.
pub(crate) fn load(path: &Path, args: &RunArgs) -> anyhow::Result<RunConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad_at(
            path,
            None,
            format!("cannot read the run configuration: {e}"),
        )
    })?;
    let file: RunFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| line_of(&text, span.start));
        bad_at(path, line, e.message().to_owned())
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let at = |span: std::ops::Range<usize>, problem: String| {
        let line = (span.end > 0).then(|| line_of(&text, span.start));
        bad_at(path, line, problem)
    };

    let name = file.run.name.get_ref().trim().to_owned();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(at(
            file.run.name.span(),
            "[run] name must be non-empty letters, digits, '-', '_' or '.'".to_owned(),
        ));
    }
    let max_epochs = *file.run.max_epochs.get_ref();
    if !(1..=100).contains(&max_epochs) {
        return Err(at(
            file.run.max_epochs.span(),
            format!("[run] max_epochs must be 1 to 100, not {max_epochs}"),
        ));
    }
    let skills = base.join(file.run.skills.get_ref());
    let skill_files = list_documents(&skills).map_err(|problem| {
        at(
            file.run.skills.span(),
            format!("[run] skills {}: {problem}", skills.display()),
        )
    })?;

    // Flags are relative to the current folder, keys to the configuration.
    let prompts = match (&args.prompts, &file.run.prompts) {
        (Some(dir), _) => Some((dir.clone(), None)),
        (None, Some(dir)) => Some((base.join(dir.get_ref()), Some(dir.span()))),
        (None, None) => None,
    };
    let prompt_files = match &prompts {
        Some((dir, span)) => {
            let problem = |problem: String| match span {
                Some(span) => at(
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
    let tree_data = match (&args.tree, &file.run.tree) {
        (Some(tree), _) => read_tree(tree)?,
        (None, Some(tree)) => read_tree(&base.join(tree.get_ref()))?,
        (None, None) => BTreeMap::new(),
    };
    let schedule_arg = args
        .schedule
        .or(file.evolve.schedule)
        .unwrap_or(ScheduleArg::Constant);
    let max_edits = args.max_edits.or(file.evolve.max_edits).unwrap_or(8);
    let min_edits = args.min_edits.or(file.evolve.min_edits).unwrap_or(2);
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
    let system_prompt = match &file.evolve.system_prompt {
        Some(name) => {
            let text = name.get_ref().trim();
            if text.is_empty() || text.contains(['/', '\\']) {
                return Err(at(
                    name.span(),
                    "[evolve] system_prompt must be a file name in the prompts folder".to_owned(),
                ));
            }
            if !prompt_files.is_empty() && !prompt_files.iter().any(|f| f == text) {
                return Err(at(
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

    let command = file.agent.command.get_ref();
    let Some((program, args)) = command.split_first() else {
        return Err(at(
            file.agent.command.span(),
            "[agent] command is empty".to_owned(),
        ));
    };
    let program = find_program(program, &base).ok_or_else(|| {
        at(
            file.agent.command.span(),
            format!("[agent] command: program {program:?} not found (not a file, nor on PATH)"),
        )
    })?;
    let concurrency = *file.agent.concurrency.get_ref();
    if !(1..=64).contains(&concurrency) {
        return Err(at(
            file.agent.concurrency.span(),
            format!("[agent] concurrency must be 1 to 64, not {concurrency}"),
        ));
    }
    let timeout_secs = *file.agent.timeout_secs.get_ref();
    if timeout_secs == 0 {
        return Err(at(
            file.agent.timeout_secs.span(),
            "[agent] timeout_secs must be at least 1".to_owned(),
        ));
    }

    let q = &file.questions;
    for (label, share) in [
        ("train", &q.train),
        ("gate", &q.gate),
        ("holdout", &q.holdout),
    ] {
        let v = *share.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(at(
                share.span(),
                format!("[questions] {label} must be a share from 0 to 1, not {v}"),
            ));
        }
    }
    let (train_share, gate_share, holdout_share) =
        (*q.train.get_ref(), *q.gate.get_ref(), *q.holdout.get_ref());
    let sum = train_share + gate_share + holdout_share;
    if (sum - 1.0).abs() > 1e-6 {
        return Err(at(
            q.train.span(),
            format!("[questions] train + gate + holdout must be 1, not {sum}"),
        ));
    }
    let questions_path = base.join(q.file.get_ref());
    let questions = load_questions(&questions_path)?;
    let (train, gate, holdout) = split(&questions, q.seed, train_share, gate_share);
    if train.is_empty() || gate.is_empty() {
        return Err(at(
            q.gate.span(),
            format!(
                "[questions] the split leaves {} training and {} gate questions of {}; both need at least one",
                train.len(),
                gate.len(),
                questions.len()
            ),
        ));
    }

    let g = &file.gate;
    let ladder = g.ladder.get_ref().clone();
    if ladder.is_empty() || ladder.contains(&0) {
        return Err(at(
            g.ladder.span(),
            "[gate] ladder must list block sizes of at least 1".to_owned(),
        ));
    }
    let guard_err = *g.guard_err.get_ref();
    if !(0.0..=1.0).contains(&guard_err) {
        return Err(at(
            g.guard_err.span(),
            format!("[gate] guard_err must be from 0 to 1, not {guard_err}"),
        ));
    }
    let preset = g.params.name();
    let params = GateParams::preset(preset).map_err(|e| anyhow::anyhow!("[gate] params: {e}"))?;

    let model = file
        .llm
        .openai
        .get("model")
        .and_then(toml::Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    for (label, value) in [("max_cost", file.budget.max_cost)] {
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
    if file.budget.max_cost.is_some() && !file.budget.prices.contains_key(&model) {
        return Err(bad_at(
            path,
            None,
            format!("[budget] max_cost needs a price for model {model:?} under [budget.prices]"),
        ));
    }
    Ok(RunConfig {
        name,
        skills,
        max_epochs,
        program,
        args: args.to_vec(),
        env: file.agent.env,
        worker: matches!(file.agent.mode, Mode::Worker),
        concurrency,
        timeout_secs,
        agent_scores: matches!(file.agent.scoring, ScoringChoice::AgentReported),
        train,
        gate,
        holdout,
        params,
        preset,
        ladder,
        guard_err,
        gate_seed: g.seed,
        budget: file.budget,
        llm: file.llm,
        model,
        skill_files,
        prompts: prompts.map(|(dir, _)| dir),
        prompt_files,
        tree_data,
        schedule,
        schedule_text,
        system_prompt,
    })
}

/// The source trees of a JSON file: an object, source id → tree.
fn read_tree(path: &Path) -> anyhow::Result<BTreeMap<String, serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_at(path, None, format!("cannot read the tree data: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        bad_at(
            path,
            Some(e.line()),
            format!("not a JSON object of source id → tree: {e}"),
        )
    })
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

/// The worst-case plan of a configuration.
pub(crate) fn estimate(config: &RunConfig) -> Estimate {
    let n = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
    let plan = RunPlan {
        epochs: u64::from(config.max_epochs),
        diagnosis_questions: n(config.train.len()),
        // One candidate per skill, at most one per prompt document.
        candidates_per_epoch: n(config
            .skill_files
            .len()
            .saturating_add(config.prompt_files.len())),
        gate_questions: n(config.gate.len()),
        diagnosis_calls_per_epoch: n(config.train.len())
            .saturating_mul(DIAGNOSIS_CALLS_PER_QUESTION),
        calls_per_candidate: CALLS_PER_CANDIDATE,
        slow_update_calls_per_epoch: 1,
        prompt_tokens_per_call: PROMPT_TOKENS_PER_CALL,
        completion_tokens_per_call: COMPLETION_TOKENS_PER_CALL,
        model: config.model.clone(),
    };
    Estimate::of(&plan, &config.budget)
}

/// The plan and estimate, as printed before a run.
pub(crate) fn preflight(config: &RunConfig, estimate: &Estimate, llm: &str) -> String {
    let mut out = format!(
        "run {:?}: {} skill document(s) in {}\n\
         agent: {} {}\n\
         questions: {} train, {} gate, {} holdout\n\
         gate: {} parameters, blocks {:?}, INFRA guard {:.0}%\n\
         evolve: {}; edit budget {}\n\
         llm: {llm}\n\
         pre-flight estimate (worst case, {} epoch(s)): {} LLM calls, {} tokens{}, {} agent rollouts\n",
        config.name,
        config.skill_files.len(),
        config.skills.display(),
        config.program.display(),
        config.args.join(" "),
        config.train.len(),
        config.gate.len(),
        config.holdout.len(),
        config.preset,
        config.ladder,
        config.guard_err * 100.0,
        match &config.prompts {
            Some(dir) if !config.prompt_files.is_empty() => format!(
                "skills and {} prompt document(s) in {} (system prompt {})",
                config.prompt_files.len(),
                dir.display(),
                config.system_prompt
            ),
            _ => "skills only".to_owned(),
        },
        config.schedule_text,
        config.max_epochs,
        estimate.llm_calls,
        estimate.tokens,
        estimate
            .cost
            .map(|c| format!(", cost {c:.2}"))
            .unwrap_or_default(),
        estimate.rollouts,
    );
    for over in &estimate.over_limits {
        out.push_str(&format!(
            "  note: {over}; the run stops at the cap and the same command continues it after you raise it\n"
        ));
    }
    out
}

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let config = load(&args.config, args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let llm_args = LlmArgs {
        config: None,
        provider: None,
        base_url: None,
        model: None,
        api_key_env: None,
        cassette: None,
        record: args.record.clone(),
    };
    let llm = runtime.block_on(build_llm_from(
        &llm_args,
        &config.llm,
        Some(args.config.clone()),
    ))?;
    let estimate = estimate(&config);
    print!("{}", preflight(&config, &estimate, &llm.description));
    if args.dry_run {
        println!("dry run: the configuration is valid; nothing was run or written");
        return Ok(ExitCode::SUCCESS);
    }
    let dir = RunDir::of(&args.config, &config.name);
    let ended = runtime.block_on(run_loop(&config, &dir, llm.provider, estimate))?;
    match ended {
        Ended::Interrupted => {
            println!(
                "interrupted: the store is at a consistent version and {} holds where the run \
                 was; run the same command to resume",
                dir.root.join("checkpoint.json").display()
            );
            Ok(ExitCode::from(130))
        }
        Ended::Finished(report, path) => {
            println!(
                "finished ({:?}) after {} epoch(s): version {} → {}; {} candidate(s), {} accepted",
                report.stop_reason,
                report.epochs,
                report.initial_version,
                report.final_version,
                report.records.len(),
                report.records.iter().filter(|r| r.accepted).count()
            );
            println!("report: {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
    }
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
