//! Block-sequential validation of one candidate against its baseline
//!: the orchestration around the gate's pure decisions.
//!
//! How a failure counts: a question on which only one arm failed (timeout,
//! crash, garbage output, an error the agent reported) is scored against
//! the arm that failed — a loss for the candidate, a win when it was the
//! baseline — whatever the other arm answered ([`evolution_gate::score_pair`]).
//! A failure the candidate's documents caused is evidence against them; left
//! out, it would let a candidate pass by making the agent give up on the
//! questions it would lose. Only a question both arms failed, or one the
//! agent never started on, is left out, and too many of those end the
//! comparison in [`GateDecision::RejectInfra`].

use std::collections::{BTreeMap, BTreeSet};

use evolution_gate::{
    ArmResult, Gate, GateDecision, GateError, GateParams, GateVerdict, PoolBoundary, Tally,
    pair_block, scored_pair,
};
use evolution_types::{
    GeneratedQuestion, NOT_STARTED_STOP_REASON, Prediction, QuestionOutcome, RecordError, RunLog,
    RunLogError, RunRecorder,
};
use serde::{Deserialize, Serialize};

pub use crate::baseline_cache::BaselineCache;
use crate::budget::{Budget, BudgetExceeded};
use crate::calibration::{Calibration, PoolCheck, design_discordance, pool_boundary};
use crate::events::{Arm, EventSink, HarnessEvent};
use crate::failures::{FailureCount, PhaseFailures};
use crate::fdr::TestLevel;
use crate::runner::{AgentRunner, RunnerError, Workspace};

/// The marker every gate run id must contain, so diagnosis can tell gate
/// rollouts from training rollouts and never learn from the gate's questions.
pub const GATE_RUN_MARKER: &str = "_gate_";

/// Settings of block-sequential validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationConfig {
    /// Prefix of the run ids both arms are recorded under; must contain `_gate_`.
    pub gate_run_prefix: String,
    /// Block sizes, in order; the last size repeats until the questions run out.
    pub ladder: Vec<usize>,
    /// Seed of the fixed question order.
    pub seed: u64,
    /// Largest tolerated share of the questions reached that are left out of
    /// the comparison (both arms failed, or the agent never started), checked
    /// from [`INFRA_GUARD_MIN_QUESTIONS`] questions on; past it the candidate
    /// is rejected ([`GateDecision::RejectInfra`]).
    pub gate_guard_err: f64,
    /// Gate thresholds.
    pub params: GateParams,
    /// How accepts are calibrated (the e-process unless set; absent from states saved before
    /// the choice existed).
    #[serde(default)]
    pub calibration: Calibration,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig {
            gate_run_prefix: "run_gate_".to_owned(),
            ladder: vec![10, 20, 40],
            seed: 0,
            gate_guard_err: 0.2,
            params: GateParams::default(),
            calibration: Calibration::EProcess,
        }
    }
}

/// Questions reached (paired or left out) from which the INFRA guard applies.
pub const INFRA_GUARD_MIN_QUESTIONS: u64 = 5;

/// A version proposed to replace the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// A label unique within the run (used in its gate run id).
    pub label: String,
    /// Its documents.
    pub workspace: Workspace,
    /// The questions it was diagnosed or written from; none may be gated on.
    pub provenance: BTreeSet<String>,
}

