//! Exact operating characteristics of a gate: how often it accepts, through
//! which exit, and how many discordant pairs it spends, for a candidate that
//! wins each discordant pair with a given probability.

use crate::GateError;
use crate::decision::{Gate, Tally};
use crate::types::GateDecision;

/// The largest budget [`operating_characteristics`] takes (its cost grows as
/// the square of the budget).
pub const MAX_CHARACTERISTICS_BUDGET: u64 = 100_000;

/// What a gate does, in probability, with a budget of discordant pairs.
///
/// The exits partition every run: `accept_confirmed + accept_provisional +
/// reject_directional + reject_futility + reject_inertia = 1` up to rounding.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct OperatingCharacteristics {
    /// Probability of an accept of either kind: the false-accept rate when
    /// the candidate is not better (`p ≤ 1/2`), the power when it is.
    pub accept: f64,
    /// Probability of `accept_confirmed`.
    pub accept_confirmed: f64,
    /// Probability of `accept_provisional`.
    pub accept_provisional: f64,
    /// Probability of a reject of any kind.
    pub reject: f64,
    /// Probability of `reject_directional`.
    pub reject_directional: f64,
    /// Probability of `reject_futility`.
    pub reject_futility: f64,
    /// Probability of `reject_inertia`.
    pub reject_inertia: f64,
    /// Expected number of discordant pairs used before the gate stops.
    pub expected_pairs: f64,
}

/// The exact operating characteristics of `gate` asked after every
/// discordant pair, with at most `budget` pairs, when the candidate wins
/// each pair independently with probability `p`.
///
/// A dynamic program over the counts `(W, L)`: after `n` pairs it asks
/// `gate.decide(&Tally::new(W, L, n, budget − n))` for every count still
/// reachable without an earlier stop, adds the probability of each stopping
/// count to its exit, and moves the rest one pair on. It follows the gate's
/// own decisions, so it is exact up to floating-point rounding (sums of
/// nonnegative terms), and costs `O(budget²)` decisions at most — far fewer
/// when the directional exit cuts the reachable counts short.
///
/// Ties are left out: the budget counts discordant pairs and `n_used` is the
/// pairs so far. A harness that also counts tied questions has a larger
/// `n_used`, which changes only the `delta_min` check of a confirmed accept,
/// and a budget of questions rather than pairs.
///
/// ```
/// use evolution_gate::{Gate, operating_characteristics};
///
/// let thrifty = Gate::preset("thrifty")?;
/// let null = operating_characteristics(&thrifty, 200, 0.5)?;
/// assert!(null.accept <= 0.05 && null.expected_pairs <= 20.0);
/// assert!(operating_characteristics(&thrifty, 200, 0.7)?.accept >= 0.85);
/// # Ok::<(), evolution_gate::GateError>(())
/// ```
///
/// # Errors
/// [`GateError::InvalidWinProbability`] when `p` is not in `[0, 1]`,
/// [`GateError::InvalidBudget`] when `budget` is zero or above
/// [`MAX_CHARACTERISTICS_BUDGET`].
pub fn operating_characteristics(
    gate: &Gate,
    budget: u64,
    p: f64,
) -> Result<OperatingCharacteristics, GateError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(GateError::InvalidWinProbability { p });
    }
    if budget == 0 || budget > MAX_CHARACTERISTICS_BUDGET {
        return Err(GateError::InvalidBudget {
            budget,
            max: MAX_CHARACTERISTICS_BUDGET,
        });
    }
    let q = 1.0 - p;
    let mut out = OperatingCharacteristics::default();
    // `live[w]`: probability of `w` wins among the pairs so far, no exit taken yet.
    let mut live: Vec<f64> = vec![1.0];
    let mut next: Vec<f64> = Vec::new();
    for n in 1..=budget {
        next.clear();
        let mut previous = 0.0_f64;
        for &mass in &live {
            next.push(mass * q + previous * p);
            previous = mass;
        }
        next.push(previous * p);
        let n_remaining = budget - n;
        for (w, mass) in (0_u64..).zip(next.iter_mut()) {
            if *mass == 0.0 {
                continue;
            }
            let verdict = gate.decide(&Tally::new(w, n - w, n, n_remaining))?;
            let exit = match verdict.decision {
                // `decide` never answers `RejectInfra` (it sees no failures).
                GateDecision::Continue | GateDecision::RejectInfra => continue,
                GateDecision::AcceptConfirmed => &mut out.accept_confirmed,
                GateDecision::AcceptProvisional => &mut out.accept_provisional,
                GateDecision::RejectDirectional => &mut out.reject_directional,
                GateDecision::RejectFutility => &mut out.reject_futility,
                GateDecision::RejectInertia => &mut out.reject_inertia,
            };
            *exit += *mass;
            out.expected_pairs += *mass * n as f64;
            *mass = 0.0;
        }
        std::mem::swap(&mut live, &mut next);
    }
    out.accept = out.accept_confirmed + out.accept_provisional;
    out.reject = out.reject_directional + out.reject_futility + out.reject_inertia;
    Ok(out)
}
