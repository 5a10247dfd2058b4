//! One proposal after another: FDR level → block validation → accept
//! (advance the store, start probation if provisional) or reject (its edits
//! blacklisted, with no gate figure).

use std::collections::{BTreeMap, BTreeSet};

use evolution_types::{
    EvolutionRecord, GATE_REJECTED_REASON, GeneratedQuestion, Prediction, RejectedEdit,
};
use serde::{Deserialize, Serialize};

use crate::calibration::{Calibration, DiscordanceTally, design_discordance, pool_boundary};
use crate::events::HarnessEvent;
use crate::fdr::{ELond, FdrDecision, TestLevel};
use crate::ledger::{LedgerOutcome, TestLedger};
use crate::probation::Probation;
use crate::runner::Workspace;
use crate::screen::{ScreenOutcome, ScreenRule, screen_candidate};
use crate::validate::{
    BaselineCache, Candidate, ValidationConfig, ValidationContext, ValidationError,
    ValidationOutcome, fixed_question_order, params_for_level, validate_keeping_answers,
};
use evolution_types::VersionedStore;

/// What happened to one proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRecord {
    /// The candidate's label.
    pub candidate: String,
    /// The level e-LOND gave it (`None` without FDR control).
    pub level: Option<TestLevel>,
    /// The validation, or `None` when the FDR level was zero and no rollout was spent.
    pub validation: Option<ValidationOutcome>,
    /// The FDR test of its final e-value.
    pub fdr: Option<FdrDecision>,
    /// Whether it was accepted (confirmed or provisionally).
    pub accepted: bool,
    /// The store version it became.
    pub new_version: Option<String>,
    /// The watch started for a provisional accept.
    pub probation: Option<Probation>,
    /// The level the ledger kept beyond the run gave it (its `index` counted over the
    /// ledger), when one was used: the candidate needed this threshold too.
    #[serde(default)]
    pub ledger: Option<TestLevel>,
}

impl GateRecord {
    /// The blacklist entries for a rejected candidate: each edit of `record`, marked
    /// [`GATE_REJECTED_REASON`] when it was tested. Empty for an accepted candidate.
    ///
    /// They tell nothing of the gate's outcome (W, L, E, δ̂, the decision's name, the
    /// questions lost): the next proposal is tested on the same gate questions, and a
    /// proposer that knew how close a candidate came could tune its next one to their noise.
    /// The figures stay in this record's [`GateRecord::validation`], for the user.
    pub fn rejected_edits(&self, record: &EvolutionRecord) -> Vec<RejectedEdit> {
        if self.accepted {
            return Vec::new();
        }
        let reason = match &self.validation {
            Some(_) => GATE_REJECTED_REASON,
            None => "not tested: the run's error budget is spent",
        };
        record
            .edits
            .iter()
            .map(|edit| RejectedEdit {
                target_file: record.target_file.clone(),
                edit: edit.clone(),
                reason: reason.to_owned(),
                source_version: record.source_version.clone(),
            })
            .collect()
    }
}

/// Gates a run's proposals in order, with the baseline cache and (optionally)
/// e-LOND error control carried from one to the next. Serializable, so a
/// run can save it and resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gatekeeper {
    config: ValidationConfig,
    fdr: Option<ELond>,
    cache: BaselineCache,
    /// The most gate questions one candidate may draw (`None`: all of them).
    #[serde(default)]
    pool: Option<usize>,
    /// Whether an accepted candidate's answers become its version's cached baseline answers.
    #[serde(default)]
    carry_over: bool,
    /// The screen a candidate passes before its gate, when one is used.
    #[serde(default)]
    screen: Option<ScreenRule>,
    /// The most candidates of one epoch the loop gates, when capped: the best of the
    /// epoch's proposals on the screen ([`crate::run_evolution`]).
    #[serde(default)]
    best_per_epoch: Option<usize>,
    /// The answers each arm gives each gate question, when more than one
    /// ([`Gatekeeper::with_answers_per_question`]).
    #[serde(default)]
    answers_per_question: Option<u32>,
    /// How the answers per question are chosen when the run measures the agent first.
    #[serde(default)]
    auto_answers: Option<crate::repeat::AutoAnswers>,
    /// The agent's self-disagreement, once measured.
    #[serde(default)]
    agent_noise: Option<crate::repeat::AgentNoise>,
    /// The baseline answers of the screens, by version (training questions).
    #[serde(default)]
    screen_cache: BaselineCache,
    /// The answers of the last candidate screened or decided, kept for
    /// [`Gatekeeper::carry_over`] until it is committed.
    #[serde(default)]
    pending: Option<PendingAnswers>,
    /// The discordant pairs of the tests so far, which shape the next pool boundary.
    #[serde(default)]
    discordance: DiscordanceTally,
}

