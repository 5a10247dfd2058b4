//! Upper bounds on what any rule guarded by e-LOND can accept in the arena.
//!
//! Two steps, each a bound on its own:
//!
//! 1. **One proposal** ([`Envelope`]). Under e-LOND proposal `t` is accepted
//!    only when its e-value reaches `1/α_t`. An e-value has expectation at
//!    most one under every null, so by Markov's inequality the event
//!    "e-value ≥ 1/α_t" is a test of level `α_t` against the null "a
//!    discordant pair is a coin flip". By the Neyman–Pearson lemma no test
//!    of that level, whatever its statistic and stopping rule, is more
//!    powerful against the candidate's true effect than the likelihood-ratio
//!    test on all `n` questions. Its power is computed by duality: for every
//!    `c > 0` and every test `φ` of level `α`,
//!    `E₁φ = E₀[φ·LR] ≤ E₀[(LR − c)⁺] + c·α`, with equality at the optimal
//!    `c`; any `c` gives a valid bound, the search only tightens it.
//!    A candidate whose visible win rate is at most one half is itself a
//!    null: its acceptance chance is at most `α_t`.
//! 2. **A run** ([`Bounds::run`]). The acceptance chance of every proposal,
//!    given everything before it, is at most the envelope at its level, and
//!    both depend only on which rules were accepted so far (they set the
//!    latent distribution, hence the candidate's visible effect) and on the
//!    accepts of the current e-LOND run (they set the level). A rule that
//!    maximises the expected number of helpful accepts under these caps is a
//!    Markov decision problem on that state; its value, by backward
//!    induction, bounds every guarded rule. Accepting at the cap or not at
//!    all is optimal (the value is linear in the acceptance chance).
//!    Harmful proposals are never accepted (the goal allows none), and an
//!    accept stays: a discovery later rolled back (by probation) would raise
//!    the level without changing the skill, a move not modelled here.
//!
//! The model behind both: each proposal is judged on `n` questions drawn
//! afresh. The arena reuses its gate questions, so the bound is the bound
//! of that model, checked against the oracle rules run in the arena itself.

use std::collections::HashMap;

use evolution_harness::GammaSequence;

use crate::world::{Visible, latent_distribution, visible_effect};

/// Discordant-pair counts beyond the point where their probability falls
/// below this are bounded by their probability alone.
const TAIL: f64 = 1e-15;
/// Steps of the search for the dual's best `c` (any `c` is a valid bound).
const SEARCH_STEPS: usize = 200;

/// `ln k!` for `k = 0..=n`.
fn ln_factorials(n: usize) -> Vec<f64> {
    let mut table = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    table.push(acc);
    for k in 1..=n {
        acc += (k as f64).ln();
        table.push(acc);
    }
    table
}

/// `P(Binomial(m, q) ≥ w)` for `w = 0..=m + 1`.
fn binomial_tails(m: usize, q: f64, ln_fact: &[f64]) -> Vec<f64> {
    let mut tail = vec![0.0; m + 2];
    for w in (0..=m).rev() {
        let ln_pmf = ln_fact[m] - ln_fact[w] - ln_fact[m - w]
            + w as f64 * q.ln()
            + (m - w) as f64 * (1.0 - q).ln();
        tail[w] = tail[w + 1] + ln_pmf.exp();
    }
    tail
}

/// The most power any test of a given level can have against one
/// candidate's visible effect, on `n` fresh questions.
pub(crate) struct Envelope {
    visible: Visible,
    /// `P(M = m)`, `M` the number of discordant pairs, for `m ≤` the cut.
    pairs: Vec<f64>,
    /// `P(M >` the cut`)`.
    beyond: f64,
    /// Per `m`: `P(W ≥ w | M = m)` under the candidate, then under the null.
    tails: Vec<(Vec<f64>, Vec<f64>)>,
}

