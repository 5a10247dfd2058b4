//! [`Diagnoser`]: the whole pipeline over one run.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use evolution_types::{
    ChatMessage, ChatOptions, DiagnosisResult, ErrorType, GeneratedQuestion, LlmError,
    LlmErrorKind, LlmProvider, LlmResponse, Prediction, Profile, RunLog, SkillStore, StoreError,
    TraceStep,
};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::DiagnoseError;
use crate::attribution::{attribute_error, classify_defect_vs_lapse, classify_reasoning_failure};
use crate::judges::{JudgeContext, JudgeSet, compute_question_metrics_with};
use crate::packs::{
    DiagnosedQuestion, build_skill_case_packs, build_system_case_pack, build_tool_case_packs,
    resolve_target_file,
};
use crate::progress::{DiagnosePass, DiagnoseProgress, Silent};
use crate::prompts::DiagnosePrompts;
use crate::rules::{aggregate_soft, check_profile, ratio};
use crate::stats;

/// What to diagnose and how many LLM calls may run at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagnoseOptions {
    /// Most LLM calls in flight at once (≥ 1).
    pub concurrency: usize,
    /// Only these questions, when set.
    pub question_ids: Option<Vec<String>>,
    /// Only these task types, when set.
    pub task_types: Option<Vec<String>>,
    /// Diagnose wrong answers only (INFRA statistics still cover the whole scope).
    pub only_incorrect: bool,
    /// Which judges run on answers the check scored right.
    pub judges: JudgeScope,
}

impl Default for DiagnoseOptions {
    fn default() -> Self {
        DiagnoseOptions {
            concurrency: 8,
            question_ids: None,
            task_types: None,
            only_incorrect: false,
            judges: JudgeScope::Every,
        }
    }
}

/// Which judges run on an answer the check already scored right. A wrong answer always gets
/// every judge: they explain the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JudgeScope {
    /// Every judge on every answer: the full report (`skill-evolve diagnose`).
    #[default]
    Every,
    /// Only the judges whose verdict on a right answer can change the case packs an edit is
    /// proposed from. On a right answer:
    ///
    /// - evidence sufficiency and missed nodes never run: they only attribute a wrong
    ///   answer's error and rank the failures of its type;
    /// - skill adherence runs only when the answer's task type has a wrong answer in the
    ///   scope: it orders that task's success examples and fills its adherence stats, and
    ///   a task type without a wrong answer gets no skill pack;
    /// - confirmation bias runs only when `system_pack` is true: only the system-prompt
    ///   pack counts it on right answers (its pattern counts and success examples);
    /// - span judges always run: the tool packs take clean and failed spans from right
    ///   answers too.
    ForProposal {
        /// Whether the system-prompt pack will be used (the workspace has a system prompt).
        system_pack: bool,
    },
}

impl JudgeScope {
    /// The judges of one answer: `correct` is the check's score, `task_has_wrong` whether
    /// its task type has a wrong answer in the scope.
    #[must_use]
    pub fn judges(self, correct: bool, task_has_wrong: bool) -> JudgeSet {
        match self {
            JudgeScope::ForProposal { system_pack } if correct => JudgeSet {
                spans: true,
                missed_nodes: false,
                skill_adherence: task_has_wrong,
                confirmation_bias: system_pack,
                evidence_sufficiency: false,
            },
            _ => JudgeSet::ALL,
        }
    }
}

/// An [`LlmProvider`] that lets at most as many calls through as it has permits.
struct Limited<'a> {
    inner: &'a dyn LlmProvider,
    permits: Semaphore,
}

#[async_trait]
impl LlmProvider for Limited<'_> {
    async fn chat(
        &self,
        messages: &[ChatMessage],
        options: &ChatOptions,
    ) -> Result<LlmResponse, LlmError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| LlmError::new(LlmErrorKind::Cancelled, "diagnosis was shut down"))?;
        self.inner.chat(messages, options).await
    }
}