/// The result of validating one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationOutcome {
    /// The candidate's label.
    pub candidate: String,
    /// The baseline's version.
    pub baseline_version: String,
    /// Run id of the baseline arm.
    pub baseline_run_id: String,
    /// Run id of the candidate arm.
    pub candidate_run_id: String,
    /// Wins: baseline wrong, candidate right — or the baseline's arm alone failed.
    pub w: u64,
    /// Losses: baseline right, candidate wrong — or the candidate's arm alone failed.
    pub l: u64,
    /// Paired questions: ties and one-arm failures included, questions left
    /// out (both arms failed, or never started) not.
    pub n_used: u64,
    /// Questions never reached.
    pub n_remaining: u64,
    /// Blocks run.
    pub blocks_used: usize,
    /// The final gate verdict.
    pub verdict: GateVerdict,
    /// The `e_confirm` the gate used.
    pub e_confirm: f64,
    /// Question id → (baseline counted right, candidate counted right),
    /// paired questions only: the arms' own correctness, except that on a
    /// question only one arm failed the failed arm counts wrong and the other
    /// right ([`evolution_gate::scored_pair`]), so the quadrants add up to `w`
    /// and `l`.
    pub observed: BTreeMap<String, (bool, bool)>,
    /// INFRA failures over both arms (rollouts that gave no usable answer).
    pub infra_errors: u64,
    /// Questions only the candidate's arm failed, each scored as a loss.
    /// Zero in records written before failures were scored.
    #[serde(default)]
    pub candidate_failures: u64,
    /// Questions only the baseline's arm failed, each scored as a win.
    #[serde(default)]
    pub baseline_failures: u64,
    /// Questions left out of the comparison: both arms failed, or the agent
    /// never started on one of them. What the INFRA guard counts.
    #[serde(default)]
    pub excluded: u64,
    /// Rollouts actually run (baseline cache hits excluded).
    pub rollouts: u64,
    /// Where the evidence stood after each block the gate decided on, in
    /// order; the last point is the final verdict's. Empty in records
    /// written before it was kept.
    #[serde(default)]
    pub trajectory: Vec<GatePoint>,
    /// The pool boundary that decided, when the test was calibrated for its pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolCheck>,
}

/// The gate's evidence after one block: the counts so far, `ln E` and the
/// decision taken on them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GatePoint {
    /// Paired questions so far (ties included).
    pub n_used: u64,
    /// Questions not reached yet.
    pub n_remaining: u64,
    /// Wins so far.
    pub w: u64,
    /// Losses so far.
    pub l: u64,
    /// `ln E(W, L)` of the gate's e-process.
    pub ln_e_value: f64,
    /// The decision after this block.
    pub decision: GateDecision,
}

impl ValidationOutcome {
    /// The gate's decision.
    pub fn decision(&self) -> GateDecision {
        self.verdict.decision
    }
}

/// Why validation stopped without a verdict.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The gate run prefix lacks the `_gate_` marker.
    #[error("gate_run_prefix {0:?} must contain \"_gate_\"")]
    PrefixWithoutMarker(String),
    /// No block sizes.
    #[error("the ladder is empty")]
    EmptyLadder,
    /// A block size of zero.
    #[error("the ladder holds a block of size 0")]
    ZeroBlock,
    /// The guard rate is not in `[0, 1]`.
    #[error("gate_guard_err = {0} must lie in [0, 1]")]
    InvalidGuard(f64),
    /// No questions to validate on.
    #[error("no validation questions")]
    NoQuestions,
    /// Two validation questions share an id.
    #[error("validation question {0:?} appears twice")]
    DuplicateQuestion(String),
    /// Gate questions the candidate was diagnosed or written from.
    #[error("split violation: the candidate was derived from gate questions {0:?}")]
    SplitOverlap(Vec<String>),
    /// The runner returned no outcome for a question.
    #[error("the runner returned no outcome for question {0:?}")]
    MissingOutcome(String),
    /// A budget cap was reached.
    #[error("budget stop: {0}")]
    Budget(#[from] BudgetExceeded),
    /// The runner could not run.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// The run log could not be written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The gate refused its input.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The run log could not be read while resuming.
    #[error(transparent)]
    RunLog(#[from] RunLogError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] evolution_types::StoreError),
    /// The FDR controller refused the e-value.
    #[error(transparent)]
    Fdr(#[from] crate::fdr::FdrError),
    /// The ledger of tests kept beyond the run could not be read or written.
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
    /// Most rollouts of a phase gave no usable answer (the agent failed on them, or the
    /// judge scoring them gave no verdict): the run stops, its state kept, instead of
    /// learning and gating on nothing. Running it again after the fix resumes it.
    #[error("{0}")]
    TooManyFailures(Box<PhaseFailures>),
    /// A screen rule that cannot screen ([`crate::ScreenRule::check`]).
    #[error("{0}")]
    InvalidScreen(String),
    /// The baseline given is not the store's current version.
    #[error("baseline {baseline:?} is not the store's current version {current:?}")]
    StaleBaseline {
        /// The version given.
        baseline: String,
        /// The store's current version.
        current: String,
    },
}

/// Gate parameters for a proposal tested by e-LOND at `level`: both accept
/// thresholds, `e_confirm` and `e_provisional`, raised to the level's
/// threshold, so that every accept — a provisional one at exhaustion
/// included — is an e-LOND discovery and the run's false-discovery rate
/// bound covers it. `None` when the level is zero (the proposal cannot be
/// accepted, so gating it would waste rollouts).
pub fn params_for_level(base: &GateParams, level: &TestLevel) -> Option<GateParams> {
    level.threshold.is_finite().then(|| GateParams {
        e_confirm: base.e_confirm.max(level.threshold),
        e_provisional: base.e_provisional.max(level.threshold),
        ..*base
    })
}

/// Fails when any of `gate_questions` is among `provenance`, listing them sorted.
///
/// # Errors
/// [`ValidationError::SplitOverlap`].
pub fn check_split<'a>(
    gate_questions: impl IntoIterator<Item = &'a str>,
    provenance: &BTreeSet<String>,
) -> Result<(), ValidationError> {
    let overlap: BTreeSet<String> = gate_questions
        .into_iter()
        .filter(|id| provenance.contains(*id))
        .map(str::to_owned)
        .collect();
    if overlap.is_empty() {
        Ok(())
    } else {
        Err(ValidationError::SplitOverlap(overlap.into_iter().collect()))
    }
}

/// SplitMix64: a tiny, fully specified generator. The question order must be
/// the same in every build and every version of this crate (a resumed run
/// replays it), which general-purpose RNG crates do not promise.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound > 0`), by rejection so there is no modulo bias.
    fn below(&mut self, bound: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % bound);
        loop {
            let x = self.next();
            if x < zone {
                return x % bound;
            }
        }
    }
}