impl Envelope {
    /// The envelope for `n` questions against `visible`.
    pub(crate) fn new(n: usize, visible: Visible) -> Self {
        let ln_fact = ln_factorials(n);
        // A win rate of exactly zero or one would make the likelihood ratio
        // zero or infinite; the arena never gets there.
        let visible = Visible {
            discordance: visible.discordance.clamp(0.0, 1.0),
            win: visible.win.clamp(1e-12, 1.0 - 1e-12),
        };
        let r = visible.discordance;
        let mut pairs = Vec::new();
        let mut seen = 0.0;
        for m in 0..=n {
            let ln_pmf = if r <= 0.0 {
                if m == 0 { 0.0 } else { f64::NEG_INFINITY }
            } else if r >= 1.0 {
                if m == n { 0.0 } else { f64::NEG_INFINITY }
            } else {
                ln_fact[n] - ln_fact[m] - ln_fact[n - m]
                    + m as f64 * r.ln()
                    + (n - m) as f64 * (1.0 - r).ln()
            };
            let pmf = ln_pmf.exp();
            pairs.push(pmf);
            seen += pmf;
            if m as f64 >= n as f64 * r && 1.0 - seen < TAIL {
                break;
            }
        }
        let beyond = (1.0 - seen).max(0.0);
        let tails = (0..pairs.len())
            .map(|m| {
                (
                    binomial_tails(m, visible.win, &ln_fact),
                    binomial_tails(m, 0.5, &ln_fact),
                )
            })
            .collect();
        Envelope {
            visible,
            pairs,
            beyond,
            tails,
        }
    }

    /// `E₀[(LR − c)⁺] + c·α` for `c = e^ln_c`: a bound on the power of
    /// every level-`alpha` test, whatever `ln_c` is.
    fn dual(&self, alpha: f64, ln_c: f64) -> f64 {
        let win = self.visible.win;
        let a = (2.0 * win).ln();
        let b = (2.0 * (1.0 - win)).ln();
        let c = ln_c.exp();
        let mut excess = self.beyond;
        for (m, (pmf, (alt, null))) in self.pairs.iter().zip(&self.tails).enumerate() {
            // The pairs whose likelihood ratio exceeds c: w·a + (m − w)·b > ln c.
            let cut = (ln_c - m as f64 * b) / (a - b);
            let first = if cut < 0.0 {
                0
            } else {
                (cut.floor() as usize).saturating_add(1).min(m + 1)
            };
            excess += pmf * (alt[first] - c * null[first]).max(0.0);
        }
        excess + c * alpha
    }

    /// The most power a test of level `alpha` can have against this
    /// candidate: at most `alpha` when its visible win rate is at most one
    /// half (it is then a null itself), at most one always.
    pub(crate) fn power(&self, alpha: f64) -> f64 {
        let win = self.visible.win;
        if alpha <= 0.0 {
            return 0.0;
        }
        if win <= 0.5 {
            return alpha.min(1.0);
        }
        self.dual_search(alpha)
    }

    /// Golden-section search of the dual over `ln c`; the function is
    /// unimodal there (convex in `c`), and every point is a valid bound.
    fn dual_search(&self, alpha: f64) -> f64 {
        let win = self.visible.win;
        let most = self.pairs.len() as f64;
        let (mut lo, mut hi) = (
            most * (2.0 * (1.0 - win)).ln() - 1.0,
            most * (2.0 * win).ln() + 1.0,
        );
        let ratio = (5.0_f64.sqrt() - 1.0) / 2.0;
        let mut x1 = hi - ratio * (hi - lo);
        let mut x2 = lo + ratio * (hi - lo);
        let mut f1 = self.dual(alpha, x1);
        let mut f2 = self.dual(alpha, x2);
        let mut best = f1.min(f2);
        for _ in 0..SEARCH_STEPS {
            if f1 <= f2 {
                hi = x2;
                x2 = x1;
                f2 = f1;
                x1 = hi - ratio * (hi - lo);
                f1 = self.dual(alpha, x1);
            } else {
                lo = x1;
                x1 = x2;
                f1 = f2;
                x2 = lo + ratio * (hi - lo);
                f2 = self.dual(alpha, x2);
            }
            best = best.min(f1).min(f2);
        }
        best.min(1.0)
    }
}

/// How a run's proposals are guarded: e-LOND at `alpha` spending along
/// `gamma`, restarted every `run_length` proposals (each restart is a run
/// of its own, with its own false-discovery rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Guard {
    pub(crate) alpha: f64,
    pub(crate) gamma: GammaSequence,
    pub(crate) run_length: usize,
}

