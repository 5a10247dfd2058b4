//! Online false-discovery-rate control over a run's proposals: e-LOND.
//!
//! Every candidate the loop gates is one hypothesis test ("this edit does
//! not help"). Gating each at a fixed threshold controls the error of each
//! test, not of the run: fifty proposals at `1/20` each let a few harmful
//! edits through on average. e-LOND (Xu & Ramdas, "Online multiple testing
//! with e-values", AISTATS 2024) controls the false discovery rate of the
//! whole stream, under arbitrary dependence between the tests, by testing
//! proposal `t` at level
//!
//! ```text
//! α_t = α · γ_t · (D_{t−1} + 1)
//! ```
//!
//! where `D_{t−1}` is the number of discoveries before it and `γ` a fixed
//! non-negative sequence with `Σ γ_t ≤ 1`; proposal `t` is a discovery when
//! its e-value reaches `1/α_t`. The gate's e-process, stopped at any time,
//! is a valid e-value, so the gate's final `E` is what is tested here.
//! The module is pure and deterministic: the same e-values in the same order
//! give the same thresholds, so a resumed run replays its history.

use serde::{Deserialize, Serialize};

/// Normalising constant of [`GammaSequence::Lord`] (Javanmard & Montanari's
/// value). With it the infinite sum is 0.97631, not one: the sequence leaves about
/// 2.4 % of the level unspent, and never spends more than the level (a test bounds the
/// sum between the partial sum plus the tail's integral and that plus one more term).
const LORD_GAMMA_CONSTANT: f64 = 0.077_208_38;

/// The spending sequence `γ_t` (1-based `t`); each sums to at most one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GammaSequence {
    /// `γ_t = 1/n` for the first `n` proposals, then 0: best when the run's
    /// number of proposals is bounded in advance (epochs × targets).
    Horizon {
        /// The most proposals the run can make.
        proposals: u64,
    },
    /// `γ_t ∝ ln(max(t, 2)) / (t · e^{√ln t})`: no horizon needed, slowly
    /// decaying (the LORD default). Its terms sum to 0.97631 over all `t`, a little
    /// below one.
    Lord,
    /// `γ_t = 6 / (π² t²)`: no horizon, front-loaded.
    Quadratic,
}

impl GammaSequence {
    /// `γ_t` for 1-based `t` (0 for `t = 0`).
    pub fn gamma(self, t: u64) -> f64 {
        if t == 0 {
            return 0.0;
        }
        // u64 → f64 loses precision only beyond 2^53 proposals, far past any run.
        #[expect(
            clippy::cast_precision_loss,
            reason = "exact below 2^53 proposals, far past any run"
        )]
        let tf = t as f64;
        match self {
            GammaSequence::Horizon { proposals } => {
                if t <= proposals {
                    #[expect(
                        clippy::cast_precision_loss,
                        reason = "exact below 2^53 proposals, far past any run"
                    )]
                    let n = proposals as f64;
                    1.0 / n
                } else {
                    0.0
                }
            }
            GammaSequence::Lord => {
                let ln_t = tf.ln();
                LORD_GAMMA_CONSTANT * tf.max(2.0).ln() / (tf * ln_t.sqrt().exp())
            }
            GammaSequence::Quadratic => 6.0 / (std::f64::consts::PI.powi(2) * tf * tf),
        }
    }
}

/// Why an e-LOND controller could not be built or fed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FdrError {
    /// The target FDR level is not in `(0, 1)`.
    #[error("FDR level alpha = {0} must lie strictly between 0 and 1")]
    InvalidAlpha(f64),
    /// A horizon of zero proposals.
    #[error("the horizon must allow at least one proposal")]
    EmptyHorizon,
    /// An e-value that is negative or NaN.
    #[error("e-value {0} is not a non-negative number")]
    InvalidEValue(f64),
}