/// The validation order of `questions` for `seed`: sorted by id, then a
/// Fisher–Yates shuffle. It depends only on the set of ids and the seed,
/// never on the order the caller listed them in.
pub fn fixed_question_order(questions: &[GeneratedQuestion], seed: u64) -> Vec<GeneratedQuestion> {
    let mut ordered = questions.to_vec();
    ordered.sort_by(|a, b| a.question_id.cmp(&b.question_id));
    let mut rng = SplitMix64(seed);
    for i in (1..ordered.len()).rev() {
        let bound = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
        let j = usize::try_from(rng.below(bound)).unwrap_or(0);
        ordered.swap(i, j);
    }
    ordered
}

/// Checks `config` and returns the gate it decides with.
fn check_config(config: &ValidationConfig) -> Result<Gate, ValidationError> {
    if !config.gate_run_prefix.contains(GATE_RUN_MARKER) {
        return Err(ValidationError::PrefixWithoutMarker(
            config.gate_run_prefix.clone(),
        ));
    }
    if config.ladder.is_empty() {
        return Err(ValidationError::EmptyLadder);
    }
    if config.ladder.contains(&0) {
        return Err(ValidationError::ZeroBlock);
    }
    if !(0.0..=1.0).contains(&config.gate_guard_err) {
        return Err(ValidationError::InvalidGuard(config.gate_guard_err));
    }
    // Checking the gate's thresholds here surfaces a bad one before any
    // rollout is spent.
    Ok(Gate::new(config.params)?)
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Runs `questions` for one arm and checks one outcome came back per question.
pub(crate) async fn run_arm(
    ctx: ValidationContext<'_>,
    run_id: &str,
    workspace: &Workspace,
    questions: &[GeneratedQuestion],
    arm: Arm,
) -> Result<(BTreeMap<String, Prediction>, u64), ValidationError> {
    let mut by_id: BTreeMap<String, Prediction> = BTreeMap::new();
    if questions.is_empty() {
        return Ok((by_id, 0));
    }
    // Resuming: answers already in the run log under this run id are reused.
    if let Some(log) = ctx.resume_from {
        let ids: Vec<String> = questions.iter().map(|q| q.question_id.clone()).collect();
        let found = match log.get_predictions(run_id, Some(&ids)).await {
            Ok(found) => found,
            Err(RunLogError::RunNotFound { .. }) => Vec::new(),
            Err(error) => return Err(error.into()),
        };
        for p in found.into_iter().filter(|p| !is_failure(p)) {
            ctx.events.emit(&HarnessEvent::QuestionDone {
                run_id: run_id.to_owned(),
                question_id: p.question_id.clone(),
                arm,
                correct: p.correct,
                infra_error: false,
                cached: true,
            });
            by_id.insert(p.question_id.clone(), p);
        }
    }
    let todo: Vec<GeneratedQuestion> = questions
        .iter()
        .filter(|q| !by_id.contains_key(&q.question_id))
        .cloned()
        .collect();
    let ran = to_u64(todo.len());
    if !todo.is_empty() {
        if let Err(exceeded) = ctx.budget.reserve_rollouts(ran) {
            ctx.events.emit(&HarnessEvent::BudgetStop {
                exceeded: exceeded.clone(),
                usage: ctx.budget.usage(),
            });
            return Err(exceeded.into());
        }
        let outcomes: Vec<QuestionOutcome> = ctx.runner.run(run_id, workspace, &todo).await?;
        ctx.recorder.record(&outcomes).await?;
        for outcome in outcomes {
            ctx.events.emit(&HarnessEvent::QuestionDone {
                run_id: run_id.to_owned(),
                question_id: outcome.prediction.question_id.clone(),
                arm,
                correct: outcome.prediction.correct,
                infra_error: outcome.is_infra_error(),
                cached: false,
            });
            by_id.insert(outcome.prediction.question_id.clone(), outcome.prediction);
        }
    }
    if let Some(missing) = questions
        .iter()
        .find(|q| !by_id.contains_key(&q.question_id))
    {
        return Err(ValidationError::MissingOutcome(missing.question_id.clone()));
    }
    // Training and holdout rollouts run versions already accepted: when most of them fail,
    // the agent (or its judge) is broken, and nothing can be learned from the run.
    if arm == Arm::Plain {
        let count = FailureCount::of(by_id.values());
        if count.stops_a_finished_phase() {
            return Err(too_many_failures(
                crate::phase::Phase::Rollout,
                run_id,
                count,
            ));
        }
    }
    Ok((by_id, ran))
}

/// The error that stops a run on `count`, the failures of `run_id` in `phase`.
pub(crate) fn too_many_failures(
    phase: crate::phase::Phase,
    run_id: &str,
    count: FailureCount,
) -> ValidationError {
    ValidationError::TooManyFailures(Box::new(PhaseFailures {
        phase,
        run_id: run_id.to_owned(),
        count,
    }))
}

/// The services validation uses.
#[derive(Clone, Copy)]
pub struct ValidationContext<'a> {
    /// Runs the agent.
    pub runner: &'a dyn AgentRunner,
    /// Records both arms.
    pub recorder: &'a dyn RunRecorder,
    /// Counts rollouts.
    pub budget: &'a Budget,
    /// Receives progress.
    pub events: &'a dyn EventSink,
    /// When set, answers already recorded under a gate run id are reused
    /// instead of rolled out again, so a killed validation resumes where it
    /// stopped (run ids and question order are deterministic). Usually the
    /// read side of `recorder`.
    pub resume_from: Option<&'a dyn RunLog>,
}

