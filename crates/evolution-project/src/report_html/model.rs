//! What the HTML report is drawn from: the facts a run adds to
//! `report.json` ([`RunFacts`]), the views that read `report.json` back
//! ([`SavedReport`]), and the [`Inputs`] gathered from the run folder.
//!
//! The views read only the fields the page shows and accept `null` where
//! `report.json` holds a number that was not finite (JSON has no infinity:
//! an e-LOND threshold of a candidate past the horizon, `lambda_dir = −∞`,
//! an e-value beyond `f64`); they never fail on fields they do not know.

use std::collections::BTreeMap;

use evolution_gate::{EProcess, GateDecision, GateParams, ProbationVerdict};
use evolution_harness::{BudgetLimits, GatePoint, Phase, StopReason, Usage};
use serde::{Deserialize, Serialize};

use crate::run::failures::PartFailures;

/// What a run adds to `report.json` for the HTML report: the budget's use
/// (in all and per phase) and caps, and the gate's parameters before any
/// e-LOND level raised them.
#[derive(Debug, Clone, Serialize)]
pub struct RunFacts {
    /// What the run used.
    pub usage: Usage,
    /// What each phase of the run used (`rollout`, `diagnose`, `propose`,
    /// `gate`, `probation`, `slow_update`); the phases add up to `usage`.
    pub usage_by_phase: BTreeMap<Phase, Usage>,
    /// The run's caps.
    pub budget: BudgetLimits,
    /// The gate's parameters.
    pub gate: GateParams,
    /// The failed rollouts (INFRA) of each part of the run, from its run log.
    pub infra_by_phase: Vec<PartFailures>,
}

/// `report.json`, as far as the page needs it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct SavedReport {
    /// The error control the run was under.
    pub error_control: ErrorControl,
    /// Why the run stopped.
    pub stop_reason: StopReason,
    /// Epochs run.
    pub epochs: u32,
    /// The version the run started from.
    pub initial_version: String,
    /// The version it ended with.
    pub final_version: String,
    /// Holdout accuracy of the first version.
    #[serde(default)]
    pub holdout_before: Option<f64>,
    /// Holdout accuracy of the final version.
    #[serde(default)]
    pub holdout_after: Option<f64>,
    /// Every candidate, in the order it was gated.
    pub records: Vec<RecordView>,
    /// What the run used (absent from reports of older versions).
    #[serde(default)]
    pub usage: Option<UsageView>,
    /// What each phase used, by the phase's name (absent from reports of
    /// older versions).
    #[serde(default)]
    pub usage_by_phase: Option<BTreeMap<String, UsageView>>,
    /// The run's caps (absent from reports of older versions).
    #[serde(default)]
    pub budget: Option<BudgetView>,
    /// The gate's parameters (absent from reports of older versions).
    #[serde(default)]
    pub gate: Option<GateView>,
    /// The failed rollouts of each part of the run (absent from reports of older versions).
    #[serde(default)]
    pub infra_by_phase: Vec<PartFailures>,
    /// The proposals dropped before their gate for breaking the project's house rules
    /// (absent from reports of older versions).
    #[serde(default)]
    pub dropped: Vec<DroppedView>,
}

/// A proposal dropped before its gate: a house rule broken, the screen failed, or the
/// epoch's gated candidates used.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct DroppedView {
    /// Its label, as a gated candidate's.
    pub candidate: String,
    /// The 0-based epoch that proposed it.
    pub epoch: u32,
    /// Every check it broke, in words.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// `report.json`'s `error_control`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum ErrorControl {
    /// e-LOND over the run's candidates.
    ELond {
        /// The false-discovery rate controlled.
        fdr_alpha: f64,
        /// The most candidates the run can gate.
        #[serde(default)]
        horizon: Option<u64>,
    },
    /// Each candidate's own bound only.
    Off {
        /// The e-value a confirmed accept needs.
        e_confirm: f64,
        /// The e-value a provisional accept needs.
        e_provisional: f64,
    },
}

/// One candidate's gate record.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct RecordView {
    /// The candidate's label.
    pub candidate: String,
    /// The e-LOND level it was tested at.
    #[serde(default)]
    pub level: Option<LevelView>,
    /// The validation, `None` when it was not gated.
    #[serde(default)]
    pub validation: Option<ValidationView>,
    /// Whether it was accepted.
    pub accepted: bool,
    /// The version it became.
    #[serde(default)]
    pub new_version: Option<String>,
    /// The probation of a provisional accept.
    #[serde(default)]
    pub probation: Option<ProbationView>,
    /// The level the project's ledger (kept across runs) gave it, when one was kept: the
    /// accept needed this threshold too.
    #[serde(default)]
    pub ledger: Option<LevelView>,
}