/// A candidate's answers waiting for the version its accept writes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
struct PendingAnswers {
    candidate: String,
    gate: BTreeMap<String, Prediction>,
    screen: BTreeMap<String, Prediction>,
}

impl Gatekeeper {
    /// Gates each proposal on its own at `config.params`.
    pub fn new(config: ValidationConfig) -> Self {
        Gatekeeper {
            config,
            fdr: None,
            cache: BaselineCache::new(),
            pool: None,
            carry_over: false,
            screen: None,
            best_per_epoch: None,
            answers_per_question: None,
            auto_answers: None,
            agent_noise: None,
            screen_cache: BaselineCache::new(),
            pending: None,
            discordance: DiscordanceTally::default(),
        }
    }

    /// Lets each candidate draw at most `questions` gate questions: the first
    /// `questions` of the gate's fixed order ([`crate::fixed_question_order`]
    /// of the questions it is given, with the configuration's seed). Without
    /// it a candidate may draw them all.
    #[must_use]
    pub fn with_pool(mut self, questions: usize) -> Self {
        self.pool = Some(questions);
        self
    }

    /// Carries an accepted candidate's answers over as its version's cached
    /// baseline answers ([`Gatekeeper::carry_over`]), so the next candidate's
    /// baseline arm reruns none of the questions the accepted one answered.
    ///
    /// Exact for an agent that answers a question the same way every time: the
    /// new version's answers are the candidate's. For a stochastic agent the
    /// carried answers are the ones that got the candidate accepted, selected
    /// towards right answers; a baseline that looks at least as good as it is
    /// can only make the next candidate's wins fewer and losses more, so the
    /// next test stays valid, if anything conservative (docs/gate.md,
    /// "A large pool, carry-over and screening").
    #[must_use]
    pub fn with_carry_over(mut self) -> Self {
        self.carry_over = true;
        self
    }

    /// Screens each candidate by `rule` on training questions
    /// ([`Gatekeeper::screen`]) before the caller gates it.
    #[must_use]
    pub fn with_screen(mut self, rule: ScreenRule) -> Self {
        self.screen = Some(rule);
        self
    }

    /// Gates at most `candidates` candidates of each epoch of the loop ([`crate::run_evolution`]):
    /// before any is gated, every proposal of the epoch is screened ([`Gatekeeper::with_screen`],
    /// on training questions), and only the `candidates` that passed with the most net wins
    /// `W − L` go on to the gate, the rest dropped without spending any level; without a
    /// screen, the first `candidates` in the proposer's order. Candidates proposed later in
    /// the epoch (the slow update's) are gated only while the epoch has tests left. The run's
    /// e-LOND horizon can then count `candidates` per epoch instead of every proposal. A
    /// value of 0 counts as 1.
    #[must_use]
    pub fn with_best_per_epoch(mut self, candidates: usize) -> Self {
        self.best_per_epoch = Some(candidates.max(1));
        self
    }

    /// Asks each gate question `answers` times of each arm, each try its own pair
    /// ([`crate::repeat_questions`]): for a stochastic agent, more pairs from the same
    /// questions, so more power on them at the same level (the pool boundary is calibrated
    /// for all the pairs). The claim is then about these questions, given them; for an agent
    /// that answers alike every time a repeat adds only cost. Applied after the pool cap
    /// (which counts questions, not answers); 1 or less asks once, above
    /// [`crate::MAX_ANSWERS_PER_QUESTION`] that many.
    #[must_use]
    pub fn with_answers_per_question(mut self, answers: u32) -> Self {
        self.set_answers(answers);
        self
    }