impl std::fmt::Debug for ValidationContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidationContext").finish_non_exhaustive()
    }
}

pub(crate) fn is_failure(p: &Prediction) -> bool {
    crate::failures::is_failure(p)
}

/// What `p` counts as in a paired comparison: not started, failed, right or wrong.
pub(crate) fn arm_result(p: &Prediction) -> ArmResult {
    if p.stop_reason == NOT_STARTED_STOP_REASON {
        ArmResult::NotStarted
    } else if is_failure(p) {
        ArmResult::Failed
    } else if p.correct {
        ArmResult::Right
    } else {
        ArmResult::Wrong
    }
}

/// Validates `candidate` against `baseline` on `questions`, block by block,
/// until the gate reaches a terminal decision or the questions run out.
///
/// Before any rollout: the configuration is checked (`_gate_` marker,
/// non-empty ladder without zero blocks, guard in `[0, 1]`), the questions
/// must be non-empty and unique, and none may be in the candidate's
/// provenance. Then, per block in the fixed order of
/// [`fixed_question_order`]: the baseline arm runs the questions missing
/// from `cache` (run id `<prefix>base_<version>`), the candidate arm runs
/// them all (`<prefix>cand_<label>`), both are recorded, each question is
/// scored with [`evolution_gate::score_pair`] (a failure in one arm only
/// counts against that arm; a question both arms failed, or one the agent
/// never started on, is left out), the INFRA guard is checked over the
/// questions so far, and [`Gate::decide`] decides. When more than
/// `gate_guard_err` of the questions reached (from
/// [`INFRA_GUARD_MIN_QUESTIONS`] on) were left out, or the questions ran out
/// with none paired, the verdict is [`GateDecision::RejectInfra`]: the
/// candidate is rejected and the caller goes on. With
/// [`ValidationContext::resume_from`] set, answers already recorded under
/// the two run ids are reused, so a validation killed at any point resumes
/// without repeating a rollout and reaches the same verdict.
///
/// # Errors
/// See [`ValidationError`]; a budget stop emits [`HarnessEvent::BudgetStop`].
pub async fn validate_candidate(
    ctx: ValidationContext<'_>,
    config: &ValidationConfig,
    baseline: &Workspace,
    candidate: &Candidate,
    questions: &[GeneratedQuestion],
    cache: &mut BaselineCache,
) -> Result<ValidationOutcome, ValidationError> {
    let boundary = match config.calibration {
        Calibration::EProcess => None,
        Calibration::Pool { discordance } => {
            let gate = check_config(config)?;
            let level = 1.0 / config.params.e_confirm;
            let share = design_discordance(discordance);
            pool_boundary(&gate, questions.len(), level, share, &config.ladder)?.map(|b| (b, share))
        }
    };
    let (outcome, _) = validate_keeping_answers(
        ctx,
        config,
        baseline,
        candidate,
        questions,
        cache,
        boundary.as_ref().map(|(b, d)| (b, *d)),
    )
    .await?;
    Ok(outcome)
}