/// The level and threshold proposal `index` will be tested at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TestLevel {
    /// 1-based position of the proposal in the run.
    pub index: u64,
    /// `α_t`.
    pub alpha_t: f64,
    /// `1/α_t`: the e-value a discovery needs (`+∞` when `α_t = 0`).
    pub threshold: f64,
    /// Discoveries before this proposal.
    pub discoveries_before: u64,
}

/// One tested proposal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FdrDecision {
    /// Where and how it was tested.
    pub level: TestLevel,
    /// The e-value it brought.
    pub e_value: f64,
    /// Whether it is a discovery (`e_value ≥ threshold`).
    pub discovery: bool,
}

/// The e-LOND controller: hands out each proposal's threshold and records
/// the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ELond {
    alpha: f64,
    gamma: GammaSequence,
    history: Vec<FdrDecision>,
    /// Whether the thresholds come from the online closure (see
    /// [`ELond::with_closure`]); absent in states saved before it existed,
    /// and not written unless set (e-LOND's saved form is unchanged).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    closed: bool,
}

/// The most earlier discoveries the closed threshold searches over: its
/// search visits every subset of them (`2^16` at most); past this many the
/// controller tests at e-LOND's own threshold, which the closure always admits.
pub const CLOSURE_MAX_DISCOVERIES: u64 = 16;