    /// Sets the answers per question, within `1..=MAX_ANSWERS_PER_QUESTION` (1 stored as none).
    fn set_answers(&mut self, answers: u32) {
        let answers = answers.clamp(1, crate::repeat::MAX_ANSWERS_PER_QUESTION);
        self.answers_per_question = (answers > 1).then_some(answers);
    }

    /// The answers each arm gives each gate question (1 unless set).
    pub fn answers_per_question(&self) -> u32 {
        self.answers_per_question.unwrap_or(1)
    }

    /// Lets the loop choose the answers per question ([`crate::run_evolution`]): before the
    /// first gate test it asks `auto.questions` training questions a second time of the
    /// same version, and [`AutoAnswers::choose`](crate::AutoAnswers::choose) decides from
    /// the share answered differently. Replaces [`Gatekeeper::with_answers_per_question`].
    #[must_use]
    pub fn with_auto_answers(mut self, auto: crate::repeat::AutoAnswers) -> Self {
        self.auto_answers = Some(auto);
        self.answers_per_question = None;
        self
    }

    /// The rule choosing the answers per question, while it has not chosen yet.
    pub fn answers_to_choose(&self) -> Option<crate::repeat::AutoAnswers> {
        self.auto_answers.filter(|_| self.agent_noise.is_none())
    }

    /// Records the agent's measured self-disagreement and the answers per question chosen
    /// from it (for the rest of the run: it is saved with the gatekeeper).
    pub fn settle_answers(&mut self, noise: crate::repeat::AgentNoise, answers: u32) {
        self.agent_noise = Some(noise);
        self.set_answers(answers);
    }

    /// The agent's self-disagreement, when the run measured it.
    pub fn agent_noise(&self) -> Option<crate::repeat::AgentNoise> {
        self.agent_noise
    }

    /// The most candidates of one epoch the loop gates, when capped.
    pub fn best_per_epoch(&self) -> Option<usize> {
        self.best_per_epoch
    }

    /// The screen rule, when candidates are screened.
    pub fn screen_rule(&self) -> Option<&ScreenRule> {
        self.screen.as_ref()
    }

    /// The most gate questions one candidate may draw, when capped.
    pub fn pool(&self) -> Option<usize> {
        self.pool
    }

    /// Whether accepted candidates' answers are carried over.
    pub fn carries_over(&self) -> bool {
        self.carry_over
    }

    /// Screens `candidate` against `baseline` on the training questions
    /// `train` by this gatekeeper's [`ScreenRule`]: `None` without one (every
    /// candidate goes to the gate). A candidate that does not pass is to be
    /// dropped without calling [`Gatekeeper::decide`], so it takes no e-LOND
    /// test: the level goes to the candidates that pass. The baseline's
    /// answers are cached by version; with carry-over the candidate's are kept
    /// for its version if it is then accepted.
    ///
    /// `train` must hold no gate question: the gate's e-value is valid given
    /// the screen because the screen never sees the gate's questions.
    ///
    /// # Errors
    /// [`ValidationError::InvalidScreen`], [`ValidationError::NoQuestions`],
    /// and the runner's, recorder's and budget's errors.
    pub async fn screen(
        &mut self,
        ctx: ValidationContext<'_>,
        baseline: &Workspace,
        candidate: &Candidate,
        train: &[GeneratedQuestion],
    ) -> Result<Option<ScreenOutcome>, ValidationError> {
        let Some(rule) = self.screen else {
            return Ok(None);
        };
        let (outcome, answers) = screen_candidate(
            ctx,
            &self.config,
            &rule,
            baseline,
            candidate,
            train,
            &mut self.screen_cache,
        )
        .await?;
        // The agent's discordance on training questions shapes later pool boundaries too.
        self.discordance
            .add(outcome.w.saturating_add(outcome.l), outcome.questions);
        if self.carry_over && outcome.passed {
            self.pending = Some(PendingAnswers {
                candidate: candidate.label.clone(),
                gate: BTreeMap::new(),
                screen: answers,
            });
        }
        Ok(Some(outcome))
    }