/// [`validate_candidate`], also returning the candidate arm's answers to the
/// questions reached (what carrying them over to the next baseline needs).
pub(crate) async fn validate_keeping_answers(
    ctx: ValidationContext<'_>,
    config: &ValidationConfig,
    baseline: &Workspace,
    candidate: &Candidate,
    questions: &[GeneratedQuestion],
    cache: &mut BaselineCache,
    boundary: Option<(&PoolBoundary, f64)>,
) -> Result<(ValidationOutcome, BTreeMap<String, Prediction>), ValidationError> {
    let gate = check_config(config)?;
    if questions.is_empty() {
        return Err(ValidationError::NoQuestions);
    }
    let mut seen = BTreeSet::new();
    if let Some(dup) = questions
        .iter()
        .find(|q| !seen.insert(q.question_id.as_str()))
    {
        return Err(ValidationError::DuplicateQuestion(dup.question_id.clone()));
    }
    check_split(
        questions.iter().map(|q| q.question_id.as_str()),
        &candidate.provenance,
    )?;

    let order = fixed_question_order(questions, config.seed);
    let mut run = Tallies {
        candidate: candidate.label.clone(),
        baseline_version: baseline.version.clone(),
        baseline_run_id: format!("{}base_{}", config.gate_run_prefix, baseline.version),
        candidate_run_id: format!("{}cand_{}", config.gate_run_prefix, candidate.label),
        e_confirm: config.params.e_confirm,
        ..Tallies::default()
    };
    let total = order.len();
    let mut start = 0_usize;
    // The baseline arm's answers so far: the version it runs is already accepted, so when
    // most of them fail the agent is broken and the run stops (the candidate arm's failures
    // are evidence against the candidate instead).
    let mut baseline_failures = FailureCount::default();
    let mut answers: BTreeMap<String, Prediction> = BTreeMap::new();

    while start < total {
        let size = config
            .ladder
            .get(run.blocks_used)
            .or(config.ladder.last())
            .copied()
            .unwrap_or(1);
        let end = start.saturating_add(size).min(total);
        let items = order.get(start..end).unwrap_or_default();

        // Baseline arm: cache first, then run what is missing.
        let missing: Vec<GeneratedQuestion> = items
            .iter()
            .filter(|q| cache.get(&baseline.version, &q.question_id).is_none())
            .cloned()
            .collect();
        for q in items
            .iter()
            .filter(|q| cache.get(&baseline.version, &q.question_id).is_some())
        {
            if let Some(p) = cache.get(&baseline.version, &q.question_id) {
                ctx.events.emit(&HarnessEvent::QuestionDone {
                    run_id: run.baseline_run_id.clone(),
                    question_id: q.question_id.clone(),
                    arm: Arm::Baseline,
                    correct: p.correct,
                    infra_error: false,
                    cached: true,
                });
            }
        }
        let (fresh, ran) =
            run_arm(ctx, &run.baseline_run_id, baseline, &missing, Arm::Baseline).await?;
        run.rollouts = run.rollouts.saturating_add(ran);
        let mut base: BTreeMap<String, Prediction> = BTreeMap::new();
        for q in items {
            let p = match fresh.get(&q.question_id) {
                Some(p) => p.clone(),
                None => cache
                    .get(&baseline.version, &q.question_id)
                    .cloned()
                    .ok_or_else(|| ValidationError::MissingOutcome(q.question_id.clone()))?,
            };
            base.insert(q.question_id.clone(), p);
        }
        for p in base.values() {
            baseline_failures.add(p);
        }
        if baseline_failures.stops_a_phase_under_way() {
            return Err(too_many_failures(
                crate::phase::Phase::Gate,
                &run.baseline_run_id,
                baseline_failures,
            ));
        }
        for p in fresh.into_values() {
            cache.insert(&baseline.version, p);
        }

        // Candidate arm: every question (unless resumed from the log).
        let (cand, ran) = run_arm(
            ctx,
            &run.candidate_run_id,
            &candidate.workspace,
            items,
            Arm::Candidate,
        )
        .await?;
        run.rollouts = run.rollouts.saturating_add(ran);
        answers.extend(cand.iter().map(|(id, p)| (id.clone(), p.clone())));

        // Scoring: a failure in one arm counts against that arm; a question
        // both arms failed, or one the agent never started on, is left out.
        let mut usable = Vec::new();
        let mut base_correct = BTreeMap::new();
        let mut cand_correct = BTreeMap::new();
        for q in items {
            let (Some(b), Some(c)) = (base.get(&q.question_id), cand.get(&q.question_id)) else {
                return Err(ValidationError::MissingOutcome(q.question_id.clone()));
            };
            run.count(b, c);
            if let Some((b_right, c_right)) = scored_pair(arm_result(b), arm_result(c)) {
                usable.push(q.question_id.as_str());
                base_correct.insert(q.question_id.as_str(), b_right);
                cand_correct.insert(q.question_id.as_str(), c_right);
            }
        }
        let pairs = pair_block(&base_correct, &cand_correct, &usable)?;
        run.w = run.w.saturating_add(pairs.w);
        run.l = run.l.saturating_add(pairs.l);
        run.n_used = run.n_used.saturating_add(to_u64(usable.len()));
        run.observed.extend(pairs.observed);
        start = end;
        run.blocks_used = run.blocks_used.saturating_add(1);
        run.n_remaining = to_u64(total.saturating_sub(start));

        // The INFRA guard, over the questions reached so far.
        let reached = run.n_used.saturating_add(run.excluded);
        #[expect(
            clippy::cast_precision_loss,
            reason = "question counts stay far below 2^53, where the cast is exact"
        )]
        let rate = run.excluded as f64 / reached.max(1) as f64;
        let guard_trips = reached >= INFRA_GUARD_MIN_QUESTIONS && rate > config.gate_guard_err;
        let verdict = if guard_trips || (run.n_used == 0 && run.n_remaining == 0) {
            gate.reject_infra(&run.tally())?
        } else if run.n_used == 0 {
            continue;
        } else if let Some((boundary, _)) = boundary {
            gate.decide_in_pool(&run.tally(), boundary)?
        } else {
            gate.decide(&run.tally())?
        };
        run.trajectory.push(GatePoint {
            n_used: run.n_used,
            n_remaining: run.n_remaining,
            w: run.w,
            l: run.l,
            ln_e_value: verdict.ln_e_value,
            decision: verdict.decision,
        });
        ctx.events.emit(&HarnessEvent::BlockGated {
            candidate: candidate.label.clone(),
            block: run.blocks_used.saturating_sub(1),
            block_size: items.len(),
            w: run.w,
            l: run.l,
            n_used: run.n_used,
            n_remaining: run.n_remaining,
            decision: verdict.decision,
            e_value: verdict.e_value,
            e_confirm: config.params.e_confirm,
            wins_needed: boundary.and_then(|(b, _)| b.min_wins(run.w.saturating_add(run.l))),
            infra_errors: run.infra_errors,
        });
        if verdict.decision.is_terminal() {
            return Ok((run.finish(verdict, boundary), answers));
        }
    }
    // Unreachable: the last block always ends in a terminal verdict (the
    // gate's at `n_remaining = 0`, or `reject_infra` when nothing paired).
    let verdict = gate.reject_infra(&run.tally())?;
    Ok((run.finish(verdict, boundary), answers))
}