impl ELond {
    /// A controller at FDR level `alpha` spending along `gamma`.
    ///
    /// # Errors
    /// [`FdrError::InvalidAlpha`] unless `0 < alpha < 1`;
    /// [`FdrError::EmptyHorizon`] for a zero horizon.
    pub fn new(alpha: f64, gamma: GammaSequence) -> Result<Self, FdrError> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(FdrError::InvalidAlpha(alpha));
        }
        if gamma == (GammaSequence::Horizon { proposals: 0 }) {
            return Err(FdrError::EmptyHorizon);
        }
        Ok(ELond {
            alpha,
            gamma,
            history: Vec::new(),
            closed: false,
        })
    }

    /// The same controller, testing at the online-closure threshold: never
    /// above e-LOND's, lower once there are discoveries.
    ///
    /// It applies to a [`GammaSequence::Horizon`] of `n` proposals (with any
    /// other sequence the thresholds stay e-LOND's). It closes the
    /// e-collection `e^S = Σ_{i ∈ S} E_i / (n − a_i)`, `a_i` being the
    /// proposals before `i` outside `S`: for the true null set, `a_i` counts
    /// non-nulls only, so the weights of the nulls sum to at most one and
    /// `E[e^N] ≤ 1` whenever each null `E_i` has mean at most one given the
    /// run before it (the gate's stopped e-process on fresh questions; the
    /// hypothesis itself may depend on that past). A proposal is a discovery
    /// only when the accept set with it satisfies
    /// `|S ∩ R| / |R| ≤ α · e^S` for every set `S`, so the false-discovery
    /// proportion is at most `α · e^N` at any time and the FDR at most `α`,
    /// decisions staying irrevocable. With `D` discoveries before it,
    /// proposal `t` needs at least `(n − D) / (α (D + 1))` (exactly that
    /// when the earlier discoveries cleared their thresholds by enough)
    /// instead of e-LOND's `n / (α (D + 1))`: the discoveries' places, which
    /// the nulls' weights need not cover, go to the later tests. The
    /// threshold is the largest over the subsets of the earlier discoveries
    /// (see [`CLOSURE_MAX_DISCOVERIES`]).
    #[must_use]
    pub fn with_closure(mut self) -> Self {
        self.closed = true;
        self
    }

    /// Whether the thresholds come from the online closure.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// A controller that has already tested `e_values`, in order (for resuming a run).
    ///
    /// # Errors
    /// As [`ELond::new`] and [`ELond::test`].
    pub fn replay(
        alpha: f64,
        gamma: GammaSequence,
        e_values: impl IntoIterator<Item = f64>,
    ) -> Result<Self, FdrError> {
        let mut controller = ELond::new(alpha, gamma)?;
        for e in e_values {
            controller.test(e)?;
        }
        Ok(controller)
    }

    /// The target FDR level.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The spending sequence.
    pub fn gamma(&self) -> GammaSequence {
        self.gamma
    }

    /// Discoveries so far.
    pub fn discoveries(&self) -> u64 {
        let count = self.history.iter().filter(|d| d.discovery).count();
        u64::try_from(count).unwrap_or(u64::MAX)
    }

    /// Every tested proposal, in order.
    pub fn history(&self) -> &[FdrDecision] {
        &self.history
    }

    /// The level the next proposal will be tested at.
    pub fn next_level(&self) -> TestLevel {
        let index = u64::try_from(self.history.len())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let discoveries_before = self.discoveries();
        #[expect(
            clippy::cast_precision_loss,
            reason = "exact below 2^53 discoveries, far past any run"
        )]
        let weight = discoveries_before.saturating_add(1) as f64;
        let mut alpha_t = (self.alpha * self.gamma.gamma(index) * weight).min(1.0);
        if let (true, GammaSequence::Horizon { proposals }) = (self.closed, self.gamma)
            && alpha_t > 0.0
            && let Some(closed) = self.closed_threshold(proposals)
        {
            // Never above e-LOND's threshold, never below one.
            alpha_t = alpha_t.max(1.0 / closed.max(1.0));
        }
        let threshold = if alpha_t > 0.0 {
            1.0 / alpha_t
        } else {
            f64::INFINITY
        };
        TestLevel {
            index,
            alpha_t,
            threshold,
            discoveries_before,
        }
    }

    /// The closure's threshold for the next proposal over a horizon of
    /// `proposals`, or `None` past [`CLOSURE_MAX_DISCOVERIES`] discoveries.
    ///
    /// With the discoveries so far `d_1 < … < d_m` and `r = m + 1`, every
    /// accept set containing the next proposal `t` must satisfy, for each
    /// subset `K` of the earlier discoveries,
    /// `E_t / (n − x) + Σ_{i ∈ K} E_i / (n − x_i) ≥ (|K| + 1) / (α r)`, where
    /// `x_i` (`x`) counts the discoveries outside `K` before `i` (`t`): the
    /// least `e^S` over the sets `S` with `S ∩ R = K ∪ {t}` is at least the
    /// left side (non-discoveries in `S` only add to it, those outside it
    /// only raise the weights). The sets without `t` passed at the earlier
    /// discoveries with a larger `1/(α (r − 1))` and the same left sides.
    fn closed_threshold(&self, proposals: u64) -> Option<f64> {
        let earlier: Vec<f64> = self
            .history
            .iter()
            .filter(|d| d.discovery)
            .map(|d| d.e_value)
            .collect();
        let m = u32::try_from(earlier.len()).ok()?;
        if u64::from(m) > CLOSURE_MAX_DISCOVERIES {
            return None;
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "exact below 2^53 proposals, far past any run"
        )]
        let n = proposals as f64;
        let r = f64::from(m + 1);
        let mut worst = f64::NEG_INFINITY;
        for mask in 0u32..(1u32 << m) {
            let mut outside = 0.0_f64;
            let mut sum = 0.0_f64;
            let mut inside = 0.0_f64;
            for (j, e) in earlier.iter().enumerate() {
                if mask & (1 << j) != 0 {
                    sum += e / (n - outside);
                    inside += 1.0;
                } else {
                    outside += 1.0;
                }
            }
            let need = (n - outside) * ((inside + 1.0) / (self.alpha * r) - sum);
            worst = worst.max(need);
        }
        Some(worst)
    }

    /// Tests the next proposal with its e-value and records the outcome.
    ///
    /// # Errors
    /// [`FdrError::InvalidEValue`] for a negative or NaN e-value (nothing is recorded).
    pub fn test(&mut self, e_value: f64) -> Result<FdrDecision, FdrError> {
        self.record(e_value, true)
    }

    /// Tests the next proposal when the caller's own rule may refuse it: a
    /// discovery needs both `accepted` (the caller adopts the proposal) and
    /// an e-value at the threshold. Only adopted proposals count as
    /// discoveries, so the later levels grow with the accepts alone and the
    /// false-discovery rate bound holds for the set of accepts.
    ///
    /// # Errors
    /// [`FdrError::InvalidEValue`] for a negative or NaN e-value (nothing is recorded).
    pub fn record(&mut self, e_value: f64, accepted: bool) -> Result<FdrDecision, FdrError> {
        if e_value.is_nan() || e_value < 0.0 {
            return Err(FdrError::InvalidEValue(e_value));
        }
        let level = self.next_level();
        let decision = FdrDecision {
            level,
            e_value,
            discovery: accepted && level.alpha_t > 0.0 && e_value >= level.threshold,
        };
        self.history.push(decision);
        Ok(decision)
    }
}