/// An e-LOND level.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(super) struct LevelView {
    /// 1-based position among the run's candidates.
    pub index: u64,
    /// `α_t`.
    pub alpha_t: f64,
    /// `1/α_t`; `None` when infinite (`α_t = 0`).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Accepts before this candidate.
    pub discoveries_before: u64,
}

/// One candidate's validation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct ValidationView {
    /// The version it was compared with.
    pub baseline_version: String,
    /// Wins.
    pub w: u64,
    /// Losses.
    pub l: u64,
    /// Paired questions.
    pub n_used: u64,
    /// Questions not reached.
    pub n_remaining: u64,
    /// Blocks run.
    pub blocks_used: usize,
    /// The final verdict.
    pub verdict: VerdictView,
    /// The `e_confirm` the gate used (its e-LOND level's when higher).
    #[serde(default)]
    pub e_confirm: Option<f64>,
    /// Question id → (baseline right, candidate right).
    #[serde(default)]
    pub observed: BTreeMap<String, (bool, bool)>,
    /// INFRA failures over both arms.
    #[serde(default)]
    pub infra_errors: u64,
    /// Rollouts run.
    #[serde(default)]
    pub rollouts: u64,
    /// The evidence after each block (empty in older reports).
    #[serde(default)]
    pub trajectory: Vec<GatePoint>,
}

/// The gate's final verdict.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(super) struct VerdictView {
    /// The exit taken.
    pub decision: GateDecision,
    /// `ln E`.
    pub ln_e_value: f64,
    /// Wald's statistic.
    pub wald_lambda: f64,
    /// `(W − L)/n_used`.
    pub delta_hat: f64,
}

/// A probation's state.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct ProbationView {
    /// The version watched.
    pub version: String,
    /// The version it replaced.
    pub previous_version: String,
    /// Wins on the probation pool.
    pub w: u64,
    /// Losses on the probation pool.
    pub l: u64,
    /// The verdict, `None` while pending.
    #[serde(default)]
    pub verdict: Option<ProbationVerdict>,
}

/// What a run used.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(super) struct UsageView {
    /// LLM calls.
    pub llm_calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Money spent (`None` if it was not a finite number).
    #[serde(default)]
    pub cost: Option<f64>,
    /// Agent rollouts.
    pub rollouts: u64,
}

/// A run's caps; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(super) struct BudgetView {
    /// Most LLM calls.
    #[serde(default)]
    pub max_llm_calls: Option<u64>,
    /// Most tokens.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Most money.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// Most rollouts.
    #[serde(default)]
    pub max_rollouts: Option<u64>,
}

/// The gate's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub(super) struct GateView {
    /// E needed to confirm.
    pub e_confirm: f64,
    /// E needed for a provisional accept at exhaustion.
    pub e_provisional: f64,
    /// Net wins a provisional accept needs.
    pub w_net_min: i64,
    /// Smallest `δ̂` of a confirmed accept.
    pub delta_min: f64,
    /// The directional exit's boundary; `None` when it is off (`−∞`).
    #[serde(default)]
    pub lambda_dir: Option<f64>,
    /// The e-process.
    #[serde(default)]
    pub e_process: EProcess,
}

/// A document of the staged proposal, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StagedView {
    /// The document's name in the store.
    pub document: String,
    /// Its version in the user's store once adopted.
    pub adopted_as: Option<String>,
}

/// Correct and usable answers of one holdout run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Score {
    /// Right answers.
    pub right: u64,
    /// Answers scored (INFRA failures left out).
    pub scored: u64,
}

/// Everything the page is drawn from, gathered from a run folder.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Inputs {
    /// The run's name.
    pub run: String,
    /// `report.json`.
    pub report: SavedReport,
    /// Per candidate (by index in `report.records`): its unified diff
    /// against the version it was gated against, when known.
    pub diffs: BTreeMap<usize, String>,
    /// Per candidate: the LLM calls that wrote it, when the run log has them.
    pub writing_calls: BTreeMap<usize, u32>,
    /// The diff of the first version to the final one.
    pub final_diff: String,
    /// The staged documents.
    pub staged: Vec<StagedView>,
    /// Holdout counts (before, after), when the run log has them.
    pub holdout: Option<(Score, Score)>,
}