/// The skill text that served a task type: its resolved file, or empty when
/// the store has neither it nor the default file.
fn skill_text(
    store: &dyn SkillStore,
    task_type: &str,
    profile: &Profile,
) -> Result<String, StoreError> {
    let file = resolve_target_file(store, task_type, profile)?;
    match store.read_skill(&file) {
        Ok(text) => Ok(text),
        Err(StoreError::NotFound { .. }) => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// The front door of diagnosis: the prompts, the profile and the options,
/// with the ports a run is read through.
///
/// ```no_run
/// # async fn demo(
/// #     llm: &dyn evolution_types::LlmProvider,
/// #     log: &dyn evolution_types::RunLog,
/// #     skills: &dyn evolution_types::SkillStore,
/// # ) -> Result<(), evolution_diagnose::DiagnoseError> {
/// use evolution_diagnose::{DiagnoseOptions, Diagnoser};
/// let result = Diagnoser::new(llm, log, skills)
///     .with_options(DiagnoseOptions { concurrency: 4, ..DiagnoseOptions::default() })
///     .run("run-1", &[], &Default::default())
///     .await?;
/// println!("{} questions diagnosed", result.n_diagnosed);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Diagnoser<'a> {
    llm: &'a dyn LlmProvider,
    run_log: &'a dyn RunLog,
    skills: &'a dyn SkillStore,
    prompts: DiagnosePrompts,
    profile: Profile,
    options: DiagnoseOptions,
    progress: Option<&'a dyn DiagnoseProgress>,
}

impl std::fmt::Debug for Diagnoser<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagnoser")
            .field("profile", &self.profile)
            .field("options", &self.options)
            .field("progress", &self.progress.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> Diagnoser<'a> {
    /// A diagnoser that calls `llm`, reads runs from `run_log` and skills from
    /// `skills`, with the built-in prompts, the default profile and the
    /// default options.
    #[must_use]
    pub fn new(
        llm: &'a dyn LlmProvider,
        run_log: &'a dyn RunLog,
        skills: &'a dyn SkillStore,
    ) -> Self {
        Diagnoser {
            llm,
            run_log,
            skills,
            prompts: DiagnosePrompts::builtin(),
            profile: Profile::default(),
            options: DiagnoseOptions::default(),
            progress: None,
        }
    }

    /// With these prompts instead of the built-in ones.
    #[must_use]
    pub fn with_prompts(mut self, prompts: DiagnosePrompts) -> Self {
        self.prompts = prompts;
        self
    }

    /// With this profile (the domain constants of the agent; default
    /// `Profile::neutral()`, which names no tool).
    #[must_use]
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// With these options (scope and concurrency).
    #[must_use]
    pub fn with_options(mut self, options: DiagnoseOptions) -> Self {
        self.options = options;
        self
    }

    /// With an observer told of each pass and of every judged item
    /// ([`DiagnoseProgress`]); without one, nothing is told.
    #[must_use]
    pub fn with_progress(mut self, progress: &'a dyn DiagnoseProgress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Diagnoses run `run_id`: Stage 1 per question (a reasoning failure
    /// sub-classified there), then Stage 2. `questions` gives question texts and reference answers,
    /// `tree_data` each source's tree (for the missed-nodes judge); both may
    /// be empty.
    ///
    /// Scope: the run's predictions, narrowed by `question_ids` and
    /// `task_types`. Predictions whose stop reason is one of the profile's
    /// INFRA reasons are counted (`n_infra_errors`, `infra_error_rate` over the
    /// scope) and not diagnosed; `only_incorrect` then narrows what is
    /// diagnosed without changing those counts. A prediction's task type is its
    /// own, or its question's when empty; question text and reference answer
    /// come from `questions` (falling back to the prediction's answer).
    ///
    /// At most `options.concurrency` LLM calls are in flight at once, across
    /// questions and the judges within a question. Results come back in the
    /// run log's question order. A provider error aborts the diagnosis with
    /// [`DiagnoseError::Llm`] (adapters retry transient errors first); unusable
    /// judge replies only degrade their question. The observer given to
    /// [`Diagnoser::with_progress`] hears of both passes and of every item.
    ///
    /// # Errors
    /// [`DiagnoseError::InvalidOptions`] for a concurrency of 0,
    /// [`DiagnoseError::InvalidProfile`] for an unusable profile ([`check_profile`]), and
    /// the run log's, the store's and the provider's errors.
    pub async fn run(
        &self,
        run_id: &str,
        questions: &[GeneratedQuestion],
        tree_data: &BTreeMap<String, Value>,
    ) -> Result<DiagnosisResult, DiagnoseError> {
        run(
            run_id,
            questions,
            tree_data,
            self.llm,
            self.run_log,
            self.skills,
            &self.prompts,
            &self.profile,
            &self.options,
            self.progress.unwrap_or(&Silent),
        )
        .await
    }
}

/// The pipeline behind [`Diagnoser::run`].
#[expect(
    clippy::too_many_arguments,
    reason = "private; takes the diagnoser's fields one by one and is called only by `Diagnoser::run`"
)]
async fn run(
    run_id: &str,
    questions: &[GeneratedQuestion],
    tree_data: &BTreeMap<String, Value>,
    llm: &dyn LlmProvider,
    run_log: &dyn RunLog,
    skill_store: &dyn SkillStore,
    prompts: &DiagnosePrompts,
    profile: &Profile,
    options: &DiagnoseOptions,
    progress: &dyn DiagnoseProgress,
) -> Result<DiagnosisResult, DiagnoseError> {
    if options.concurrency == 0 {
        return Err(DiagnoseError::InvalidOptions(
            "concurrency must be at least 1".to_owned(),
        ));
    }
    check_profile(profile)?;
    let by_id: HashMap<&str, &GeneratedQuestion> = questions
        .iter()
        .map(|q| (q.question_id.as_str(), q))
        .collect();

    let mut scope: Vec<Prediction> = run_log
        .get_predictions(run_id, options.question_ids.as_deref())
        .await?;
    for p in &mut scope {
        if p.task_type.is_empty()
            && let Some(q) = by_id.get(p.question_id.as_str())
        {
            p.task_type.clone_from(&q.task_type);
        }
    }
    scope.retain(|p| {
        options
            .question_ids
            .as_ref()
            .is_none_or(|ids| ids.contains(&p.question_id))
            && options
                .task_types
                .as_ref()
                .is_none_or(|types| types.contains(&p.task_type))
    });
    let n_questions = scope.len();
    let (infra, diagnosable): (Vec<Prediction>, Vec<Prediction>) = scope
        .into_iter()
        .partition(|p| profile.infra_stop_reasons.contains(&p.stop_reason));
    let diagnosable: Vec<Prediction> = diagnosable
        .into_iter()
        .filter(|p| !(options.only_incorrect && p.correct))
        .collect();

    let tasks_with_wrong: std::collections::BTreeSet<String> = diagnosable
        .iter()
        .filter(|p| !p.correct)
        .map(|p| p.task_type.clone())
        .collect();
    let mut traces: HashMap<String, Vec<TraceStep>> = HashMap::new();
    if !diagnosable.is_empty() {
        let ids: Vec<String> = diagnosable.iter().map(|p| p.question_id.clone()).collect();
        for step in run_log.get_traces(run_id, Some(&ids)).await? {
            traces
                .entry(step.question_id.clone())
                .or_default()
                .push(step);
        }
        for steps in traces.values_mut() {
            steps.sort_by_key(|s| s.step);
        }
    }
    let mut skills: BTreeMap<String, String> = BTreeMap::new();
    for p in &diagnosable {
        if !skills.contains_key(&p.task_type) {
            let text = skill_text(skill_store, &p.task_type, profile)?;
            skills.insert(p.task_type.clone(), text);
        }
    }

    let limited = Limited {
        inner: llm,
        permits: Semaphore::new(options.concurrency),
    };
    let llm: &dyn LlmProvider = &limited;
    let records: Vec<DiagnosedQuestion> = diagnosable
        .into_iter()
        .map(|prediction| {
            let q = by_id.get(prediction.question_id.as_str());
            DiagnosedQuestion {
                question: q.map(|q| q.question.clone()).unwrap_or_default(),
                answer: q
                    .map(|q| q.answer.clone())
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| prediction.answer.clone()),
                trace: traces.remove(&prediction.question_id).unwrap_or_default(),
                prediction,
                ..DiagnosedQuestion::default()
            }
        })
        .collect();

    // Stage 1. Questions in flight are bounded too (twice the call limit,
    // enough to keep every permit busy), so a huge run does not hold every
    // question's futures at once.
    let in_flight = options.concurrency.saturating_mul(2);
    progress.pass_started(DiagnosePass::Questions, records.len());
    let mut stage1 = futures_util::stream::iter(records.into_iter().enumerate())
        .map(|(index, mut record)| {
            let skills = &skills;
            let judges = options.judges.judges(
                record.prediction.correct,
                tasks_with_wrong.contains(&record.prediction.task_type),
            );
            let span = tracing::info_span!("diagnose_question", question_id = %record.prediction.question_id);
            let work = async move {
                let question_id = record.prediction.question_id.clone();
                progress.item_started(DiagnosePass::Questions, &question_id);
                let ctx = judge_context(&record, skills, tree_data, profile);
                let metrics = compute_question_metrics_with(llm, prompts, &ctx, judges).await?;
                let attribution = if metrics.correct {
                    None
                } else {
                    let attribution = attribute_error(&metrics);
                    // A reasoning failure's sub-type needs only the attribution, not the
                    // defect-vs-lapse verdict: both calls are made at once (a handed-off run
                    // asks for both in one round).
                    let subtype = async {
                        if attribution.error_type == ErrorType::ReasoningFailure {
                            classify_reasoning_failure(llm, prompts, &ctx, &attribution).await
                        } else {
                            None
                        }
                    };
                    let (mut attribution, subtype) = if metrics.degraded {
                        // No judge evidence: never classified, so never a defect.
                        (attribution.clone(), subtype.await)
                    } else {
                        let classified =
                            classify_defect_vs_lapse(llm, prompts, &ctx, attribution.clone());
                        let (classified, subtype) =
                            futures_util::future::join(classified, subtype).await;
                        (classified?, subtype)
                    };
                    attribution.reasoning_failure_type = subtype;
                    Some(attribution)
                };
                record.metrics = metrics;
                record.attribution = attribution;
                progress.item_finished(DiagnosePass::Questions, &question_id);
                Ok::<_, DiagnoseError>((index, record))
            };
            work.instrument(span)
        })
        .buffer_unordered(in_flight);
    let mut done: Vec<(usize, DiagnosedQuestion)> = Vec::new();
    while let Some(result) = stage1.next().await {
        done.push(result?);
    }
    drop(stage1);
    done.sort_by_key(|(index, _)| *index);
    let diagnosed: Vec<DiagnosedQuestion> = done.into_iter().map(|(_, r)| r).collect();

    // Stage 2.
    let metrics: Vec<_> = diagnosed.iter().map(|r| r.metrics.clone()).collect();
    let attributions: Vec<_> = diagnosed
        .iter()
        .filter_map(|r| r.attribution.clone())
        .collect();
    let mut error_type_counts = BTreeMap::new();
    for a in &attributions {
        *error_type_counts.entry(a.error_type).or_insert(0u64) += 1;
    }
    let tool_stats = stats::tool_stats(&metrics);
    let task_stats = stats::task_stats(&metrics, &attributions);
    let adherence_stats = stats::adherence_stats(&metrics);
    let behavior_stats = stats::behavior_stats(&metrics);
    let skill_packs = build_skill_case_packs(
        &diagnosed,
        &task_stats,
        &adherence_stats,
        skill_store,
        profile,
    )?;
    let system_pack = build_system_case_pack(&diagnosed, profile);
    let tool_packs = build_tool_case_packs(&diagnosed, &tool_stats, profile);

    let n_diagnosed = metrics.len();
    let n_correct = metrics.iter().filter(|m| m.correct).count();
    let soft: Vec<Option<f64>> = metrics.iter().map(|m| m.soft_score).collect();
    Ok(DiagnosisResult {
        run_id: run_id.to_owned(),
        n_questions: n_questions as u64,
        n_diagnosed: n_diagnosed as u64,
        n_correct: n_correct as u64,
        accuracy: (n_diagnosed > 0).then(|| ratio(n_correct, n_diagnosed)),
        soft_score: aggregate_soft(&soft),
        n_infra_errors: infra.len() as u64,
        infra_error_rate: (n_questions > 0).then(|| ratio(infra.len(), n_questions)),
        n_degraded: metrics.iter().filter(|m| m.degraded).count() as u64,
        question_metrics: metrics,
        attributions,
        error_type_counts,
        tool_stats,
        task_stats,
        adherence_stats,
        behavior_stats,
        skill_packs,
        system_pack,
        tool_packs,
    })
}

/// What the judges see of one question: its record, the text of the skill of
/// its task type (empty when none) and its source's tree, when known.
fn judge_context<'a>(
    record: &'a DiagnosedQuestion,
    skills: &'a BTreeMap<String, String>,
    tree_data: &'a BTreeMap<String, Value>,
    profile: &'a Profile,
) -> JudgeContext<'a> {
    JudgeContext {
        prediction: &record.prediction,
        question: &record.question,
        answer: &record.answer,
        trace: &record.trace,
        skill: skills
            .get(&record.prediction.task_type)
            .map_or("", String::as_str),
        tree: tree_data.get(&record.prediction.video_id),
        profile,
    }
}