impl Guard {
    /// `α_t` of proposal `step` (0-based over all proposals) after
    /// `accepts` accepts in its run, as `ELond` computes it.
    pub(crate) fn level(&self, step: usize, accepts: u32) -> f64 {
        let index = (step % self.run_length.max(1)) as u64 + 1;
        (self.alpha * self.gamma.gamma(index) * f64::from(accepts + 1)).min(1.0)
    }

    /// Whether proposal `step` is the first of its run (e-LOND starts afresh).
    pub(crate) fn starts_run(&self, step: usize) -> bool {
        step.is_multiple_of(self.run_length.max(1))
    }

    /// Whether proposal `step` is the last of its run.
    fn ends_run(&self, step: usize) -> bool {
        self.starts_run(step + 1)
    }
}

/// What the best guarded rule can do on one order of proposals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct RunBound {
    /// Expected helpful accepts of the best rule under the caps: the bound.
    pub(crate) best: f64,
    /// Expected helpful accepts when every proposal is accepted with its
    /// full envelope (the natural "most powerful test every time" rule).
    pub(crate) greedy: f64,
    /// How much of `best` comes from the states bounded crudely (see
    /// [`MAX_NULL_ACCEPTS`]): `best` minus the same induction valuing them at zero.
    pub(crate) crude: f64,
}

/// States with this many accepted rules of win probability at most one
/// half are not followed: they are worth at most every helpful proposal
/// still to come. Each such accept has a chance of at most `α_t`, so few
/// rules ever get there; [`RunBound::crude`] says how much they add.
const MAX_NULL_ACCEPTS: u8 = 2;

/// The state of a run: how many rules of each kind are accepted (the
/// skill) and how many accepts the current e-LOND run has seen.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    accepted: Vec<u8>,
    run_accepts: u32,
}

/// The envelopes of one question budget, shared by every order of
/// proposals: they depend only on the accepted rules and the candidate.
pub(crate) struct Bounds {
    questions: usize,
    envelopes: HashMap<(Vec<u8>, u64), Envelope>,
    powers: HashMap<(Vec<u8>, u64, u64), f64>,
}

impl Bounds {
    /// Bounds for proposals judged on `questions` fresh questions each.
    pub(crate) fn new(questions: usize) -> Self {
        Bounds {
            questions,
            envelopes: HashMap::new(),
            powers: HashMap::new(),
        }
    }

    /// The bound on expected helpful accepts of any guarded rule over
    /// `order` (win probabilities, in arrival order).
    pub(crate) fn run(&mut self, order: &[f64], guard: Guard) -> RunBound {
        let problem = Problem::new(order, guard);
        let layers = self.layers(&problem);
        let best = induce(&problem, &layers, |step| problem.helpful_from(step));
        let without = induce(&problem, &layers, |_| 0.0);
        RunBound {
            best,
            greedy: greedy(&problem, &layers),
            crude: best - without,
        }
    }

    /// The most any rule can accept a candidate of win probability `p`
    /// with, at level `alpha`, when `accepted` (counts per kind) is the skill.
    fn cap(&mut self, kinds: &[f64], accepted: &[u8], p: f64, alpha: f64) -> f64 {
        let key = (accepted.to_vec(), p.to_bits(), alpha.to_bits());
        if let Some(&power) = self.powers.get(&key) {
            return power;
        }
        let questions = self.questions;
        let envelope = self
            .envelopes
            .entry((accepted.to_vec(), p.to_bits()))
            .or_insert_with(|| {
                let ps = accepted
                    .iter()
                    .zip(kinds)
                    .flat_map(|(&count, &k)| std::iter::repeat_n(k, usize::from(count)));
                Envelope::new(questions, visible_effect(&latent_distribution(ps), p))
            });
        let power = envelope.power(alpha);
        self.powers.insert(key, power);
        power
    }