/// The declared budget of a ledger of tests that outlives one run: e-LOND's
/// level `alpha` spread over at most `horizon` tests, whichever runs make them.
///
/// Test `k` (1-based, counted over every run that used the ledger) spends
/// `s_k = (alpha − S_{k−1}) / (horizon − k + 1)`, `S_{k−1}` being what the
/// tests before it spent, and is tested at `α_k = s_k · (D_{k−1} + 1)`. With
/// the same `alpha` and `horizon` throughout, `s_k = alpha / horizon` (up to
/// rounding): the threshold of test `k` is `horizon / (alpha · (D_{k−1} + 1))`.
/// A budget changed between runs spreads what is left over the tests left, so
/// the spending never exceeds the largest `alpha` used: `Σ s_k ≤ alpha`, and
/// e-LOND's bound `FDR ≤ Σ s_k` holds over every test of the ledger. Tests
/// past the horizon get level zero.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LedgerBudget {
    /// The level spread over the ledger's tests.
    pub alpha: f64,
    /// The most tests the level is spread over.
    pub horizon: u64,
}

/// What a ledger's tests have spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LedgerSpent {
    /// Tests so far.
    pub tests: u64,
    /// The level they spent, `Σ s_k`.
    pub spent: f64,
    /// Discoveries (accepts) among them.
    pub discoveries: u64,
}

/// The level of a ledger's next test and what it spends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LedgerLevel {
    /// The level, its 1-based `index` counted over the whole ledger.
    pub level: TestLevel,
    /// `s_k`: the share of the budget this test spends (`α_k / (D_{k−1} + 1)`).
    pub spend: f64,
}