/// The counts of one validation so far.
#[derive(Default)]
struct Tallies {
    candidate: String,
    baseline_version: String,
    baseline_run_id: String,
    candidate_run_id: String,
    e_confirm: f64,
    w: u64,
    l: u64,
    n_used: u64,
    n_remaining: u64,
    blocks_used: usize,
    observed: BTreeMap<String, (bool, bool)>,
    trajectory: Vec<GatePoint>,
    infra_errors: u64,
    candidate_failures: u64,
    baseline_failures: u64,
    excluded: u64,
    rollouts: u64,
}

impl Tallies {
    /// Counts the failures of one question's two answers.
    fn count(&mut self, baseline: &Prediction, candidate: &Prediction) {
        let (b, c) = (arm_result(baseline), arm_result(candidate));
        let failed = |r: ArmResult| matches!(r, ArmResult::Failed | ArmResult::NotStarted);
        self.infra_errors = self
            .infra_errors
            .saturating_add(u64::from(failed(b)))
            .saturating_add(u64::from(failed(c)));
        if scored_pair(b, c).is_none() {
            self.excluded = self.excluded.saturating_add(1);
        } else if c == ArmResult::Failed && b != ArmResult::Failed {
            self.candidate_failures = self.candidate_failures.saturating_add(1);
        } else if b == ArmResult::Failed && c != ArmResult::Failed {
            self.baseline_failures = self.baseline_failures.saturating_add(1);
        }
    }

    fn tally(&self) -> Tally {
        Tally::new(self.w, self.l, self.n_used, self.n_remaining)
    }

    fn finish(
        self,
        verdict: GateVerdict,
        boundary: Option<(&PoolBoundary, f64)>,
    ) -> ValidationOutcome {
        let pool = boundary.map(|(b, discordance)| PoolCheck {
            questions: b.questions(),
            level: b.level(),
            false_accept: b.false_accept(),
            discordance,
            wins_needed: b.min_wins(self.w.saturating_add(self.l)),
        });
        ValidationOutcome {
            candidate: self.candidate,
            baseline_version: self.baseline_version,
            baseline_run_id: self.baseline_run_id,
            candidate_run_id: self.candidate_run_id,
            w: self.w,
            l: self.l,
            n_used: self.n_used,
            n_remaining: self.n_remaining,
            blocks_used: self.blocks_used,
            verdict,
            e_confirm: self.e_confirm,
            observed: self.observed,
            infra_errors: self.infra_errors,
            candidate_failures: self.candidate_failures,
            baseline_failures: self.baseline_failures,
            excluded: self.excluded,
            rollouts: self.rollouts,
            trajectory: self.trajectory,
            pool,
        }
    }
}