    /// After an accepted `record` was committed ([`Gatekeeper::commit`]):
    /// with carry-over on, the candidate's gate (and screen) answers become
    /// the cached baseline answers of the version it wrote. Does nothing for
    /// a rejected record, without carry-over, or when the answers kept are
    /// another candidate's. [`Gatekeeper::judge`] calls it itself.
    pub fn carry_over(&mut self, record: &GateRecord) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let Some(version) = record.new_version.as_deref().filter(|_| record.accepted) else {
            return;
        };
        if !self.carry_over || pending.candidate != record.candidate {
            return;
        }
        for p in pending.gate.into_values() {
            self.cache.insert(version, p);
        }
        for p in pending.screen.into_values() {
            self.screen_cache.insert(version, p);
        }
    }

    /// Controls the false discovery rate over the proposals with `fdr`: each
    /// proposal's `e_confirm` and `e_provisional` become at least its e-LOND
    /// threshold, so every accept, provisional ones included, is a discovery.
    pub fn with_fdr(mut self, fdr: ELond) -> Self {
        self.fdr = Some(fdr);
        self
    }

    /// The e-LOND state, when enabled.
    pub fn fdr(&self) -> Option<&ELond> {
        self.fdr.as_ref()
    }

    /// The validation settings (probation uses their prefix, order and ladder).
    pub fn config(&self) -> &ValidationConfig {
        &self.config
    }

    /// The gate parameters before any FDR adjustment (probation uses them).
    pub fn params(&self) -> &evolution_gate::GateParams {
        &self.config.params
    }

    /// The discordant pairs and paired questions of the screens and tests so far.
    pub fn discordance(&self) -> DiscordanceTally {
        self.discordance
    }

    /// The baseline cache.
    pub fn cache(&self) -> &BaselineCache {
        &self.cache
    }

    /// Gates `candidate` against `baseline`, which must be the store's
    /// current version; on accept writes `writes` as a new store version:
    /// [`Gatekeeper::decide`], then [`Gatekeeper::commit`].
    ///
    /// Idempotent across a crash: when the store's current version was
    /// written by accepting this same candidate label (its record lost), the
    /// candidate is validated again against that version's parent (from the
    /// run log, no rollouts when resuming); an accept keeps the version, not
    /// written twice, and a reject rolls the store back to the parent, so no
    /// version stays current without a recorded accept.
    ///
    /// A confirmed accept needs `E ≥ max(e_confirm, 1/α_t)`; a provisional
    /// accept (at exhaustion) needs `E ≥ max(e_provisional, 1/α_t)` and is put
    /// on [`Probation`]. Every
    /// proposal's final e-value is fed to e-LOND, whatever the decision.
    ///
    /// A caller that must survive a kill between the decision and the store
    /// write (the loop) calls the two halves itself and saves the decision
    /// in between.
    ///
    /// # Errors
    /// [`ValidationError::StaleBaseline`] when `baseline` is not current,
    /// every validation error, and the store's errors.
    pub async fn judge(
        &mut self,
        ctx: ValidationContext<'_>,
        store: &dyn VersionedStore,
        baseline: &Workspace,
        candidate: &Candidate,
        writes: &BTreeMap<String, String>,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        self.judge_with(ctx, None, store, baseline, candidate, writes, questions)
            .await
    }

    /// [`Gatekeeper::judge`], the candidate also tested by `ledger` (see
    /// [`Gatekeeper::decide_with`]) for the documents it writes.
    ///
    /// # Errors
    /// As [`Gatekeeper::judge`], and the ledger's errors.
    #[expect(
        clippy::too_many_arguments,
        reason = "judge's arguments and the ledger, each distinct"
    )]
    pub async fn judge_with(
        &mut self,
        ctx: ValidationContext<'_>,
        ledger: Option<&dyn TestLedger>,
        store: &dyn VersionedStore,
        baseline: &Workspace,
        candidate: &Candidate,
        writes: &BTreeMap<String, String>,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        let written: Vec<String> = writes.keys().cloned().collect();
        let current = store.current_version()?;
        if let Some(parent) = accepted_earlier(store, &current, &candidate.label)? {
            // A previous attempt accepted this candidate and wrote the store,
            // but its record was lost (the run was killed before saving it).
            // Validate again against the parent — the run log answers every
            // question — and keep the version already written, or undo it.
            let mut parent_ws = baseline.clone();
            parent_ws.version.clone_from(&parent);
            for (name, text) in store.documents(&parent)? {
                if baseline.prompts.contains_key(&name) {
                    parent_ws.prompts.insert(name, text);
                } else {
                    parent_ws.skills.insert(name, text);
                }
            }
            let record = self
                .decide_with(ctx, ledger, &written, &parent_ws, candidate, questions)
                .await?;
            let record = Self::commit(ctx, store, &parent, record, writes)?;
            self.carry_over(&record);
            return Ok(record);
        }
        if current != baseline.version {
            return Err(ValidationError::StaleBaseline {
                baseline: baseline.version.clone(),
                current,
            });
        }
        let record = self
            .decide_with(ctx, ledger, &written, baseline, candidate, questions)
            .await?;
        let record = Self::commit(ctx, store, &baseline.version, record, writes)?;
        self.carry_over(&record);
        Ok(record)
    }

    /// Validates `candidate` against `baseline` at the level e-LOND gives
    /// it and feeds its final e-value to e-LOND: the gate's decision, with
    /// nothing written to the store yet (`new_version` and `probation` are
    /// set by [`Gatekeeper::commit`]). This gatekeeper's state (e-LOND, baseline cache)
    /// then holds the decision: save it together with the returned record,
    /// so that a resumed run neither loses nor repeats the e-LOND test.
    ///
    /// # Errors
    /// Every validation error.
    pub async fn decide(
        &mut self,
        ctx: ValidationContext<'_>,
        baseline: &Workspace,
        candidate: &Candidate,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        self.decide_with(ctx, None, &[], baseline, candidate, questions)
            .await
    }

    /// [`Gatekeeper::decide`], the candidate (writing the documents `written`) also
    /// tested by `ledger`, a record of tests kept beyond the run
    /// ([`TestLedger`]): before any rollout the ledger gives its level and the
    /// gate questions it must not use; the candidate is gated on the others
    /// and needs the higher of the two thresholds, the run's and the
    /// ledger's, so that the false-discovery-rate bound of each holds; the
    /// outcome is then recorded in the ledger. A candidate the ledger gives
    /// level zero, or that has no gate question left, is not gated (no
    /// rollout) and is recorded as such.
    ///
    /// # Errors
    /// As [`Gatekeeper::decide`], and the ledger's errors.
    pub async fn decide_with(
        &mut self,
        ctx: ValidationContext<'_>,
        ledger: Option<&dyn TestLedger>,
        written: &[String],
        baseline: &Workspace,
        candidate: &Candidate,
        questions: &[GeneratedQuestion],
    ) -> Result<GateRecord, ValidationError> {
        let level = self.fdr.as_ref().map(ELond::next_level);
        let test = match ledger {
            Some(ledger) => ledger.open(&candidate.label, written)?,
            None => None,
        };
        let mut questions: Vec<GeneratedQuestion> = match &test {
            Some(test) => questions
                .iter()
                .filter(|q| !test.excluded.contains(&q.question_id))
                .cloned()
                .collect(),
            None => questions.to_vec(),
        };
        if let Some(pool) = self.pool.filter(|&p| p < questions.len()) {
            questions = fixed_question_order(&questions, self.config.seed);
            questions.truncate(pool);
        }
        // Each question asked several times of each arm, when set; the ledger keeps the
        // questions, not the tries.
        let repeated = crate::repeat::repeat_questions(&questions, self.answers_per_question());
        let questions = &repeated.questions;
        // The stricter of the run's level and the ledger's decides the thresholds.
        let strictest = [level, test.as_ref().map(|t| t.level)]
            .into_iter()
            .flatten()
            .max_by(|a, b| a.threshold.total_cmp(&b.threshold));
        let mut config = self.config.clone();
        let params = match &strictest {
            Some(strictest) => params_for_level(&self.config.params, strictest),
            None => Some(self.config.params),
        };
        let ledger_level = test.as_ref().map(|t| t.level);
        // Every gate question already accepted an earlier version: nothing is left to test on.
        let used_up = questions.is_empty() && test.as_ref().is_some_and(|t| !t.excluded.is_empty());
        let Some(params) = params.filter(|_| !used_up) else {
            if let Some(ledger) = ledger.filter(|_| test.is_some()) {
                ledger.close(
                    &candidate.label,
                    written,
                    &LedgerOutcome {
                        e_value: None,
                        decision: None,
                        accepted: false,
                        questions: Vec::new(),
                    },
                )?;
            }
            return Ok(GateRecord {
                candidate: candidate.label.clone(),
                level,
                validation: None,
                fdr: None,
                accepted: false,
                new_version: None,
                probation: None,
                ledger: ledger_level,
            });
        };
        config.params = params;
        // Calibrated for the pool: the boundary at the test's level, shaped for the share of
        // discordant pairs measured so far (or assumed before any).
        let boundary = match config.calibration {
            Calibration::EProcess => None,
            Calibration::Pool { discordance } => {
                let gate = evolution_gate::Gate::new(self.config.params)?;
                let level = strictest
                    .as_ref()
                    .map_or(1.0 / self.config.params.e_confirm, |l| l.alpha_t);
                let share = design_discordance(self.discordance.share_or(discordance));
                pool_boundary(&gate, questions.len(), level, share, &config.ladder)?
                    .map(|b| (b, share))
            }
        };
        let (outcome, answers) = validate_keeping_answers(
            ctx,
            &config,
            baseline,
            candidate,
            questions,
            &mut self.cache,
            boundary.as_ref().map(|(b, share)| (b, *share)),
        )
        .await?;
        self.discordance
            .add(outcome.w.saturating_add(outcome.l), outcome.n_used);
        let decision = outcome.decision();
        // The e-value a test calibrated for its pool hands on: `1{accept}/α_t`, whose mean is
        // at most one when the candidate is not better (the boundary's false-accept rate is at
        // most `α_t`). Otherwise the e-process's own.
        let e_value = match (&boundary, &strictest) {
            (Some(_), Some(level)) if decision.is_accept() => level.threshold,
            (Some((b, _)), None) if decision.is_accept() => 1.0 / b.level(),
            (Some(_), _) => 0.0,
            (None, _) => outcome.verdict.e_value,
        };
        // Under e-LOND an accept is a discovery: the gate accepts and the
        // e-value reaches the level's threshold (the raised parameters make
        // the first imply the second; checking both keeps it so), the
        // ledger's threshold included.
        let ledger_ok = ledger_level.is_none_or(|l| l.alpha_t > 0.0 && e_value >= l.threshold);
        let fdr = match self.fdr.as_mut() {
            Some(fdr) => Some(fdr.record(e_value, decision.is_accept() && ledger_ok)?),
            None => None,
        };
        let accepted = decision.is_accept() && ledger_ok && fdr.is_none_or(|d| d.discovery);
        let screened = self
            .pending
            .take()
            .filter(|p| p.candidate == candidate.label)
            .map(|p| p.screen)
            .unwrap_or_default();
        if self.carry_over && accepted {
            self.pending = Some(PendingAnswers {
                candidate: candidate.label.clone(),
                gate: answers,
                screen: screened,
            });
        }
        if let Some(ledger) = ledger.filter(|_| test.is_some()) {
            ledger.close(
                &candidate.label,
                written,
                &LedgerOutcome {
                    e_value: Some(e_value),
                    decision: Some(decision),
                    accepted,
                    questions: outcome
                        .observed
                        .keys()
                        .map(|id| repeated.original(id).to_owned())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect(),
                },
            )?;
        }
        Ok(GateRecord {
            candidate: candidate.label.clone(),
            level,
            accepted,
            validation: Some(outcome),
            fdr,
            new_version: None,
            probation: None,
            ledger: ledger_level,
        })
    }

    /// Carries out a decided gate `record` ([`Gatekeeper::decide`]) on the
    /// store, whose current version must be `baseline_version`, the version
    /// the candidate was gated against.
    ///
    /// An accept writes `writes` as a new version — or keeps the current
    /// version when a previous attempt already wrote it for this candidate
    /// (killed before the record was saved) — sets `new_version`, and starts
    /// the [`Probation`] of a provisional accept. A reject writes nothing;
    /// when the current version was written by accepting this candidate
    /// before a kill, the store is rolled back to `baseline_version`, so that
    /// only an accept leaves a version of the candidate current. Either way
    /// the decision is announced ([`HarnessEvent::CandidateAccepted`] or
    /// [`HarnessEvent::CandidateRejected`]).
    ///
    /// # Errors
    /// [`ValidationError::StaleBaseline`] when the store is at another
    /// version, and the store's errors.
    pub fn commit(
        ctx: ValidationContext<'_>,
        store: &dyn VersionedStore,
        baseline_version: &str,
        mut record: GateRecord,
        writes: &BTreeMap<String, String>,
    ) -> Result<GateRecord, ValidationError> {
        let current = store.current_version()?;
        let written_before = accepted_earlier(store, &current, &record.candidate)?;
        let stale = || ValidationError::StaleBaseline {
            baseline: baseline_version.to_owned(),
            current: current.clone(),
        };
        let Some(outcome) = record.validation.clone() else {
            // Not gated (e-LOND's level was zero): nothing to write.
            return Ok(record);
        };
        let decision = outcome.decision();
        if record.accepted {
            let version = match written_before {
                Some(parent) if parent == baseline_version => current.clone(),
                Some(_) => return Err(stale()),
                None if current == baseline_version => {
                    let message = format!(
                        "{}: {} (W={}, L={}, E={:.3}, e_confirm={:.3})",
                        record.candidate,
                        decision,
                        outcome.w,
                        outcome.l,
                        outcome.verdict.e_value,
                        outcome.e_confirm
                    );
                    let version = store.advance(writes, &message)?;
                    crate::failpoint::failpoint(crate::failpoint::HEAD_MOVED);
                    version
                }
                None => return Err(stale()),
            };
            ctx.events.emit(&HarnessEvent::CandidateAccepted {
                candidate: record.candidate.clone(),
                decision,
                e_value: outcome.verdict.e_value,
                version: Some(version.clone()),
            });
            if decision == evolution_gate::GateDecision::AcceptProvisional {
                record.probation = Some(Probation::new(&version, baseline_version));
            }
            record.new_version = Some(version);
        } else {
            match written_before {
                Some(parent) if parent == baseline_version => store.rollback(&parent)?,
                Some(_) => return Err(stale()),
                None if current != baseline_version => return Err(stale()),
                None => {}
            }
            ctx.events.emit(&HarnessEvent::CandidateRejected {
                candidate: record.candidate.clone(),
                decision,
                e_value: outcome.verdict.e_value,
            });
        }
        Ok(record)
    }
}

/// The prefix of the store message an accept of `label` writes.
pub(crate) fn accept_message_prefix(label: &str) -> String {
    format!("{label}: accept")
}

/// The parent of `current` when `current` was written by accepting `label`.
pub(crate) fn accepted_earlier(
    store: &dyn VersionedStore,
    current: &str,
    label: &str,
) -> Result<Option<String>, evolution_types::StoreError> {
    let prefix = accept_message_prefix(label);
    Ok(store
        .history()?
        .into_iter()
        .find(|h| h.version == current)
        .filter(|h| h.message.starts_with(&prefix))
        .and_then(|h| h.parent))
}