impl LedgerBudget {
    /// A budget of `alpha` over `horizon` tests.
    ///
    /// # Errors
    /// [`FdrError::InvalidAlpha`] unless `0 < alpha < 1`; [`FdrError::EmptyHorizon`] for a
    /// zero horizon.
    pub fn new(alpha: f64, horizon: u64) -> Result<Self, FdrError> {
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(FdrError::InvalidAlpha(alpha));
        }
        if horizon == 0 {
            return Err(FdrError::EmptyHorizon);
        }
        Ok(LedgerBudget { alpha, horizon })
    }

    /// The level left to spend after `so_far` (never negative).
    pub fn left(&self, so_far: &LedgerSpent) -> f64 {
        (self.alpha - so_far.spent).max(0.0)
    }

    /// The level and spending of the test after `so_far`.
    pub fn next(&self, so_far: &LedgerSpent) -> LedgerLevel {
        let index = so_far.tests.saturating_add(1);
        let tests_left = self.horizon.saturating_sub(so_far.tests);
        let spend = if tests_left == 0 {
            0.0
        } else {
            #[expect(
                clippy::cast_precision_loss,
                reason = "exact below 2^53 tests, far past any ledger"
            )]
            let share = self.left(so_far) / tests_left as f64;
            share
        };
        #[expect(
            clippy::cast_precision_loss,
            reason = "exact below 2^53 discoveries, far past any ledger"
        )]
        let weight = so_far.discoveries.saturating_add(1) as f64;
        let alpha_t = (spend * weight).min(1.0);
        let threshold = if alpha_t > 0.0 {
            1.0 / alpha_t
        } else {
            f64::INFINITY
        };
        LedgerLevel {
            level: TestLevel {
                index,
                alpha_t,
                threshold,
                discoveries_before: so_far.discoveries,
            },
            spend,
        }
    }

    /// `so_far` after a test at `level` that was (`discovery`) or was not a discovery.
    pub fn after(so_far: &LedgerSpent, level: &LedgerLevel, discovery: bool) -> LedgerSpent {
        LedgerSpent {
            tests: so_far.tests.saturating_add(1),
            spent: so_far.spent + level.spend,
            discoveries: so_far.discoveries.saturating_add(u64::from(discovery)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(gamma: GammaSequence, e_values: &[f64], expect: &[(f64, bool)]) {
        let mut c = ELond::new(0.1, gamma).unwrap();
        for (e, (threshold, discovery)) in e_values.iter().zip(expect) {
            let d = c.test(*e).unwrap();
            assert!(
                d.level.threshold == *threshold
                    || (d.level.threshold - threshold).abs() < 1e-9 * threshold.max(1.0),
                "t={} threshold {} != {threshold}",
                d.level.index,
                d.level.threshold
            );
            assert_eq!(d.discovery, *discovery, "t={}", d.level.index);
        }
    }

    #[test]
    fn horizon_thresholds_shrink_with_each_discovery() {
        // alpha 0.1, gamma 1/5: alpha_t = 0.02 (D+1) → thresholds 50, 25, 16.67.
        check(
            GammaSequence::Horizon { proposals: 5 },
            &[60.0, 24.0, 30.0, 17.0, 1e9, 1e9],
            &[
                (50.0, true),
                (25.0, false),
                (25.0, true),
                (50.0 / 3.0, true),
                (12.5, true),
                (f64::INFINITY, false),
            ],
        );
    }

    #[test]
    fn quadratic_and_lord_sequences() {
        let q = GammaSequence::Quadratic;
        assert!((q.gamma(1) - 6.0 / std::f64::consts::PI.powi(2)).abs() < 1e-15);
        assert!((q.gamma(3) * 9.0 - q.gamma(1)).abs() < 1e-15);
        assert_eq!(GammaSequence::Lord.gamma(0), 0.0);
        // Both sum to at most one (partial sums of a positive series).
        for gamma in [GammaSequence::Lord, GammaSequence::Quadratic] {
            let sum: f64 = (1..=1_000_000).map(|t| gamma.gamma(t)).sum();
            assert!(sum > 0.4 && sum <= 1.0, "{gamma:?}: {sum}");
        }
    }

    /// `ln t / (t e^{√ln t})`, the shape of the LORD sequence before its constant.
    fn lord_shape(t: f64) -> f64 {
        t.max(2.0).ln() / (t * t.ln().sqrt().exp())
    }

    #[test]
    fn the_lord_sequence_sums_to_0_97631_over_all_proposals() {
        // The shape decreases from t = 3 on (its log's derivative is
        // (1/ln t − 1 − 1/(2√ln t))/t < 0 once ln t > 1), so the tail from N lies between
        // the integral from N and that integral plus the N-th term. With u = ln x and
        // v = √u, ∫_N^∞ ln x / (x e^{√ln x}) dx = ∫_a^∞ 2v³ e^{−v} dv
        // = 2 e^{−a} (a³ + 3a² + 6a + 6), a = √ln N.
        const N: u64 = 1_000_000;
        #[expect(clippy::cast_precision_loss, reason = "exact below 2^53")]
        let partial: f64 = (1..N).map(|t| lord_shape(t as f64)).sum();
        #[expect(clippy::cast_precision_loss, reason = "exact below 2^53")]
        let n = N as f64;
        let a = n.ln().sqrt();
        let integral = 2.0 * (-a).exp() * (a.powi(3) + 3.0 * a * a + 6.0 * a + 6.0);
        let lower = LORD_GAMMA_CONSTANT * (partial + integral);
        let upper = LORD_GAMMA_CONSTANT * (partial + integral + lord_shape(n));
        assert!(upper - lower < 1e-7, "{lower} {upper}");
        assert!(lower > 0.976_30 && upper < 0.976_32, "{lower} {upper}");
        // The constant's own terms agree with the shape.
        for t in [1, 2, 3, 10, 1000] {
            #[expect(clippy::cast_precision_loss, reason = "small t")]
            let shape = lord_shape(t as f64);
            let gamma = GammaSequence::Lord.gamma(t);
            assert!((gamma - LORD_GAMMA_CONSTANT * shape).abs() < 1e-15, "{t}");
        }
    }

    #[test]
    fn only_accepted_proposals_count_as_discoveries() {
        // alpha 0.1, gamma 1/5: threshold 50 until a discovery.
        let mut c = ELond::new(0.1, GammaSequence::Horizon { proposals: 5 }).unwrap();
        let refused = c.record(60.0, false).unwrap();
        assert!(!refused.discovery);
        assert!((c.next_level().threshold - 50.0).abs() < 1e-9);
        let low = c.record(40.0, true).unwrap();
        assert!(
            !low.discovery,
            "an accept below the threshold is no discovery"
        );
        assert!(c.record(60.0, true).unwrap().discovery);
        assert_eq!(c.discoveries(), 1);
        assert!((c.next_level().threshold - 25.0).abs() < 1e-9);
    }

    #[test]
    fn bad_inputs_are_errors_and_record_nothing() {
        assert_eq!(
            ELond::new(0.0, GammaSequence::Lord),
            Err(FdrError::InvalidAlpha(0.0))
        );
        assert!(ELond::new(f64::NAN, GammaSequence::Lord).is_err());
        assert!(ELond::new(1.0, GammaSequence::Lord).is_err());
        assert_eq!(
            ELond::new(0.1, GammaSequence::Horizon { proposals: 0 }),
            Err(FdrError::EmptyHorizon)
        );
        let mut c = ELond::new(0.1, GammaSequence::Lord).unwrap();
        assert!(c.test(f64::NAN).is_err());
        assert!(c.test(-1.0).is_err());
        assert!(c.history().is_empty());
        assert_eq!(c.next_level().index, 1);
    }

    #[test]
    fn replay_is_deterministic_and_infinite_e_values_count() {
        // LORD at 0.05: thresholds ≈ 374, 1723, 4460, 1213 (the last doubled by one discovery).
        let es = [3.0, f64::INFINITY, 0.0, 5000.0];
        let a = ELond::replay(0.05, GammaSequence::Lord, es).unwrap();
        let b = ELond::replay(0.05, GammaSequence::Lord, es).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.discoveries(), 2);
        assert_eq!(a.history().len(), 4);
        assert_eq!(a.next_level().discoveries_before, 2);
    }

    #[test]
    fn a_ledger_spreads_its_level_over_its_horizon_across_runs() {
        // alpha 0.05 over 365 tests: every test spends 0.05/365, so the first needs
        // E ≥ 7300, and after one discovery 3650.
        let budget = LedgerBudget::new(0.05, 365).unwrap();
        let mut so_far = LedgerSpent::default();
        let first = budget.next(&so_far);
        assert_eq!(first.level.index, 1);
        assert!((first.level.threshold - 7300.0).abs() < 1e-6);
        so_far = LedgerBudget::after(&so_far, &first, false);
        let second = budget.next(&so_far);
        assert_eq!(second.level.index, 2);
        assert!((second.level.threshold - 7300.0).abs() < 1e-6);
        so_far = LedgerBudget::after(&so_far, &second, true);
        let third = budget.next(&so_far);
        assert!((third.level.threshold - 3650.0).abs() < 1e-6);
        assert_eq!(third.level.discoveries_before, 1);
        // Spent to the end, exactly the budget; past the horizon nothing is left.
        for _ in 2..365 {
            let level = budget.next(&so_far);
            so_far = LedgerBudget::after(&so_far, &level, false);
        }
        assert_eq!(so_far.tests, 365);
        assert!(so_far.spent <= 0.05 * (1.0 + 1e-12), "{}", so_far.spent);
        assert!((so_far.spent - 0.05).abs() < 1e-12);
        let past = budget.next(&so_far);
        assert_eq!(past.spend, 0.0);
        assert_eq!(past.level.threshold, f64::INFINITY);
        assert_eq!(past.level.index, 366);
    }

    #[test]
    fn a_changed_ledger_budget_spreads_what_is_left() {
        // Ten tests at 0.05/100 each, then the horizon is cut to 20: the other ten share
        // what is left, and the whole never exceeds 0.05.
        let wide = LedgerBudget::new(0.05, 100).unwrap();
        let mut so_far = LedgerSpent::default();
        for _ in 0..10 {
            let level = wide.next(&so_far);
            so_far = LedgerBudget::after(&so_far, &level, false);
        }
        assert!((so_far.spent - 0.005).abs() < 1e-15);
        let narrow = LedgerBudget::new(0.05, 20).unwrap();
        let next = narrow.next(&so_far);
        assert!((next.spend - 0.0045).abs() < 1e-15);
        for _ in 10..20 {
            let level = narrow.next(&so_far);
            so_far = LedgerBudget::after(&so_far, &level, false);
        }
        assert!(so_far.spent <= 0.05 * (1.0 + 1e-12));
        // A lower level than already spent leaves nothing.
        let low = LedgerBudget::new(0.01, 1000).unwrap();
        assert_eq!(low.left(&so_far), 0.0);
        assert_eq!(low.next(&so_far).level.threshold, f64::INFINITY);
        assert_eq!(LedgerBudget::new(0.05, 0), Err(FdrError::EmptyHorizon));
        assert!(LedgerBudget::new(1.5, 10).is_err());
    }

    /// A deterministic stream of e-values spanning zero to far past the thresholds.
    fn stream(seed: u64, len: usize) -> Vec<f64> {
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let u = f64::from(u32::try_from(x >> 40).unwrap_or(0)) / f64::from(1u32 << 24);
                // Mostly small, sometimes large: 0 … 400.
                (u * 6.0).exp() - 1.0
            })
            .collect()
    }

    #[test]
    fn closed_thresholds_never_exceed_elonds_and_drop_after_a_discovery() {
        let gamma = GammaSequence::Horizon { proposals: 5 };
        let mut plain = ELond::new(0.1, gamma).unwrap();
        let mut closed = ELond::new(0.1, gamma).unwrap().with_closure();
        assert!(closed.is_closed() && !plain.is_closed());
        // No discovery yet: the same threshold, n / α.
        assert_eq!(closed.next_level(), plain.next_level());
        assert!((closed.next_level().threshold - 50.0).abs() < 1e-9);
        // A discovery exactly at its threshold: the next needs (n − 1) / (2α) = 20
        // instead of n / (2α) = 25.
        for c in [&mut plain, &mut closed] {
            assert!(c.test(50.0).unwrap().discovery);
        }
        assert!((plain.next_level().threshold - 25.0).abs() < 1e-9);
        assert!((closed.next_level().threshold - 20.0).abs() < 1e-9);
        assert!(!plain.test(21.0).unwrap().discovery);
        assert!(closed.test(21.0).unwrap().discovery);
        // Past the horizon nothing is a discovery either way.
        let mut past = ELond::replay(0.1, gamma, [0.0; 5]).unwrap().with_closure();
        assert_eq!(past.next_level().threshold, f64::INFINITY);
        assert!(!past.test(f64::INFINITY).unwrap().discovery);
        // Other sequences keep e-LOND's thresholds.
        let lord = ELond::replay(0.1, GammaSequence::Lord, [1e9, 0.0]).unwrap();
        assert_eq!(lord.clone().with_closure().next_level(), lord.next_level());
    }

    #[test]
    fn the_closure_survives_a_round_trip_and_elonds_saved_form_is_unchanged() {
        let gamma = GammaSequence::Horizon { proposals: 5 };
        let plain = ELond::replay(0.1, gamma, [50.0, 1.0]).unwrap();
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("closed"));
        assert_eq!(serde_json::from_str::<ELond>(&json).unwrap(), plain);
        let closed = plain.with_closure();
        let back: ELond = serde_json::from_str(&serde_json::to_string(&closed).unwrap()).unwrap();
        assert!(back.is_closed());
        assert_eq!(back.next_level(), closed.next_level());
    }

    #[test]
    fn closed_thresholds_are_at_most_elonds_on_any_stream() {
        for seed in 0..200 {
            let gamma = GammaSequence::Horizon { proposals: 30 };
            let mut closed = ELond::new(0.2, gamma).unwrap().with_closure();
            for e in stream(seed, 30) {
                let level = closed.next_level();
                let elond_alpha = (0.2 / 30.0) * (level.discoveries_before + 1) as f64;
                assert!(level.threshold <= 1.0 / elond_alpha.min(1.0) + 1e-9);
                assert!(level.threshold >= 1.0);
                closed.test(e).unwrap();
            }
        }
    }

    /// `e^S` of the closure's e-collection over the first `e.len()` proposals.
    fn e_of_set(n: u64, e: &[f64], set: u32) -> f64 {
        let mut outside = 0.0;
        let mut sum = 0.0;
        for (i, v) in e.iter().enumerate() {
            if set & (1 << i) != 0 {
                sum += v / (n as f64 - outside);
            } else {
                outside += 1.0;
            }
        }
        sum
    }

    #[test]
    fn closed_accept_sets_satisfy_the_closure_for_every_set_at_every_time() {
        // The FDR argument: at every time, for every set S of proposals
        // (the true null set is one), |S ∩ R| / |R| ≤ α e^S.
        let n = 10u64;
        let alpha = 0.3;
        // Accepts e-LOND would have refused: the check is not vacuous.
        let mut below_elond = 0u32;
        for seed in 0..300 {
            let e = stream(seed, 10);
            let mut closed = ELond::new(alpha, GammaSequence::Horizon { proposals: n })
                .unwrap()
                .with_closure();
            let mut accepted = 0u32;
            for (t, &v) in e.iter().enumerate() {
                let decision = closed.test(v).unwrap();
                if decision.discovery {
                    accepted |= 1 << t;
                    let elond = n as f64 / (alpha * (decision.level.discoveries_before + 1) as f64);
                    below_elond += u32::from(v < elond);
                }
                let r = f64::from(accepted.count_ones());
                if r == 0.0 {
                    continue;
                }
                for set in 0u32..(1 << (t + 1)) {
                    let k = f64::from((set & accepted).count_ones());
                    let bound = alpha * e_of_set(n, &e[..=t], set);
                    assert!(k / r <= bound + 1e-9, "seed {seed} t {t} set {set:b}");
                }
            }
        }
        assert!(below_elond > 0);
    }

    #[test]
    fn the_closures_null_weights_sum_to_at_most_one() {
        // For every pattern of nulls over the horizon, Σ_{i null} 1 / (n − a_i) ≤ 1,
        // `a_i` the non-nulls before i: the level the nulls can spend.
        let n = 12u64;
        for nulls in 0u32..(1 << n) {
            let all = (1u32 << n) - 1;
            let ones = vec![1.0; 12];
            assert!(e_of_set(n, &ones, nulls & all) <= 1.0 + 1e-12);
        }
    }
}
