//! What a gated `evolve` reads of a run configuration: the agent, the questions, the gate,
//! the budget, the agent's workspace (skills, prompts, which skill serves each task
//! type) and the house rules, checked as `run` checks the same sections.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use evolution_harness::BudgetLimits;
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

use super::agent::{AgentSection, AgentSettings, check_agent};
use super::gate::{AnswersPerQuestion, GateSection, GateSettings, check_gate};
use super::preferences::{PreferencesSection, check_preferences};
use super::probation::hold_back_probation;
use super::questions::{QuestionsSection, check_questions};
use super::{Source, check_budget, check_prompts, check_task_skills, parse};
use crate::input::{InputKind, read_input_text};
use crate::layout::{SkillDoc, TaskSkills, read_skills};
use crate::llm::LlmSection;
use crate::preferences::ProjectPreferences;

/// The most candidates an `evolve` session gates (the reflection's and the slow update's):
/// the horizon its probation share is chosen for.
const EVOLVE_HORIZON: u64 = 2;

/// A run configuration read for `evolve`'s gate: the `[agent]`,
/// `[questions]`, `[gate]` and `[budget]` sections, and from `[run]` and `[skills]` the
/// skills folder, the prompts folder and which skill serves each task type (the agent's
/// workspace, as `run` builds it), and `[preferences]`. The sections only `run` reads (`[evolve]`,
/// `[profile]`, `[llm]`, the other `[run]` keys) may be present, so one `evolve.toml`
/// serves both commands; any other is an error.
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
    #[serde(default)]
    run: Option<GatingRun>,
    #[serde(default, rename = "evolve")]
    _evolve: Option<toml::Value>,
    #[serde(default, rename = "profile")]
    _profile: Option<toml::Value>,
    #[serde(default)]
    skills: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    preferences: PreferencesSection,
}

/// The `[run]` keys a gated `evolve` reads: the folders that make the agent's workspace.
/// The other keys are `run`'s (checked when it reads the file).
#[derive(Debug, Deserialize)]
struct GatingRun {
    skills: Option<Spanned<PathBuf>>,
    prompts: Option<Spanned<PathBuf>>,
    evolve_references: Option<Spanned<Vec<String>>>,
}

/// What `evolve` needs to gate a candidate against an agent, checked as
/// `run` checks the same sections.
#[derive(Debug)]
pub struct GatingConfig {
    /// The configuration file, for messages.
    pub path: PathBuf,
    /// The question set file (or suite folder), for messages.
    pub questions_file: PathBuf,
    /// The agent (`[agent]`).
    pub agent: AgentSettings,
    /// Training questions (the slow update compares the two versions on them).
    pub train: Vec<GeneratedQuestion>,
    /// Gate questions.
    pub gate: Vec<GeneratedQuestion>,
    /// Questions that judge a provisional accept, held back from the gate's.
    pub probation: Vec<GeneratedQuestion>,
    /// One line: how many questions probation holds back, and why.
    pub probation_note: String,
    /// The gate (`[gate]`); its false-discovery rate is controlled over the session's
    /// candidates.
    pub gate_settings: GateSettings,
    /// Budget caps.
    pub budget: BudgetLimits,
    /// The skills of `[run] skills` (empty when the file names no skills folder): the
    /// agent's workspace holds them all, as in `run`.
    pub skill_docs: Vec<SkillDoc>,
    /// Folder of the prompt documents (`[run] prompts`), when the file names one.
    pub prompts: Option<PathBuf>,
    /// Prompt documents found in `prompts`.
    pub prompt_files: Vec<String>,
    /// Which skill document serves each task type (`[skills]`, as `run` resolves it);
    /// `None` when the file names no skills folder.
    pub task_skills: Option<TaskSkills>,
    /// The project's house rules, found as `run` finds them (`evolve --preferences` wins).
    pub preferences: ProjectPreferences,
    /// The skills whose `references/*.md` may be evolved (`[run] evolve_references`).
    pub evolve_references: BTreeSet<String>,
}

/// Reads and checks the gating sections of the run configuration `path`
/// for `evolve`; nothing is written. `hidden_key` names the environment
/// variable holding the API key of the LLM `evolve` talks to: like the key
/// of the file's own `[llm]`, the agent does not inherit it unless
/// `[agent] pass_env` names it. With `need_train`, the split must leave a
/// training question.
pub fn load_gating(
    path: &Path,
    hidden_key: Option<&str>,
    need_train: bool,
) -> anyhow::Result<GatingConfig> {
    let text = read_input_text(path, InputKind::RunConfig)?;
    let file: GatingFile = parse(path, &text)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let src = Source { path, text: &text };
    let agent = check_agent(&src, &file.agent, &file.llm, &base, hidden_key)?;
    let preferences = check_preferences(&src, None, &file.preferences, &base)?;
    // `evolve` gates one candidate on the set as it is: review is `run`'s discipline.
    let ((train, gate, holdout), _, _) =
        check_questions(&src, &file.questions, &base, need_train, true)?;
    // The agent's workspace and the task types of each skill, as `run` builds them.
    let run = file.run.as_ref();
    let (skill_docs, task_skills) = match run.and_then(|r| r.skills.as_ref()) {
        Some(key) => {
            let folder = base.join(key.get_ref());
            let docs = read_skills(&folder).map_err(|problem| {
                src.at(
                    key.span(),
                    format!("[run] skills {}: {problem}", folder.display()),
                )
            })?;
            let tasks = check_task_skills(&src, &file.skills, &docs, [&train, &gate, &holdout])?;
            (docs, Some(tasks))
        }
        None => (Vec::new(), None),
    };
    let skill_files: Vec<String> = skill_docs.iter().map(|d| d.document.clone()).collect();
    let (prompts, prompt_files) = check_prompts(
        &src,
        None,
        run.and_then(|r| r.prompts.as_ref()),
        &base,
        &skill_files,
    )?;
    let mut gate_settings = check_gate(&src, &file.gate)?;
    // A gated session has no training run to measure the agent's noise on: each gate question
    // is asked once unless the file sets a number.
    if let AnswersPerQuestion::Auto(_) = gate_settings.answers_per_question {
        gate_settings.answers_per_question = AnswersPerQuestion::Fixed(1);
    }
    let split = hold_back_probation(
        &src,
        file.gate.probation.as_ref(),
        &gate_settings,
        gate,
        EVOLVE_HORIZON,
    )?;
    check_budget(path, &file.budget, &file.llm)?;
    let evolve_references = super::references::check_evolve_references(
        &src,
        run.and_then(|r| r.evolve_references.as_ref()),
        &skill_docs,
    )?;
    Ok(GatingConfig {
        path: path.to_path_buf(),
        questions_file: base.join(file.questions.source()),
        agent,
        train,
        gate: split.gate,
        probation: split.probation,
        probation_note: split.note,
        gate_settings,
        budget: file.budget,
        skill_docs,
        prompts,
        prompt_files,
        task_skills,
        preferences,
        evolve_references,
    })
}
