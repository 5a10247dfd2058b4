//! Types of the CE-Gate decision (seed §4.1, §5).

use serde::{Deserialize, Serialize};

/// Thresholds of the e-process gate.
///
/// `Default` is exactly the seed's parameter set. The gate crate checks the
/// values before it uses them (finite, `e_confirm > 1`, ...), so a hand-built
/// set with a NaN is an error there, not a silent wrong decision.
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
    /// A parameter set tuned by the gate's calibration benchmark.
    ///
    /// CALIBRATION-FIGURES
    pub fn calibrated() -> Self {
        GateParams {
            e_confirm: 20.0,
            e_provisional: 20.0,
            w_net_min: 2,
            delta_min: 0.0,
            lambda_dir: -2.0,
            e_rollback: 10.0,
        }
    }
}

/// The exit `gate_decision` took, in the seed's snake_case spelling.
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

/// Outcome of watching a provisionally accepted version (seed §5).
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