/// The `report.json` of an `evolve` session, as far as its page needs it.
/// Told from a run's report by its `rounds` and its `gate.mode`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct EvolveReport {
    /// The skill document evolved.
    pub skill: String,
    /// The LLM that proposed.
    #[serde(default)]
    pub provider: String,
    /// Failure trajectories learnt from.
    #[serde(default)]
    pub failures: u64,
    /// Passing trajectories left out.
    #[serde(default)]
    pub passed_trajectories: u64,
    /// The reflection rounds, in order.
    pub rounds: Vec<RoundView>,
    /// Why the rounds stopped, in words.
    #[serde(default)]
    pub stop_reason: String,
    /// LLM calls made.
    #[serde(default)]
    pub llm_calls: u64,
    /// Whether the rounds changed the document.
    #[serde(default)]
    pub changed: bool,
    /// Whether the candidate was written to the skill.
    #[serde(default)]
    pub written: bool,
    /// The version it was written as.
    #[serde(default)]
    pub version: Option<String>,
    /// Where the candidate was saved.
    #[serde(default)]
    pub candidate: Option<String>,
    /// The original to the candidate shown (absent in older reports).
    #[serde(default)]
    pub diff: Option<String>,
    /// Whether and how the candidate was gated.
    pub gate: EvolveGateView,
    /// What `--slow-update` did.
    #[serde(default)]
    pub slow_update: Option<SlowView>,
    /// What each phase used, by the phase's name (absent from older reports).
    #[serde(default)]
    pub usage_by_phase: Option<BTreeMap<String, UsageView>>,
}

/// One reflection round of an `evolve` session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct RoundView {
    /// The round, from 1.
    pub round: u32,
    /// Its edit budget (`None`: no limit).
    #[serde(default)]
    pub budget: Option<u64>,
    /// Failures reflected on.
    #[serde(default)]
    pub trajectories: u64,
    /// Edits proposed after aggregation.
    #[serde(default)]
    pub proposed: u64,
    /// Proposed edits dropped before selection, with why.
    #[serde(default)]
    pub dropped: Vec<String>,
    /// Edits kept.
    #[serde(default)]
    pub selected: Vec<evolution_types::Edit>,
    /// The meta-reflection's judgement.
    #[serde(default)]
    pub meta: MetaView,
    /// The checks of the house rules the candidate broke (it was then dropped).
    #[serde(default)]
    pub breaches: Vec<evolution_evolve::preferences::Breach>,
    /// Whether the candidate became the next round's document.
    #[serde(default)]
    pub accepted: bool,
}

/// The meta-reflection of a round.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct MetaView {
    /// Structural validation errors.
    #[serde(default)]
    pub validation_errors: Vec<String>,
    /// Failures addressed.
    #[serde(default)]
    pub addressed: Vec<String>,
    /// Failures still open, with what is missing.
    #[serde(default)]
    pub unaddressed: Vec<(String, String)>,
    /// The model's one-sentence summary.
    #[serde(default)]
    pub summary: String,
}

/// The gate part of an `evolve` session's report.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct EvolveGateView {
    /// `gated` or `ungated`.
    pub mode: String,
    /// The same in plain words.
    #[serde(default)]
    pub note: String,
    /// The gate's parameters (absent in older reports and when ungated).
    #[serde(default)]
    pub params: Option<GateView>,
    /// One verdict per candidate gated.
    #[serde(default)]
    pub verdicts: Vec<EvolveVerdictView>,
}

/// What the gate said about one candidate of an `evolve` session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct EvolveVerdictView {
    /// The candidate's label.
    pub candidate: String,
    /// Whether it passed.
    pub passed: bool,
    /// The decision, in words.
    #[serde(default)]
    pub decision: String,
    /// The e-value a confirmed accept needed (`None` when infinite).
    #[serde(default)]
    pub e_confirm: Option<f64>,
    /// The probation verdict, when there was one.
    #[serde(default)]
    pub probation: Option<String>,
    /// The gate's evidence (absent in older reports and when not tested).
    #[serde(default)]
    pub validation: Option<ValidationView>,
}

