//! The values the gate takes and returns: its thresholds, its decisions and
//! verdicts, and the outputs of the block-validation helpers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The names [`GateParams::preset`] and [`Gate::preset`](crate::Gate::preset) accept.
///
/// * `seed`: [`GateParams::default`], the original parameters;
/// * `calibrated`: [`GateParams::calibrated`];
/// * `thrifty`: [`GateParams::thrifty`], about as few pairs as Wald's SPRT, anytime-valid;
/// * `thorough`: [`GateParams::thorough`], more power at small effects for about twice the pairs.
pub const PRESET_NAMES: [&str; 4] = ["seed", "calibrated", "thrifty", "thorough"];

/// The evidence the gate accumulates: a nonnegative process with mean one
/// when the candidate wins exactly half of the discordant pairs, and a
/// nonnegative supermartingale when it wins at most half — so Ville's
/// inequality bounds the chance that it *ever* reaches `1/α` by `α`.
///
/// The default is the uniform mixture `E(W, L)` ([`ln_e_value`](crate::ln_e_value)); the
/// JSON of a parameter set that uses it has no `e_process` key, exactly as
/// before the choice existed.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EProcess {
    /// `E(W, L)`: the likelihood ratio averaged over a uniform prior on
    /// `p ∈ [1/2, 1]` against `p = 1/2`. Good at every effect size, best at none.
    #[default]
    UniformMixture,
    /// `(2·alternative)^W · (2·(1 − alternative))^L`: the likelihood ratio of
    /// one alternative `p = alternative` against `p = 1/2`, the statistic of
    /// Wald's sequential probability ratio test. The most power near
    /// `alternative` for the pairs spent; `alternative` must lie strictly
    /// between 1/2 and 1.
    LikelihoodRatio {
        /// The win probability the ratio is tuned to, in `(1/2, 1)`.
        alternative: f64,
    },
}

impl EProcess {
    /// True for [`EProcess::UniformMixture`] (the serde default, left out of the JSON).
    pub fn is_uniform_mixture(&self) -> bool {
        matches!(self, EProcess::UniformMixture)
    }

    /// The logarithm of this e-process after `w` wins and `l` losses.
    ///
    /// Always finite for a parameter set [`Gate::new`](crate::Gate::new) accepted
    /// (`ln 0` would need `alternative = 1`, which it refuses).
    pub fn ln_e_value(&self, w: u64, l: u64) -> f64 {
        match *self {
            EProcess::UniformMixture => crate::evalue::ln_e_value(w, l),
            EProcess::LikelihoodRatio { alternative } => {
                let (ln_win, ln_loss) = likelihood_ratio_steps(alternative);
                w as f64 * ln_win + l as f64 * ln_loss
            }
        }
    }
}

/// `(ln 2a, ln 2(1 − a))`: the log-ratio a win and a loss add.
fn likelihood_ratio_steps(alternative: f64) -> (f64, f64) {
    let excess = 2.0 * alternative - 1.0;
    (excess.ln_1p(), (-excess).ln_1p())
}

/// Thresholds of the e-process gate.
///
/// `Default` is exactly the reference implementation's parameter set. [`Gate::new`](crate::Gate::new)
/// checks the values once (finite, `e_confirm > 1`, ...), so a hand-built set
/// with a NaN is an error there, not a silent wrong decision. Named sets:
/// [`GateParams::preset`] with one of [`PRESET_NAMES`].
#[derive(Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    /// The e-process every threshold above is compared with (default: the uniform mixture).
    #[serde(default, skip_serializing_if = "EProcess::is_uniform_mixture")]
    pub e_process: EProcess,
    /// The tie-aware futility exit, off when `None` (every preset): with a risk `β` in
    /// `(0, 1)`, a candidate is also rejected for futility when it could reach no accept
    /// (`e_confirm`, or `e_provisional` with `w_net_min` net wins at exhaustion) even by
    /// winning every remaining question that can plausibly still be discordant —
    /// `⌈n_remaining · p⁺⌉`, `p⁺` the upper confidence bound at risk `β` of the share of
    /// discordant pairs so far (Chernoff's). A candidate that mostly ties its
    /// baseline stops early instead of at the last questions. It only rejects, so it never
    /// raises the false-accept rate; it can reject a better candidate whose discordant pairs
    /// come late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub futility_risk: Option<f64>,
}

impl std::fmt::Debug for GateParams {
    /// Every field, `futility_risk` only when set: a parameter set without it prints as it
    /// did before the field existed (runs compare this text when they resume).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("GateParams");
        out.field("e_confirm", &self.e_confirm)
            .field("e_provisional", &self.e_provisional)
            .field("w_net_min", &self.w_net_min)
            .field("delta_min", &self.delta_min)
            .field("lambda_dir", &self.lambda_dir)
            .field("e_rollback", &self.e_rollback)
            .field("e_process", &self.e_process);
        if let Some(risk) = self.futility_risk {
            out.field("futility_risk", &risk);
        }
        out.finish()
    }
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
            e_process: EProcess::UniformMixture,
            futility_risk: None,
        }
    }
}