    /// Every state some rule can reach before each proposal, with that
    /// proposal's cap in it; states past [`MAX_NULL_ACCEPTS`] are not followed.
    fn layers(&mut self, problem: &Problem<'_>) -> Vec<HashMap<State, f64>> {
        let start = State {
            accepted: vec![0; problem.kinds.len()],
            run_accepts: 0,
        };
        let mut layers = vec![HashMap::from([(start, 0.0)])];
        for (step, &p) in problem.order.iter().enumerate() {
            let mut next = HashMap::new();
            let states: Vec<State> = layers[step].keys().cloned().collect();
            for state in states {
                let cap = match problem.kind(p) {
                    Some(_) => {
                        let alpha = problem.guard.level(step, state.run_accepts);
                        self.cap(&problem.kinds, &state.accepted, p, alpha)
                    }
                    None => 0.0,
                };
                layers[step].insert(state.clone(), cap);
                let (rejected, accepted) = problem.successors(step, &state);
                for s in std::iter::once(rejected).chain(accepted) {
                    if !problem.crude(&s) {
                        next.insert(s, 0.0);
                    }
                }
            }
            layers.push(next);
        }
        layers
    }
}

/// One order of proposals under one guard.
struct Problem<'a> {
    /// Win probability of each proposal, in the order they arrive.
    order: &'a [f64],
    /// The distinct win probabilities of at least one half (the kinds a
    /// rule may have and still be accepted).
    kinds: Vec<f64>,
    guard: Guard,
}

impl<'a> Problem<'a> {
    fn new(order: &'a [f64], guard: Guard) -> Self {
        let mut kinds: Vec<f64> = order.iter().copied().filter(|&p| p >= 0.5).collect();
        kinds.sort_by(f64::total_cmp);
        kinds.dedup();
        Problem {
            order,
            kinds,
            guard,
        }
    }

    fn kind(&self, p: f64) -> Option<usize> {
        self.kinds.iter().position(|&k| k == p)
    }

    /// Helpful proposals from `step` on: the most that is left to gain.
    fn helpful_from(&self, step: usize) -> f64 {
        self.order.iter().skip(step).filter(|&&p| p > 0.5).count() as f64
    }

    fn helpful(&self, step: usize) -> f64 {
        if self.order[step] > 0.5 { 1.0 } else { 0.0 }
    }

    /// Whether `state` is bounded crudely instead of followed.
    fn crude(&self, state: &State) -> bool {
        let nulls: u8 = state
            .accepted
            .iter()
            .zip(&self.kinds)
            .filter(|(_, k)| **k <= 0.5)
            .map(|(&count, _)| count)
            .sum();
        nulls >= MAX_NULL_ACCEPTS
    }

    /// The two states proposal `step` can lead to from `state`: rejected,
    /// and accepted (none for a harmful proposal).
    fn successors(&self, step: usize, state: &State) -> (State, Option<State>) {
        let reset = self.guard.ends_run(step);
        let mut rejected = state.clone();
        if reset {
            rejected.run_accepts = 0;
        }
        let accepted = self.kind(self.order[step]).map(|kind| {
            let mut next = state.clone();
            next.accepted[kind] = next.accepted[kind].saturating_add(1);
            next.run_accepts = if reset { 0 } else { state.run_accepts + 1 };
            next
        });
        (rejected, accepted)
    }
}

/// Backward induction: the most expected helpful accepts from each state,
/// accepting at the cap or not at all; a state not followed is worth
/// `fallback(step)` from proposal `step` on.
fn induce(
    problem: &Problem<'_>,
    layers: &[HashMap<State, f64>],
    fallback: impl Fn(usize) -> f64,
) -> f64 {
    let steps = problem.order.len();
    let mut after: HashMap<&State, f64> = layers[steps].keys().map(|s| (s, 0.0)).collect();
    for step in (0..steps).rev() {
        let worth = |s: &State, after: &HashMap<&State, f64>| {
            after.get(s).copied().unwrap_or_else(|| fallback(step + 1))
        };
        let mut here = HashMap::new();
        for (state, &cap) in &layers[step] {
            let (rejected, accepted) = problem.successors(step, state);
            let stay = worth(&rejected, &after);
            let value = match accepted {
                Some(accepted) => {
                    let go = problem.helpful(step) + worth(&accepted, &after);
                    stay + (cap * (go - stay)).max(0.0)
                }
                None => stay,
            };
            here.insert(state, value);
        }
        after = here;
    }
    after.values().next().copied().unwrap_or(0.0)
}

