//! Screening a candidate on training questions before the gate tests it: a
//! candidate that does not look better there is dropped without spending any
//! of the run's e-LOND level, so the level goes to the candidates that do.
//!
//! The screen never accepts anything: a candidate that passes is still gated
//! on the gate questions at its full e-LOND threshold. Its questions are
//! training questions, never gate questions, so what the screen saw does not
//! enter the gate's e-value (see docs/gate.md, "A large pool, carry-over and screening").

use std::collections::BTreeMap;

use evolution_gate::scored_pair;
use evolution_types::{GeneratedQuestion, Prediction};
use serde::{Deserialize, Serialize};

use crate::events::Arm;
use crate::runner::Workspace;
use crate::validate::{
    BaselineCache, Candidate, GATE_RUN_MARKER, ValidationConfig, ValidationContext,
    ValidationError, arm_result, fixed_question_order, run_arm,
};

/// The marker of a screen's run ids, in place of the gate's `_gate_`: the
/// screen runs on training questions.
pub const SCREEN_RUN_MARKER: &str = "_screen_";

/// How a candidate is screened: paired with the baseline on training
/// questions, `block` at a time, until the net wins `W − L` reach `pass`
/// (gated next) or fall to `drop` (dropped); a candidate still between the
/// two after `questions` training questions is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenRule {
    /// The most training questions one candidate is screened on.
    pub questions: usize,
    /// Net wins at or above which the candidate goes on to the gate.
    pub pass: i64,
    /// Net wins at or below which the candidate is dropped.
    pub drop: i64,
    /// Training questions per look.
    pub block: usize,
}

impl Default for ScreenRule {
    /// Up to 60 training questions, 5 at a time; `W − L ≥ 2` passes, `W − L ≤ −1` drops.
    fn default() -> Self {
        ScreenRule {
            questions: 60,
            pass: 2,
            drop: -1,
            block: 5,
        }
    }
}

impl ScreenRule {
    /// Checks the rule: at least one question, a block of at least one, `drop < 0 < pass`.
    ///
    /// # Errors
    /// [`ValidationError::InvalidScreen`] naming what is wrong.
    pub fn check(&self) -> Result<(), ValidationError> {
        let problem = if self.questions == 0 {
            Some("screens on no question")
        } else if self.block == 0 {
            Some("has a block of 0 questions")
        } else if self.pass <= 0 {
            Some("passes at a net win count of 0 or less")
        } else if self.drop >= 0 {
            Some("drops at a net win count of 0 or more")
        } else {
            None
        };
        match problem {
            Some(p) => Err(ValidationError::InvalidScreen(format!("the screen {p}"))),
            None => Ok(()),
        }
    }
}

/// What screening one candidate found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenOutcome {
    /// The candidate's label.
    pub candidate: String,
    /// Training questions the candidate won (the baseline wrong or failed, it right).
    pub w: u64,
    /// Training questions it lost.
    pub l: u64,
    /// Training questions screened on.
    pub questions: u64,
    /// Whether it goes on to the gate.
    pub passed: bool,
    /// Rollouts run (cached baseline answers excluded).
    pub rollouts: u64,
}

/// The run id prefix of a screen: the gate's prefix with `_screen_` for `_gate_`.
fn screen_prefix(config: &ValidationConfig) -> String {
    config
        .gate_run_prefix
        .replacen(GATE_RUN_MARKER, SCREEN_RUN_MARKER, 1)
}

/// Screens `candidate` against `baseline` on `train` by `rule`; the baseline's
/// answers come from and go to `cache` (by version). Returns the outcome and
/// the candidate's answers.
pub(crate) async fn screen_candidate(
    ctx: ValidationContext<'_>,
    config: &ValidationConfig,
    rule: &ScreenRule,
    baseline: &Workspace,
    candidate: &Candidate,
    train: &[GeneratedQuestion],
    cache: &mut BaselineCache,
) -> Result<(ScreenOutcome, BTreeMap<String, Prediction>), ValidationError> {
    rule.check()?;
    if train.is_empty() {
        return Err(ValidationError::NoQuestions);
    }
    let prefix = screen_prefix(config);
    let base_id = format!("{prefix}base_{}", baseline.version);
    let cand_id = format!("{prefix}cand_{}", candidate.label);
    let order = fixed_question_order(train, config.seed ^ 0x5C8E_E4ED);
    let order = order
        .get(..rule.questions.min(order.len()))
        .unwrap_or_default();
    let mut outcome = ScreenOutcome {
        candidate: candidate.label.clone(),
        w: 0,
        l: 0,
        questions: 0,
        passed: false,
        rollouts: 0,
    };
    let mut answers = BTreeMap::new();
    for items in order.chunks(rule.block) {
        let missing: Vec<GeneratedQuestion> = items
            .iter()
            .filter(|q| cache.get(&baseline.version, &q.question_id).is_none())
            .cloned()
            .collect();
        let (fresh, ran) = run_arm(ctx, &base_id, baseline, &missing, Arm::Baseline).await?;
        outcome.rollouts = outcome.rollouts.saturating_add(ran);
        for p in fresh.into_values() {
            cache.insert(&baseline.version, p);
        }
        let (cand, ran) =
            run_arm(ctx, &cand_id, &candidate.workspace, items, Arm::Candidate).await?;
        outcome.rollouts = outcome.rollouts.saturating_add(ran);
        for q in items {
            let (Some(b), Some(c)) = (
                cache.get(&baseline.version, &q.question_id),
                cand.get(&q.question_id),
            ) else {
                // A baseline answer that could not be cached (the agent failed on
                // it) says nothing here: the question is left out of the screen.
                continue;
            };
            outcome.questions = outcome.questions.saturating_add(1);
            match scored_pair(arm_result(b), arm_result(c)) {
                Some((false, true)) => outcome.w = outcome.w.saturating_add(1),
                Some((true, false)) => outcome.l = outcome.l.saturating_add(1),
                _ => {}
            }
        }
        answers.extend(cand);
        let net = i64::try_from(outcome.w)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(outcome.l).unwrap_or(i64::MAX));
        if net >= rule.pass {
            outcome.passed = true;
            break;
        }
        if net <= rule.drop {
            break;
        }
    }
    Ok((outcome, answers))
}