impl GateParams {
    /// A parameter set tuned with the gate's calibration benchmark
    /// (`cargo run --release -p evolution-gate --example gate_calibration`).
    ///
    /// Differs from the reference implementation's [`Default`] in two fields: `e_provisional = 20`
    /// (every accept then needs `E ≥ 20`, so Ville's inequality bounds the
    /// false-accept rate of the whole gate by 0.05 under any stopping rule) and
    /// `lambda_dir = −2.0` (the reference implementation's −0.642 rejects 42% of candidates with
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
            e_process: EProcess::UniformMixture,
            futility_risk: None,
        }
    }

    /// The preset `thrifty`: Wald's likelihood ratio of `p = 0.7` against
    /// `p = 1/2` as the e-process, every accept at `E ≥ 20`, and the
    /// directional exit at `λ ≤ −1.7`.
    ///
    /// It is Wald's SPRT (0.7 against 0.5) with its upper boundary raised from
    /// `(1 − β)/α = 16` to 20, which makes it anytime-valid: false accept at
    /// most 1/20 = 0.05 under any stopping rule. By the exact dynamic program
    /// ([`operating_characteristics`](crate::operating_characteristics), budget
    /// 200 discordant pairs): at most 20 expected pairs on a candidate that is
    /// not better (19.4) and power at least 0.85 at `p = 0.7` (0.851).
    pub fn thrifty() -> Self {
        GateParams {
            e_confirm: 20.0,
            e_provisional: 20.0,
            w_net_min: 2,
            delta_min: 0.02,
            lambda_dir: -1.7,
            e_rollback: 10.0,
            e_process: EProcess::LikelihoodRatio { alternative: 0.7 },
            futility_risk: None,
        }
    }

    /// The preset `thorough`: the likelihood ratio of `p = 0.65` against
    /// `p = 1/2` as the e-process, every accept at `E ≥ 20`, and the
    /// directional exit at `λ ≤ −3.7` (Wald's 0.7 statistic, as for every gate).
    ///
    /// Anytime-valid at 1/20 = 0.05. By the exact dynamic program at budget
    /// 200: power at least 0.55 at `p = 0.6` (0.563) and at least 0.97 at
    /// `p = 0.7` (0.981), for about 42 expected pairs on a candidate that is
    /// not better.
    pub fn thorough() -> Self {
        GateParams {
            e_confirm: 20.0,
            e_provisional: 20.0,
            w_net_min: 2,
            delta_min: 0.02,
            lambda_dir: -3.7,
            e_rollback: 10.0,
            e_process: EProcess::LikelihoodRatio { alternative: 0.65 },
            futility_risk: None,
        }
    }

    /// The parameter set called `name`, one of [`PRESET_NAMES`].
    ///
    /// # Errors
    /// [`GateError::UnknownPreset`](crate::GateError::UnknownPreset) for any other name.
    pub fn preset(name: &str) -> Result<Self, crate::GateError> {
        match name {
            "seed" => Ok(GateParams::default()),
            "calibrated" => Ok(GateParams::calibrated()),
            "thrifty" => Ok(GateParams::thrifty()),
            "thorough" => Ok(GateParams::thorough()),
            _ => Err(crate::GateError::UnknownPreset {
                name: name.to_owned(),
            }),
        }
    }
}

/// The exit [`Gate::decide`](crate::Gate::decide) took, in the reference implementation's snake_case spelling.
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
    /// Too many questions could not be compared (both arms failed, or the
    /// agent never started) for the rest to be trusted: reject. Not an exit
    /// of [`Gate::decide`](crate::Gate::decide): the caller that counts the
    /// left-out questions takes it ([`Gate::reject_infra`](crate::Gate::reject_infra)).
    RejectInfra,
    /// Keep validating with the next block.
    Continue,
}

impl GateDecision {
    /// The reference implementation's string for this decision.
    pub fn as_str(self) -> &'static str {
        match self {
            GateDecision::AcceptConfirmed => "accept_confirmed",
            GateDecision::AcceptProvisional => "accept_provisional",
            GateDecision::RejectDirectional => "reject_directional",
            GateDecision::RejectFutility => "reject_futility",
            GateDecision::RejectInertia => "reject_inertia",
            GateDecision::RejectInfra => "reject_infra",
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

/// What one arm of a paired comparison produced for one question.
///
/// The gate ranks them `Failed < Wrong < Right`: a failure is worse than any
/// answer, a wrong one included, because the version under test caused it as
/// far as anyone can tell. `NotStarted` has no rank: nothing of the arm's
/// documents ran, so the question says nothing about them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArmResult {
    /// Answered and judged right.
    Right,
    /// Answered and judged wrong.
    Wrong,
    /// The agent ran with this arm's documents and gave no usable answer: it
    /// timed out, crashed, wrote garbage, broke the protocol or reported an error.
    Failed,
    /// The agent never started on the question: its program could not be
    /// started, or the question could not be handed to it.
    NotStarted,
}

/// How one question counts in a paired comparison ([`score_pair`](crate::score_pair)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairScore {
    /// The candidate did better: a discordant pair it won.
    Win,
    /// The baseline did better: a discordant pair it lost.
    Loss,
    /// Both right, or both wrong: paired, says nothing about which is better.
    Tie,
    /// Left out of the comparison: both arms failed, or an arm never started.
    Excluded,
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
    /// The reference implementation's string for this verdict.
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
