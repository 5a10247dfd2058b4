//! The oracle rule: a likelihood-ratio e-process that knows each
//! candidate's true visible effect, under e-LOND.
//!
//! For each proposal the oracle computes, from the world's model, the
//! chance `q` that a discordant pair is a win against the current skill,
//! and bets on exactly that alternative: `E = (2q)^W (2(1 − q))^L`, the
//! growth-optimal e-process for it. A candidate with `q ≤ 1/2` is rejected
//! untested (no e-process for it can beat a coin flip). It walks the gate
//! questions in order and stops at the first of: `E` reaches the
//! proposal's e-LOND threshold (accept), the threshold is out of reach
//! even if every remaining question were a win (reject), the questions run
//! out (reject). No real rule knows `q`: this row shows what betting
//! perfectly buys, and it is realisable only by a rule that guesses `q`
//! right (the fixed-alternative rows guess one `q` for all).

use std::collections::BTreeSet;

use evolution_harness::ELond;

use crate::Tally;
use crate::bound::Guard;
use crate::world::{World, latent_distribution, visible_effect};

/// One replication of the oracle rule over `order` with `questions` gate
/// questions (`0..questions`), guarded by `guard`.
pub(crate) fn oracle_run(world: &World, order: &[usize], questions: u64, guard: Guard) -> Tally {
    let mut accepted: Vec<usize> = Vec::new();
    // Questions the current version has answered (its answers are cached).
    let mut answered: BTreeSet<u64> = BTreeSet::new();
    let mut fdr = new_run(guard);
    let mut tally = Tally::default();
    for (step, &rule) in order.iter().enumerate() {
        if step > 0 && guard.starts_run(step) {
            fdr = new_run(guard);
        }
        let threshold = fdr.next_level().threshold;
        let latent = latent_distribution(accepted.iter().map(|&r| world.p[r]));
        let q = visible_effect(&latent, world.p[rule]).win;
        let mut with_rule = accepted.clone();
        with_rule.push(rule);
        let (e_value, used) = if q > 0.5 && threshold.is_finite() {
            bet(world, &accepted, &with_rule, q, questions, threshold.ln())
        } else {
            (1.0, 0)
        };
        tally.rollouts += used as f64 + (0..used).filter(|i| !answered.contains(i)).count() as f64;
        answered.extend(0..used);
        let accept = e_value >= threshold && q > 0.5;
        // An infinite threshold never accepts; the record cannot fail on a finite e-value.
        let _ = fdr.record(e_value, accept);
        if accept {
            accepted.push(rule);
            answered = (0..used).collect();
            tally.count(world.p[rule]);
        }
    }
    tally.holdout = crate::holdout(world, &accepted);
    tally
}

/// A fresh e-LOND controller for one run.
pub(crate) fn new_run(guard: Guard) -> ELond {
    // The arena's guards all have a level in (0, 1) and a non-empty horizon.
    let fdr = ELond::new(guard.alpha, guard.gamma).unwrap_or_else(|e| panic!("{e}"));
    if guard.closed {
        fdr.with_closure()
    } else {
        fdr
    }
}

/// Walks the gate questions betting on `q`; returns the e-value where it
/// stopped and the questions used.
fn bet(
    world: &World,
    baseline: &[usize],
    candidate: &[usize],
    q: f64,
    questions: u64,
    ln_threshold: f64,
) -> (f64, u64) {
    let (win, loss) = ((2.0 * q).ln(), (2.0 * (1.0 - q)).ln());
    let mut ln_e = 0.0;
    for n in 0..questions {
        let before = world.correct(baseline, n);
        let after = world.correct(candidate, n);
        match (before, after) {
            (false, true) => ln_e += win,
            (true, false) => ln_e += loss,
            _ => {}
        }
        let remaining = (questions - n - 1) as f64;
        if ln_e >= ln_threshold || ln_e + remaining * win < ln_threshold {
            return (ln_e.exp(), n + 1);
        }
    }
    (ln_e.exp(), questions)
}