/// Expected helpful accepts of the rule that accepts every proposal with
/// its full cap (mass entering a state not followed stops counting).
fn greedy(problem: &Problem<'_>, layers: &[HashMap<State, f64>]) -> f64 {
    let mut mass: HashMap<State, f64> = layers[0].keys().map(|s| (s.clone(), 1.0)).collect();
    let mut total = 0.0;
    for (step, layer) in layers.iter().enumerate().take(problem.order.len()) {
        let mut next: HashMap<State, f64> = HashMap::new();
        for (state, weight) in mass {
            let cap = layer.get(&state).copied().unwrap_or(0.0);
            let (rejected, accepted) = problem.successors(step, &state);
            match accepted {
                Some(accepted) => {
                    *next.entry(rejected).or_default() += weight * (1.0 - cap);
                    *next.entry(accepted).or_default() += weight * cap;
                    total += weight * cap * problem.helpful(step);
                }
                None => *next.entry(rejected).or_default() += weight,
            }
        }
        next.retain(|s, _| layers[step + 1].contains_key(s));
        mass = next;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every outcome `(W, L)` of `n` questions with its probability under
    /// the candidate and under the null (a coin flip on discordant pairs).
    fn cells(n: usize, visible: Visible) -> Vec<(f64, f64)> {
        let ln_fact = ln_factorials(n);
        let choose = |n: usize, k: usize| (ln_fact[n] - ln_fact[k] - ln_fact[n - k]).exp();
        let r = visible.discordance;
        let mut out = Vec::new();
        for w in 0..=n {
            for l in 0..=n - w {
                let m = w + l;
                let shape =
                    choose(n, m) * r.powi(m as i32) * (1.0 - r).powi((n - m) as i32) * choose(m, w);
                out.push((
                    shape * visible.win.powi(w as i32) * (1.0 - visible.win).powi(l as i32),
                    shape * 0.5_f64.powi(m as i32),
                ));
            }
        }
        out
    }

    /// The most power of any deterministic test of level `alpha`, by trying
    /// every set of outcomes as the rejection region.
    fn best_deterministic(cells: &[(f64, f64)], alpha: f64) -> f64 {
        let mut best = 0.0_f64;
        for region in 0_u32..(1 << cells.len()) {
            let (mut power, mut size) = (0.0, 0.0);
            for (i, (alt, null)) in cells.iter().enumerate() {
                if region >> i & 1 == 1 {
                    power += alt;
                    size += null;
                }
            }
            if size <= alpha + 1e-12 {
                best = best.max(power);
            }
        }
        best
    }

    /// The Neyman–Pearson test built directly: outcomes by decreasing
    /// likelihood ratio, the last one randomised to use the level exactly.
    fn neyman_pearson(cells: &[(f64, f64)], alpha: f64) -> f64 {
        let mut sorted = cells.to_vec();
        sorted.sort_by(|x, y| (y.0 / y.1).total_cmp(&(x.0 / x.1)));
        let (mut power, mut size) = (0.0, 0.0);
        for (alt, null) in sorted {
            if size + null >= alpha {
                return power + alt * (alpha - size) / null;
            }
            power += alt;
            size += null;
        }
        power
    }

    #[test]
    fn envelope_is_the_neyman_pearson_power_and_beats_every_test() {
        for (n, discordance, win) in [(3, 0.4, 0.8), (3, 0.9, 0.6), (2, 0.5, 0.95), (4, 0.3, 0.7)] {
            let visible = Visible { discordance, win };
            let envelope = Envelope::new(n, visible);
            let outcomes = cells(n, visible);
            for alpha in [0.01, 0.05, 0.1, 0.2, 0.5] {
                let bound = envelope.power(alpha);
                let exact = neyman_pearson(&outcomes, alpha);
                assert!(
                    (bound - exact).abs() < 1e-9,
                    "n={n} r={discordance} p={win} α={alpha}: {bound} vs {exact}"
                );
                if outcomes.len() <= 16 {
                    assert!(best_deterministic(&outcomes, alpha) <= bound + 1e-12);
                }
            }
        }
    }

    #[test]
    fn a_null_candidate_gets_at_most_the_level() {
        let envelope = Envelope::new(
            50,
            Visible {
                discordance: 0.2,
                win: 0.4,
            },
        );
        assert_eq!(envelope.power(0.01), 0.01);
    }

    /// The best expected helpful accepts over every rule that, after any
    /// history of accepts, either declines or accepts at the cap — found by
    /// trying all such rules (each a table of choices per history).
    fn brute_force(order: &[f64], questions: usize, guard: Guard) -> f64 {
        let mut bounds = Bounds::new(questions);
        let problem = Problem::new(order, guard);
        let start = State {
            accepted: vec![0; problem.kinds.len()],
            run_accepts: 0,
        };
        // A history is the accept/reject path so far: node `2^step − 1 + path`.
        let nodes: usize = (0..order.len()).map(|s| 1 << s).sum();
        let mut best = 0.0_f64;
        for choice in 0_u64..(1 << nodes) {
            let value = follow(&mut bounds, &problem, choice, 0, 0, &start);
            best = best.max(value);
        }
        best
    }

    fn follow(
        bounds: &mut Bounds,
        problem: &Problem<'_>,
        choice: u64,
        step: usize,
        path: usize,
        state: &State,
    ) -> f64 {
        if step == problem.order.len() {
            return 0.0;
        }
        let node = (1 << step) - 1 + path;
        let p = problem.order[step];
        let alpha = problem.guard.level(step, state.run_accepts);
        let cap = if choice >> node & 1 == 1 {
            bounds.cap(&problem.kinds, &state.accepted, p, alpha)
        } else {
            0.0
        };
        let (rejected, accepted) = problem.successors(step, state);
        let stay = follow(bounds, problem, choice, step + 1, path << 1, &rejected);
        match accepted {
            Some(accepted) if cap > 0.0 => {
                let go = follow(bounds, problem, choice, step + 1, path << 1 | 1, &accepted);
                (1.0 - cap) * stay + cap * (problem.helpful(step) + go)
            }
            _ => stay,
        }
    }

    fn guards() -> [Guard; 3] {
        [
            Guard {
                alpha: 0.3,
                gamma: GammaSequence::Horizon { proposals: 4 },
                run_length: 4,
            },
            Guard {
                alpha: 0.3,
                gamma: GammaSequence::Quadratic,
                run_length: 4,
            },
            Guard {
                alpha: 0.4,
                gamma: GammaSequence::Horizon { proposals: 2 },
                run_length: 2,
            },
        ]
    }

    #[test]
    fn the_induction_matches_every_rule_tried_on_a_tiny_arena() {
        // At most one neutral proposal each: every state is followed.
        let orders: [&[f64]; 3] = [
            &[0.9, 0.5, 0.7, 0.8],
            &[0.6, 0.9, 0.3, 0.9],
            &[0.8, 0.8, 0.6, 0.5],
        ];
        for order in orders {
            for guard in guards() {
                let bound = Bounds::new(12).run(order, guard);
                let exhaustive = brute_force(order, 12, guard);
                assert!(
                    (bound.best - exhaustive).abs() < 1e-12,
                    "{order:?} {guard:?}: {} vs {exhaustive}",
                    bound.best
                );
                assert!(bound.greedy <= bound.best + 1e-12);
                assert!(bound.greedy > 0.0);
                assert_eq!(bound.crude, 0.0);
            }
        }
    }

    #[test]
    fn states_not_followed_only_loosen_the_bound() {
        let order = [0.5, 0.9, 0.5, 0.8];
        for guard in guards() {
            let bound = Bounds::new(12).run(&order, guard);
            let exhaustive = brute_force(&order, 12, guard);
            assert!(bound.crude > 0.0, "{guard:?}");
            assert!(
                bound.best >= exhaustive - 1e-12,
                "{guard:?}: {} < {exhaustive}",
                bound.best
            );
            assert!(bound.best - bound.crude <= exhaustive + 1e-12, "{guard:?}");
        }
    }
}
