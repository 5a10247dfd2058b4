//! The gate of a gated evolve session (`evolve --agent-config`): the candidate against the document
//! it came from, on paired rollouts of the configured agent, through the
//! harness's `Gatekeeper` (block-sequential e-process, e-LOND over the
//! session's candidates) and `Probation` (a provisional accept judged on
//! the held-back questions).
//!
//! A question whose check is a rubric is scored by the session's LLM after the agent
//! answers (as in `run`), unless the agent reports its own scores.
//!
//! The session's evidence lives in its run folder: `store/` holds the
//! original as the first version and every accepted candidate after it,
//! `runlog.sqlite` both arms' answers, `workspaces/` the agent's folders.
//! The user's skill and its store are never touched here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anyhow::Context as _;
use evolution_diagnose::DiagnosePrompts;
use evolution_gate::{Gate, ProbationVerdict};
use evolution_harness::{
    AgentRunner as _, Budget, Candidate, GateRecord, Gatekeeper, SubprocessRunner, TestLedger,
    ValidationContext, ValidationOutcome, Workspace,
};
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_store_fs::{FsStore, FsVersionedStore};
use evolution_types::{
    GeneratedQuestion, LlmProvider, Prediction, RunRecorder as _, VersionedStore as _,
};
use serde::Serialize;

use crate::agent_workspace::{planned, read_planned, serving, workspace};
use crate::error::bad_at;
use crate::input::{InputKind, read_input_text};
use crate::layout::read_skills;
use crate::ledger::{LedgerFile, ProjectLedger};
use crate::run::config::{GateReach, GatingConfig, LedgerReach, ReachScope};
use crate::run::dir::RunDir;
use crate::run::events::{EventLines, RunObserver, decision_name};
use crate::run::rubric::RubricRunner;
use crate::skill_package::{
    PackageMember, carried_refusal, package_folder, package_member, reference_document,
};

/// The plain words of a candidate that was never tested against an agent.
pub const UNGATED_NOTE: &str = "ungated: no agent or question set configured, the \
                                       candidate was not tested against the agent";

/// What the gate said about one candidate, as the summary and
/// `report.json` keep it.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// The candidate's label (`evolve`, `slow-update`).
    pub candidate: String,
    /// Whether it passed: accepted by the gate (and e-LOND) and not rolled
    /// back on probation.
    pub passed: bool,
    /// The gate's decision (`accept_confirmed`, `reject_futility`, …), or
    /// why it was not tested.
    pub decision: String,
    /// Questions the baseline got wrong and the candidate right.
    pub w: u64,
    /// Questions the baseline got right and the candidate wrong.
    pub l: u64,
    /// The e-value of the last look.
    pub e_value: f64,
    /// The e-value a confirmed accept needed (raised by e-LOND's level).
    pub e_confirm: f64,
    /// Questions paired (ties included).
    pub paired: u64,
    /// Gate questions never reached.
    pub remaining: u64,
    /// Rollouts run for this candidate (both arms, cached baseline answers excluded).
    pub rollouts: u64,
    /// The probation verdict of a provisional accept (`confirmed`,
    /// `rollback`, `unverified`), when there was one.
    pub probation: Option<String>,
    /// The gate's whole evidence (counts per block, paired answers), for
    /// the HTML report's chart and quadrants; absent when it did not test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationOutcome>,
}

impl Verdict {
    /// One line for the terminal: the decision with W, L and E.
    pub fn line(&self) -> String {
        let probation = self
            .probation
            .as_deref()
            .map(|p| format!("; probation: {p}"))
            .unwrap_or_default();
        format!(
            "gate: {} {} — {} (W={}, L={}, E={:.2}, needed {:.2}; {} paired, {} not reached){probation}",
            self.candidate,
            if self.passed { "passed" } else { "failed" },
            self.decision,
            self.w,
            self.l,
            self.e_value,
            self.e_confirm,
            self.paired,
            self.remaining,
        )
    }
}