/// What `--slow-update` did.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(super) struct SlowView {
    /// Whether new guidance was written.
    #[serde(default)]
    pub updated: bool,
    /// The guidance now in the region.
    #[serde(default)]
    pub guidance: String,
    /// Why the previous guidance was kept, or why the update did not run.
    #[serde(default)]
    pub note: Option<String>,
    /// What the comparison was made of.
    #[serde(default)]
    pub compared_on: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report as an older version wrote it (no usage, budget, gate or
    /// trajectory), with the `null`s JSON holds for infinite numbers and a
    /// field the views do not know.
    const OLD_REPORT: &str = r#"{
        "error_control": {"kind": "e_lond", "fdr_alpha": 0.05, "horizon": 3},
        "stop_reason": "max_epochs",
        "epochs": 2,
        "initial_version": "v000001",
        "final_version": "v000001",
        "holdout_before": null,
        "holdout_after": null,
        "staged": [],
        "records": [
            {"candidate": "a", "level": {"index": 1, "alpha_t": 0.01, "threshold": 100.0,
              "discoveries_before": 0},
             "validation": {"candidate": "a", "baseline_version": "v000001",
               "baseline_run_id": "b", "candidate_run_id": "c", "w": 6, "l": 0, "n_used": 6,
               "n_remaining": 1, "blocks_used": 1,
               "verdict": {"decision": "reject_futility", "e_value": null,
                 "ln_e_value": 2.9, "wald_lambda": 2.0, "delta_hat": 1.0, "delta_shrunk": 0.6},
               "e_confirm": 100.0, "observed": {"q1": [false, true]}, "infra_errors": 0,
               "rollouts": 12},
             "fdr": null, "accepted": false, "new_version": null, "probation": null},
            {"candidate": "b", "level": {"index": 4, "alpha_t": 0.0, "threshold": null,
              "discoveries_before": 0},
             "validation": null, "fdr": null, "accepted": false, "new_version": null,
             "probation": null}
        ]
    }"#;

    #[test]
    fn an_older_report_with_nulls_reads() {
        let report: SavedReport = serde_json::from_str(OLD_REPORT).unwrap();
        assert_eq!(report.records.len(), 2);
        assert_eq!(report.stop_reason, StopReason::MaxEpochs);
        let first = report.records[0].validation.as_ref().unwrap();
        assert!(first.trajectory.is_empty());
        assert_eq!(first.verdict.decision, GateDecision::RejectFutility);
        assert_eq!(first.observed.get("q1"), Some(&(false, true)));
        assert_eq!(report.records[1].level.unwrap().threshold, None);
        assert!(report.usage.is_none() && report.budget.is_none() && report.gate.is_none());
        assert!(report.usage_by_phase.is_none());
    }

    #[test]
    fn the_facts_a_run_writes_read_back() {
        let mut gate = GateParams::calibrated();
        gate.lambda_dir = f64::NEG_INFINITY;
        let usage = Usage {
            llm_calls: 3,
            prompt_tokens: 10,
            completion_tokens: 5,
            cost: 0.5,
            rollouts: 7,
            host_cost_usd: 1.25,
        };
        let facts = RunFacts {
            usage: usage.clone(),
            usage_by_phase: BTreeMap::from([
                (
                    Phase::Rollout,
                    Usage {
                        rollouts: 7,
                        ..Usage::default()
                    },
                ),
                (
                    Phase::SlowUpdate,
                    Usage {
                        rollouts: 0,
                        ..usage
                    },
                ),
            ]),
            budget: BudgetLimits {
                max_llm_calls: Some(9),
                ..BudgetLimits::default()
            },
            gate,
            infra_by_phase: vec![PartFailures {
                phase: "training".into(),
                rollouts: 4,
                agent_failures: 1,
                judge_failures: 0,
                first_agent_error: Some("crashed".into()),
                first_judge_error: None,
            }],
        };
        let json = serde_json::to_value(&facts).unwrap();
        let failures: Vec<PartFailures> =
            serde_json::from_value(json["infra_by_phase"].clone()).unwrap();
        assert_eq!(failures, facts.infra_by_phase);
        // `−∞` (the directional exit switched off) is `null` in JSON.
        assert!(json["gate"]["lambda_dir"].is_null());
        let usage: UsageView = serde_json::from_value(json["usage"].clone()).unwrap();
        let budget: BudgetView = serde_json::from_value(json["budget"].clone()).unwrap();
        let gate: GateView = serde_json::from_value(json["gate"].clone()).unwrap();
        assert_eq!(
            (usage.llm_calls, usage.cost, usage.rollouts),
            (3, Some(0.5), 7)
        );
        assert_eq!(budget.max_llm_calls, Some(9));
        let phases: BTreeMap<String, UsageView> =
            serde_json::from_value(json["usage_by_phase"].clone()).unwrap();
        assert_eq!(
            phases.keys().map(String::as_str).collect::<Vec<_>>(),
            ["rollout", "slow_update"]
        );
        assert_eq!(phases["slow_update"].llm_calls, 3);
        assert_eq!(gate.lambda_dir, None);
        assert_eq!(gate.e_confirm, 20.0);
    }
}
