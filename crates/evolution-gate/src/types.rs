//! The values the gate takes and returns: its thresholds, its decisions and
//! verdicts, and the outputs of the block-validation helpers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Thresholds of the e-process gate.
///
/// `Default` is exactly the seed's parameter set. [`Gate::new`](crate::Gate::new)
/// checks the values once (finite, `e_confirm > 1`, ...), so a hand-built set
/// with a NaN is an error there, not a silent wrong decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateParams {
    /// E-value at or above which a candidate is accepted outright (with `delta_min`).
    pub e_confirm: f64,
    /// E-value at or above which a candidate is accepted provisionally at exhaustion.
    pub e_provisional: f64,
    /// Minimum net wins `W − L` for a provisional accept.
    pub w_net_min: i64,
    /// Minimum effect size `δ̂ = (W − L) / n_used` for a confirmed accept.
    pub delta_min: f64,
    /// Wald log-likelihood ratio at or below which the candidate is rejected as going the wrong way.
    pub lambda_dir: f64,
    /// Reverse e-value `E(L, W)` at or above which a probation ends in rollback.
    pub e_rollback: f64,
}

impl Default for GateParams {
    fn default() -> Self {
        GateParams {
            e_confirm: 20.0,
            e_provisional: 3.0,
            w_net_min: 2,
            delta_min: 0.02,
            lambda_dir: -0.642,
            e_rollback: 10.0,
        }
    }
}

impl GateParams {
    /// A parameter set tuned with the gate's calibration benchmark
    /// (`cargo run --release -p evolution-gate --example gate_calibration`).
    ///
    /// Differs from the seed's [`Default`] in two fields: `e_provisional = 20`
    /// (every accept then needs `E ≥ 20`, so Ville's inequality bounds the
    /// false-accept rate of the whole gate by 0.05 under any stopping rule) and
    /// `lambda_dir = −2.0` (the seed's −0.642 rejects 42% of candidates with
    /// `p = 0.7`). Measured at a budget of 200 questions, tie rate 0.5, gate
    /// asked after every question (exact dynamic program, confirmed by 100 000
    /// simulated sequences): false accept 0.028 at `p = 0.5`, power 0.86 at
    /// `p = 0.7`, average sample number 23.2 discordant pairs at `p = 0.5`.
    pub fn calibrated() -> Self {
        GateParams {
            e_confirm: 20.0,
            e_provisional: 20.0,
            w_net_min: 2,
            delta_min: 0.02,
            lambda_dir: -2.0,
            e_rollback: 10.0,
        }
    }
}

/// The exit [`Gate::decide`](crate::Gate::decide) took, in the seed's snake_case spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateDecision {
    /// Strong evidence (`E ≥ e_confirm`) and a large enough effect: accept.
    AcceptConfirmed,
    /// Questions exhausted with moderate evidence: accept on probation.
    AcceptProvisional,
    /// The Wald statistic says the candidate is going the wrong way: reject.
    RejectDirectional,
    /// Even winning every remaining pair could not reach `e_confirm`: reject.
    RejectFutility,
    /// Questions exhausted without enough evidence: reject.
    RejectInertia,
    /// Keep validating with the next block.
    Continue,
}

impl GateDecision {
    /// The seed's string for this decision.
    pub fn as_str(self) -> &'static str {
        match self {
            GateDecision::AcceptConfirmed => "accept_confirmed",
            GateDecision::AcceptProvisional => "accept_provisional",
            GateDecision::RejectDirectional => "reject_directional",
            GateDecision::RejectFutility => "reject_futility",
            GateDecision::RejectInertia => "reject_inertia",
            GateDecision::Continue => "continue",
        }
    }

    /// True for both accepting exits.
    pub fn is_accept(self) -> bool {
        matches!(
            self,
            GateDecision::AcceptConfirmed | GateDecision::AcceptProvisional
        )
    }

    /// True for every exit except [`GateDecision::Continue`].
    pub fn is_terminal(self) -> bool {
        self != GateDecision::Continue
    }
}

impl std::fmt::Display for GateDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A gate decision with the statistics it was made from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// Which exit was taken.
    pub decision: GateDecision,
    /// `E(W, L)`, saturated to `f64::INFINITY` when it exceeds `f64`.
    pub e_value: f64,
    /// `ln E(W, L)`: always finite, the value decisions compare.
    pub ln_e_value: f64,
    /// Wald statistic `W·ln 1.4 + L·ln 0.6`.
    pub wald_lambda: f64,
    /// `(W − L) / n_used`.
    pub delta_hat: f64,
    /// `(W − L) / (n_used + 4)`: reported, never decides.
    pub delta_shrunk: f64,
}

/// Outcome of watching a provisionally accepted version ([`Gate::probation`](crate::Gate::probation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbationVerdict {
    /// `E(W, L) ≥ e_confirm`: the version keeps its place.
    Confirmed,
    /// `E(L, W) ≥ e_rollback`: the version should be rolled back.
    Rollback,
    /// Not enough evidence either way yet.
    Unverified,
}

impl ProbationVerdict {
    /// The seed's string for this verdict.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbationVerdict::Confirmed => "confirmed",
            ProbationVerdict::Rollback => "rollback",
            ProbationVerdict::Unverified => "unverified",
        }
    }
}

impl std::fmt::Display for ProbationVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Paired outcomes of one validation block ([`pair_block`](crate::pair_block)).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PairResult {
    /// Questions the baseline got wrong and the candidate right.
    pub w: u64,
    /// Questions the baseline got right and the candidate wrong.
    pub l: u64,
    /// Question id → (baseline correct, candidate correct).
    pub observed: BTreeMap<String, (bool, bool)>,
}

/// The four quadrants of a paired comparison, each sorted by question id
/// ([`classify_quadrants`](crate::classify_quadrants)).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QuadrantClassification {
    /// Wrong before, right now.
    pub improvements: Vec<String>,
    /// Right before, wrong now.
    pub regressions: Vec<String>,
    /// Wrong in both.
    pub persistent_fails: Vec<String>,
    /// Right in both.
    pub stable_successes: Vec<String>,
}