/// Refuses a gate that could test on what the candidate was written from:
/// gate or probation questions whose id, or whose text (spaces and case
/// aside), is that of a trajectory read. Every such question is named in the
/// one error (the first 20 of them, and how many more). Runs before any LLM call.
pub fn check_disjoint(
    config: &GatingConfig,
    trajectories: &[(String, String)],
) -> anyhow::Result<()> {
    const SHOWN: usize = 20;
    let ids: BTreeMap<&str, &str> = trajectories
        .iter()
        .map(|(id, q)| (id.as_str(), q.as_str()))
        .collect();
    let texts: BTreeMap<String, &str> = trajectories
        .iter()
        .map(|(id, q)| (normalized(q), id.as_str()))
        .filter(|(q, _)| !q.is_empty())
        .collect();
    let mut clashes: Vec<String> = config
        .gate
        .iter()
        .chain(&config.probation)
        .filter_map(|q| {
            if ids.contains_key(q.question_id.as_str()) {
                Some(format!(
                    "{:?} has the id of trajectory {:?}",
                    q.question_id, q.question_id
                ))
            } else {
                texts
                    .get(&normalized(&q.question))
                    .map(|id| format!("{:?} has the text of trajectory {id:?}", q.question_id))
            }
        })
        .collect();
    if clashes.is_empty() {
        return Ok(());
    }
    clashes.sort();
    let more = clashes.len().saturating_sub(SHOWN);
    let shown: Vec<&str> = clashes.iter().take(SHOWN).map(String::as_str).collect();
    Err(bad_at(
        &config.questions_file,
        None,
        format!(
            "gate question(s) the candidate is written from ({}): {}{}; the gate must \
             test on questions the candidate was not written from; remove them from the \
             question set or from the trajectories (nothing was run)",
            clashes.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
    ))
}

/// Lower case, runs of white space made one space, trimmed.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Refuses a run folder that already holds a gated session: its run log's
/// run ids would mix two sessions' answers.
pub fn check_fresh(dir: &RunDir) -> anyhow::Result<()> {
    for path in [dir.store(), dir.runlog()] {
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(bad_at(
                dir.root(),
                None,
                format!(
                    "already holds a gated session ({} exists); choose a new --run-dir \
                     (nothing was sent to the model)",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The budget of the session's rollouts and LLM calls (`[budget]`).
pub fn budget_of(config: &GatingConfig) -> anyhow::Result<Arc<Budget>> {
    Budget::new(config.budget.clone())
        .map(Arc::new)
        .map_err(|e| bad_at(&config.path, None, format!("[budget]: {e}")))
}

/// What a gated evolve tests a skill file with: the agent's workspace as `run` builds it
/// and the gate questions of the task types the skill serves.
#[derive(Debug, Clone)]
pub struct GateTarget {
    /// The skill's name (its frontmatter's `name:`, else its folder's or file's name).
    pub skill: String,
    /// The skill's file, whose ledger (in the project of the agent configuration) tests
    /// its candidates when `[gate] ledger = true`.
    pub path: std::path::PathBuf,
    /// Its document name in the agent's workspace: `<name>.md`, as in `run`.
    pub document: String,
    /// Every document of the workspace the session starts from (name → text), the evolved
    /// skill's original text among them.
    pub documents: BTreeMap<String, String>,
    /// The prompt documents among them.
    pub prompt_files: BTreeSet<String>,
    /// The gate questions of the task types the skill serves.
    pub gate: Vec<GeneratedQuestion>,
    /// The gate questions of every task type.
    pub all_gate: usize,
    /// The task types the skill serves, `None` when it serves every one (it is not in
    /// `[run] skills`, so the file says nothing of it).
    pub tasks: Option<BTreeSet<String>>,
    /// The folders of the workspace's Agent Skills skills, given to the agent whole.
    pub packages: Vec<evolution_harness::SkillPackage>,
}

impl GateTarget {
    /// Resolves the skill file `skill` (its text `original`) against `config`: when it is
    /// one of the skills of `[run] skills`, the workspace holds every skill and prompt of
    /// the run, named as `run` names them, and the skill's candidates are gated on the
    /// questions of the task types it serves; otherwise the workspace holds the skill (and
    /// the run's prompts) and every gate question counts.
    ///
    /// A `references/*.md` file of a skill of `[run] skills` listed in `[run] evolve_references`
    /// is evolved as a document of its own (`<skill>.references.<name>.md`): the agent finds
    /// its candidate at its place in the skill's folder, and it is gated on the questions of
    /// the task types its skill serves.
    ///
    /// # Errors
    /// A skill that cannot be named, a document of the workspace that cannot be read, or a
    /// skill of the folder that serves no task type of the question set (bad inputs); a
    /// script or asset of a skill's folder (never edited), or a reference of a skill not in
    /// `[run] evolve_references`.
    pub fn resolve(
        config: &GatingConfig,
        skill: &std::path::Path,
        original: &str,
    ) -> anyhow::Result<Self> {
        match package_member(skill) {
            PackageMember::Outside => Self::resolve_skill(config, skill, original),
            PackageMember::Carried { folder, path } => Err(carried_refusal(skill, &folder, &path)),
            PackageMember::Reference { folder, path } => {
                Self::resolve_reference(config, skill, original, &folder, &path)
            }
        }
    }

    /// The reference `path` of the skill folder `folder` (the file `file`, its text
    /// `original`) as the evolved document of the workspace of its skill.
    fn resolve_reference(
        config: &GatingConfig,
        file: &std::path::Path,
        original: &str,
        folder: &std::path::Path,
        path: &str,
    ) -> anyhow::Result<Self> {
        let same = |p: &std::path::Path| match (p.canonicalize(), folder.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        let doc = config
            .skill_docs
            .iter()
            .find(|d| package_folder(&d.path).is_some_and(|f| same(&f)))
            .ok_or_else(|| {
                bad_at(
                    file,
                    None,
                    format!(
                        "is {path} of the skill folder {}, which is no skill of [run] skills in \
                            {}: a reference is evolved only with its skill (nothing was run)",
                        folder.display(),
                        config.path.display()
                    ),
                )
            })?;
        if !config.evolve_references.contains(&doc.skill) {
            return Err(bad_at(
                file,
                None,
                format!(
                    "is a reference of skill {}: add {:?} to [run] evolve_references in {} to \
                        evolve it as a document of its own (nothing was run)",
                    doc.skill,
                    doc.skill,
                    config.path.display()
                ),
            ));
        }
        let skill_text = read_input_text(&doc.path, InputKind::SkillDocument)?;
        let mut target = Self::resolve_skill(config, &doc.path, &skill_text)?;
        let document = reference_document(&doc.skill, path);
        if target.documents.contains_key(&document) {
            return Err(bad_at(
                file,
                None,
                format!("its document name {document} is the name of another document"),
            ));
        }
        target
            .documents
            .insert(document.clone(), original.to_owned());
        for package in &mut target.packages {
            if package.folder == doc.skill {
                package.documents.insert(path.to_owned(), document.clone());
            }
        }
        target.path = file.to_path_buf();
        target.document = document;
        Ok(target)
    }

    /// A skill file of `config` as the evolved document (see [`Self::resolve`]).
    fn resolve_skill(
        config: &GatingConfig,
        skill: &std::path::Path,
        original: &str,
    ) -> anyhow::Result<Self> {
        let own = match read_skills(skill) {
            Ok(docs) => docs.into_iter().next(),
            Err(problem) => return Err(bad_at(skill, None, problem)),
        }
        .ok_or_else(|| bad_at(skill, None, "holds no skill document"))?;
        let same = |p: &std::path::Path| match (p.canonicalize(), skill.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        let in_run = config.skill_docs.iter().find(|d| same(&d.path));
        let plan = match in_run {
            Some(_) => planned(
                &config.skill_docs,
                &[],
                config.prompts.as_deref(),
                &config.prompt_files,
            ),
            None => planned(
                std::slice::from_ref(&own),
                &[],
                config.prompts.as_deref(),
                &config.prompt_files,
            ),
        };
        let doc = in_run.unwrap_or(&own);
        let packages = crate::skill_package::packages(&plan)?;
        let mut documents = BTreeMap::new();
        for planned_doc in &plan {
            let text = if planned_doc.document == doc.document {
                original.to_owned()
            } else {
                read_planned(planned_doc)?
            };
            documents.insert(planned_doc.document.clone(), text);
        }
        let tasks = match (in_run, &config.task_skills) {
            (Some(_), Some(task_skills)) => {
                let served: BTreeSet<String> = task_skills
                    .by_task
                    .iter()
                    .filter(|(_, d)| **d == doc.document)
                    .map(|(t, _)| t.clone())
                    .collect();
                if served.is_empty() {
                    let all: Vec<String> = task_skills
                        .by_task
                        .keys()
                        .map(|t| format!("{t:?}"))
                        .collect();
                    return Err(bad_at(
                        &config.path,
                        None,
                        format!(
                            "skill {} serves no task type of the question set (they are {}), so \
                             no gate question tests it; map a task type to it in [skills] \
                             (nothing was run)",
                            doc.skill,
                            all.join(", ")
                        ),
                    ));
                }
                Some(served)
            }
            _ => None,
        };
        let gate = match &tasks {
            Some(tasks) => serving(&config.gate, tasks),
            None => config.gate.clone(),
        };
        Ok(GateTarget {
            skill: doc.skill.clone(),
            path: doc.path.clone(),
            document: doc.document.clone(),
            documents,
            prompt_files: config.prompt_files.iter().cloned().collect(),
            gate,
            all_gate: config.gate.len(),
            tasks,
            packages,
        })
    }

    /// `refunds: 12 of 40 gate questions serve this skill`.
    pub fn scope_words(&self) -> String {
        self.scope().words(self.gate.len())
    }

    fn scope(&self) -> ReachScope {
        ReachScope {
            skill: self.skill.clone(),
            of: self.all_gate,
        }
    }

    /// What the gate can accept with the skill's gate questions for the first of
    /// `candidates` candidates (said of the skill when they are fewer than all the gate
    /// questions), refused as a bad input of the configuration when no record
    /// can be accepted (the line names the skill and the gate questions it would need).
    ///
    /// # Errors
    /// That refusal, and as [`crate::run::config::GateSettings::reach`].
    pub fn check_reach(&self, config: &GatingConfig, candidates: u64) -> anyhow::Result<GateReach> {
        // A skill that every gate question serves is said of the whole set, as in `run`.
        let scope = (self.gate.len() < self.all_gate).then(|| self.scope());
        let ledger = self.ledger_reach(config)?;
        let n = self
            .gate
            .len()
            .saturating_sub(ledger.as_ref().map_or(0, |l| l.excluded));
        let mut reach = config.gate_settings.reach_with(n, candidates, ledger)?;
        reach.scope = scope;
        if reach.cannot_accept() {
            return Err(bad_at(&config.path, None, reach.refusal()));
        }
        Ok(reach)
    }

    /// The skill's ledger as its next candidate meets it (as `run` reads it), `None`
    /// without one.
    fn ledger_reach(&self, config: &GatingConfig) -> anyhow::Result<Option<LedgerReach>> {
        let Some(budget) = config.gate_settings.ledger_budget() else {
            return Ok(None);
        };
        let file = LedgerFile::of(&config_project(config), &self.path);
        let ledger = file
            .read()
            .map_err(|e| crate::error::bad_option(e.to_string()))?;
        let (next, excluded) = ledger.next(&budget, config.gate_settings.reuse_questions);
        Ok(Some(LedgerReach {
            skill: file.skill,
            level: next.level,
            budget,
            excluded: self
                .gate
                .iter()
                .filter(|q| excluded.contains(&q.question_id))
                .count(),
        }))
    }

    /// The ledger the session's candidates are tested by, `None` without one.
    fn ledger(&self, config: &GatingConfig, dir: &RunDir) -> Option<ProjectLedger> {
        let budget = config.gate_settings.ledger_budget()?;
        Some(ProjectLedger {
            files: BTreeMap::from([(
                self.document.clone(),
                LedgerFile::of(&config_project(config), &self.path),
            )]),
            run: dir.name(),
            budget,
            reuse_questions: config.gate_settings.reuse_questions,
        })
    }

    /// The workspace `version` with `text` as the skill's document.
    fn with_text(&self, version: impl Into<String>, text: &str) -> Workspace {
        let mut documents = self.documents.clone();
        documents.insert(self.document.clone(), text.to_owned());
        workspace(version, documents, &self.prompt_files)
    }
}

/// The project whose ledger a session uses: the folder of its agent configuration.
fn config_project(config: &GatingConfig) -> std::path::PathBuf {
    match config.path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    }
}

/// An open gated session: the agent, the run folder's store and run log,
/// and the gatekeeper carried from one candidate to the next.
pub struct GateSession<'a> {
    config: &'a GatingConfig,
    target: GateTarget,
    /// The agent, its rubric answers judged by the session's LLM.
    runner: RubricRunner<'a, SubprocessRunner>,
    store: FsVersionedStore,
    log: SqliteRunLog,
    budget: Arc<Budget>,
    progress: EventLines<'a>,
    keeper: Gatekeeper,
    /// The trajectory ids: no gate question may be one of them.
    provenance: BTreeSet<String>,
    /// The session's name: the prefix of its run ids.
    name: String,
    /// The skill's ledger across runs and sessions (`[gate] ledger = true`).
    ledger: Option<ProjectLedger>,
}

impl<'a> GateSession<'a> {
    /// Opens the session in `dir`: the store starts at the documents of `target` (the
    /// agent's workspace, the skill's original text among them), e-LOND spreads
    /// `fdr_alpha` over `candidates` candidates, `llm` judges rubric checks with
    /// `prompts.rubric`, and `observer` sees the session's events.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call site; each argument is distinct"
    )]
    pub fn open(
        config: &'a GatingConfig,
        llm: &'a dyn LlmProvider,
        prompts: &DiagnosePrompts,
        dir: &RunDir,
        target: GateTarget,
        provenance: BTreeSet<String>,
        budget: Arc<Budget>,
        candidates: u64,
        observer: &'a dyn RunObserver,
    ) -> anyhow::Result<Self> {
        crate::run::private::create_private_dir(&dir.workspaces())
            .with_context(|| format!("cannot create {}", dir.workspaces().display()))?;
        let store = FsStore::init(
            dir.store(),
            target.documents.clone(),
            "the documents evolve started from",
        )
        .map_err(|e| anyhow::anyhow!("cannot create the store {}: {e}", dir.store().display()))?;
        let log = SqliteRunLog::open(dir.runlog())
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", dir.runlog().display()))?;
        let mut agent_config = config.agent.subprocess_config(dir.workspaces());
        agent_config.packages = target.packages.clone();
        let agent = SubprocessRunner::new(agent_config)
            .map_err(|e| bad_at(&config.path, None, format!("[agent]: {e}")))?;
        let runner = RubricRunner::new(agent, llm, prompts.clone())
            .unless_agent_scores(config.agent.agent_scores);
        let keeper = config
            .gate_settings
            .gatekeeper(format!("{}_gate_", dir.name()), candidates)?;
        let ledger = target.ledger(config, dir);
        Ok(GateSession {
            config,
            ledger,
            target,
            runner,
            store: FsVersionedStore::new(store),
            log,
            budget,
            progress: EventLines::new(observer),
            keeper,
            provenance,
            name: dir.name(),
        })
    }

    fn context(&self) -> ValidationContext<'_> {
        ValidationContext {
            runner: &self.runner,
            recorder: &self.log,
            budget: &self.budget,
            events: &self.progress,
            // A session's run ids are its own (a used run folder is refused).
            resume_from: None,
        }
    }

    /// The store's current version as the agent's workspace.
    fn current(&self) -> anyhow::Result<Workspace> {
        let version = self.store.current_version()?;
        let documents = self.store.documents(&version)?;
        Ok(workspace(version, documents, &self.target.prompt_files))
    }

    /// The current text of the evolved skill.
    pub fn current_text(&self) -> anyhow::Result<String> {
        Ok(self
            .current()?
            .skills
            .get(&self.target.document)
            .cloned()
            .unwrap_or_default())
    }

    /// Gates `text` against the store's current version; `extra_provenance`
    /// lists the question ids it was written from besides the
    /// trajectories. A passing candidate becomes the current version.
    pub async fn gate(
        &mut self,
        label: &str,
        text: &str,
        extra_provenance: &BTreeSet<String>,
    ) -> anyhow::Result<Verdict> {
        let baseline = self.current()?;
        let writes = BTreeMap::from([(self.target.document.clone(), text.to_owned())]);
        let mut provenance = self.provenance.clone();
        provenance.extend(extra_provenance.iter().cloned());
        // The baseline's documents with the candidate's text: what `run` gives the agent.
        let mut documents = baseline.skills.clone();
        documents.extend(baseline.prompts.clone());
        documents.insert(self.target.document.clone(), text.to_owned());
        let candidate = Candidate {
            label: label.to_owned(),
            workspace: workspace(label, documents, &self.target.prompt_files),
            provenance: provenance.clone(),
        };
        let mut keeper = self.keeper.clone();
        let record = keeper
            .judge_with(
                self.context(),
                self.ledger.as_ref().map(|l| l as &dyn TestLedger),
                &self.store,
                &baseline,
                &candidate,
                &writes,
                &self.target.gate,
            )
            .await
            .map_err(|e| anyhow::anyhow!("the gate could not decide on {label}: {e}"))?;
        self.keeper = keeper;
        let mut verdict = verdict_of(label, &record);
        if let Some(mut watch) = record.probation.clone() {
            let watched = self.current()?;
            let outcome = watch
                .judge(
                    self.context(),
                    self.keeper.config(),
                    &baseline,
                    &watched,
                    &provenance,
                    &self.config.probation,
                )
                .await
                .map_err(|e| anyhow::anyhow!("the probation of {label} failed: {e}"))?;
            if outcome == ProbationVerdict::Rollback {
                watch.settle(&self.store, &Gate::new(*self.keeper.params())?)?;
                verdict.passed = false;
            }
            verdict.probation = Some(probation_name(outcome, self.config.probation.is_empty()));
        }
        Ok(verdict)
    }

    /// The answers of the store's versions `before` and `after` (texts of
    /// the skill) on the training questions of its task types, for the slow update's
    /// comparison; recorded in the run log like the gate's.
    pub async fn training_answers(
        &self,
        before: &str,
        after: &str,
    ) -> anyhow::Result<(Vec<GeneratedQuestion>, [BTreeMap<String, Prediction>; 2])> {
        // The training questions of the skill's own task types, as for the gate.
        let questions = match &self.target.tasks {
            Some(tasks) => serving(&self.config.train, tasks),
            None => self.config.train.clone(),
        };
        let mut answers: [BTreeMap<String, Prediction>; 2] = Default::default();
        for ((arm, text), slot) in [("before", before), ("after", after)]
            .into_iter()
            .zip(answers.iter_mut())
        {
            let run_id = format!("{}_train_{arm}", self.name);
            let ws = self.target.with_text(format!("train-{arm}"), text);
            let n = u64::try_from(questions.len()).unwrap_or(u64::MAX);
            self.budget
                .reserve_rollouts(n)
                .map_err(|e| anyhow::anyhow!("budget stop: {e}"))?;
            let outcomes = self
                .runner
                .run(&run_id, &ws, &questions)
                .await
                .map_err(|e| anyhow::anyhow!("the agent could not answer: {e}"))?;
            self.log.record(&outcomes).await?;
            *slot = outcomes
                .into_iter()
                .filter(|o| !o.is_infra_error())
                .map(|o| (o.prediction.question_id.clone(), o.prediction))
                .collect();
        }
        Ok((questions, answers))
    }

    /// Stops the agent's workers.
    pub async fn close(self) {
        self.runner.inner().shutdown().await;
    }
}

/// The summary's words for a probation verdict.
fn probation_name(verdict: ProbationVerdict, no_pool: bool) -> String {
    match verdict {
        ProbationVerdict::Confirmed => "confirmed".to_owned(),
        ProbationVerdict::Rollback => "rollback: worse on the held-back questions".to_owned(),
        ProbationVerdict::Unverified if no_pool => {
            "unverified: no probation questions held back ([gate] probation = 0)".to_owned()
        }
        ProbationVerdict::Unverified => {
            "unverified: the held-back questions ran out first".to_owned()
        }
    }
}

/// The verdict of a gate record.
fn verdict_of(label: &str, record: &GateRecord) -> Verdict {
    match &record.validation {
        Some(v) => {
            let decision = if v.decision().is_accept() && !record.accepted {
                format!(
                    "{} but below e-LOND's threshold for this candidate",
                    decision_name(v.decision())
                )
            } else {
                decision_name(v.decision())
            };
            Verdict {
                candidate: label.to_owned(),
                passed: record.accepted,
                decision,
                w: v.w,
                l: v.l,
                e_value: v.verdict.e_value,
                e_confirm: v.e_confirm,
                paired: v.n_used,
                remaining: v.n_remaining,
                rollouts: v.rollouts,
                probation: None,
                validation: Some(v.clone()),
            }
        }
        None => Verdict {
            candidate: label.to_owned(),
            passed: false,
            decision: "not tested: the session's error budget (e-LOND) is spent".to_owned(),
            w: 0,
            l: 0,
            e_value: 1.0,
            e_confirm: record.level.as_ref().map_or(f64::INFINITY, |l| l.threshold),
            paired: 0,
            remaining: 0,
            rollouts: 0,
            probation: None,
            validation: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_compare_without_case_or_spacing() {
        assert_eq!(
            normalized("  What IS\n the  answer? "),
            "what is the answer?"
        );
    }
}
