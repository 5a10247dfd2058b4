//! Exact calibration for a finite pool of gate questions.
//!
//! The e-process gate is valid forever: Ville's inequality bounds the chance that `E` *ever*
//! reaches `1/α`, over an unbounded stream of pairs. A harness never has an unbounded stream:
//! a candidate is tested on a pool of at most `N` gate questions, so at most `N` discordant
//! pairs. For a walk of at most `N` steps `1/α` is loose — at 40 questions and `α = 0.01` the
//! uniform mixture reaches `E ≥ 100` under the null about 0.002 of the time, a fifth of what it
//! is granted — and the unspent level is power lost.
//!
//! A [`PoolBoundary`] spends the level exactly. It is a boundary on the discordant pairs: after
//! `d` of them, a candidate with at least `min_wins(d)` wins is accepted. The boundary is
//! built by an α-spending function `α · min(1, d/M)^ρ` over the discordant pairs, each step's
//! threshold the lowest whose crossing probability keeps the spent total within the cap, under
//! the worst case: a win probability of ½ on every discordant pair, and the boundary watched
//! after *every* pair. That worst case covers every way the pairs can be looked at:
//!
//! * wins never decrease, and a record above the boundary at a look has crossed it at that
//!   pair count or before, so asking only at block ends, or after ties, accepts less often;
//! * a tie adds no discordant pair, whatever the ties' pattern — even one that depends on the
//!   pairs so far — so at most `N` pairs are ever seen;
//! * a candidate that wins a discordant pair with probability at most ½ given everything before
//!   it has, pair by pair, no more wins than a fair coin (couple the two): it crosses less often;
//! * the exits that only reject (directional, futility, the tie-aware futility exit) and the
//!   `delta_min` condition only remove accepts.
//!
//! So `P(accept | not better) ≤` [`PoolBoundary::false_accept`] `≤ α`, computed, not bounded.
//! A test with this boundary gives e-LOND the e-value `1{accept}/α`, whose mean under the null
//! is at most one. What is lost: validity past the pool (a caller that may add questions later
//! needs the e-process), and provisional accepts (every accept crosses the boundary).

use serde::{Deserialize, Serialize};

use crate::GateError;
use crate::decision::{Gate, SHRINK_PSEUDO, Tally};
use crate::discordance::plausible_discordant;
use crate::evalue::wald_lambda;
use crate::reach::{AcceptFloor, block_ends, fewest_wins_by};
use crate::types::{GateDecision, GateVerdict};

/// The most questions a [`PoolBoundary`] is built for (its cost grows with the square of it).
pub const MAX_POOL_QUESTIONS: u64 = 5_000;

/// The most questions [`pool_accept_probability`] and [`pool_worst_case_false_accept`] take
/// (their cost grows with the cube of it).
pub const MAX_POOL_POWER_QUESTIONS: u64 = 400;

/// Relative margin kept below the level when a boundary is built, so that rounding in the
/// sums (at most a few ulps per pair) can never carry the spent level above it.
const LEVEL_MARGIN: f64 = 1e-9;

/// The exponents `ρ` [`PoolBoundary::design`] chooses among.
const SHAPES: [f64; 8] = [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0];

/// How many standard deviations past the expected discordant count the spending reaches its
/// level (`M` of the spending function).
const SPREAD: f64 = 3.0;

/// The spending function of a boundary: `α · min(1, d/horizon)^exponent` of the level is spent
/// by the `d`-th discordant pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpendingShape {
    /// `ρ`: large spends late (most of the level on the last pairs), small spends early.
    pub exponent: f64,
    /// `M`: the discordant pair by which the whole level is spent (at most the pool's size).
    pub horizon: u64,
}

/// What a boundary is designed for: its pool, its level and the candidate it should find.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolDesign {
    /// Gate questions the candidate may draw: at most this many discordant pairs.
    pub questions: u64,
    /// The false-accept rate granted to the test (e-LOND's `α_t`), in `(0, 1)`.
    pub level: f64,
    /// The share of questions expected to be discordant (in `(0, 1]`; 1 when every question is
    /// won or lost). It places the spending, never the validity.
    pub discordance: f64,
    /// The win rate among discordant pairs the shape is chosen to find (in `(1/2, 1)`).
    pub win_rate: f64,
}

/// An accept boundary for a pool of questions, calibrated exactly (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolBoundary {
    questions: u64,
    level: f64,
    shape: SpendingShape,
    /// `min_wins[d]`: wins needed after `d` discordant pairs (`d + 1`: none accepted there).
    min_wins: Vec<u64>,
    /// Range minima of `min_wins[j] − j` over windows of `2^k` pair counts: `reach[k][j]`
    /// covers `j..j + 2^k` (what [`PoolBoundary::reachable`] asks in constant time).
    reach: Vec<Vec<i64>>,
    false_accept: f64,
}

impl PoolBoundary {
    /// The boundary of `shape` for `questions` questions at `level`.
    ///
    /// # Errors
    /// [`GateError::InvalidPool`] for zero questions or more than [`MAX_POOL_QUESTIONS`], a
    /// level outside `(0, 1)`, an exponent that is not finite and positive, or a horizon of
    /// zero.
    pub fn new(questions: u64, level: f64, shape: SpendingShape) -> Result<Self, GateError> {
        check_pool(questions, level)?;
        if !(shape.exponent.is_finite() && shape.exponent > 0.0) {
            return Err(GateError::InvalidPool {
                reason: format!(
                    "spending exponent {} must be finite and positive",
                    shape.exponent
                ),
            });
        }
        if shape.horizon == 0 {
            return Err(GateError::InvalidPool {
                reason: "the spending horizon must be at least one pair".to_owned(),
            });
        }
        let horizon = shape.horizon.min(questions);
        let shape = SpendingShape { horizon, ..shape };
        let (min_wins, false_accept) = build(questions, level, shape);
        let reach = range_minima(&min_wins);
        Ok(PoolBoundary {
            questions,
            level,
            shape,
            min_wins,
            reach,
            false_accept,
        })
    }

    /// The boundary for `design` whose shape gives the most power, asked at the block ends of
    /// `ladder` by `gate` ([`pool_accept_probability`] at the design's win rate and
    /// discordance): the spending reaches its level three standard deviations past the
    /// expected discordant count, and the exponent is the best of a fixed list. The choice
    /// uses no data, so every boundary it may return is valid.
    ///
    /// Past [`MAX_POOL_POWER_QUESTIONS`] questions the exponent is 2 (power is near one there).
    ///
    /// # Errors
    /// As [`PoolBoundary::new`]; [`GateError::InvalidPool`] for a discordance outside
    /// `(0, 1]` or a win rate outside `(1/2, 1)`; [`GateError::InvalidLadder`].
    pub fn design(gate: &Gate, design: &PoolDesign, ladder: &[usize]) -> Result<Self, GateError> {
        check_pool(design.questions, design.level)?;
        check_rate("discordance", design.discordance, 0.0, 1.0, true)?;
        check_rate("win rate", design.win_rate, 0.5, 1.0, false)?;
        block_ends(1, ladder)?;
        let horizon = spending_horizon(design.questions, design.discordance);
        let shape = |exponent| SpendingShape { exponent, horizon };
        if design.questions > MAX_POOL_POWER_QUESTIONS {
            return PoolBoundary::new(design.questions, design.level, shape(2.0));
        }
        let mut best: Option<(f64, PoolBoundary)> = None;
        for exponent in SHAPES {
            let boundary = PoolBoundary::new(design.questions, design.level, shape(exponent))?;
            let power = pool_accept_probability(
                gate,
                &boundary,
                ladder,
                design.win_rate,
                design.discordance,
            )?;
            if best.as_ref().is_none_or(|(p, _)| power > *p) {
                best = Some((power, boundary));
            }
        }
        match best {
            Some((_, boundary)) => Ok(boundary),
            None => PoolBoundary::new(design.questions, design.level, shape(2.0)),
        }
    }

    /// Gate questions in the pool.
    pub fn questions(&self) -> u64 {
        self.questions
    }

    /// The level the boundary was built for.
    pub fn level(&self) -> f64 {
        self.level
    }

    /// Its spending function.
    pub fn shape(&self) -> SpendingShape {
        self.shape
    }

    /// The exact worst-case false-accept rate: the chance that a fair coin crosses the boundary
    /// within the pool's pairs, watched after every pair. At most [`PoolBoundary::level`].
    pub fn false_accept(&self) -> f64 {
        self.false_accept
    }

    /// The wins that accept after `discordant` pairs, `None` when none do (too few pairs yet,
    /// or more pairs than the pool holds).
    pub fn min_wins(&self, discordant: u64) -> Option<u64> {
        let needed = *self.min_wins.get(usize::try_from(discordant).ok()?)?;
        (needed <= discordant).then_some(needed)
    }

    /// Whether `w` wins and `l` losses are on or above the boundary.
    pub fn accepts(&self, w: u64, l: u64) -> bool {
        w.checked_add(l)
            .and_then(|d| self.min_wins(d))
            .is_some_and(|needed| w >= needed)
    }

    /// Whether `w` wins and `l` losses can still be accepted with at most `more` further
    /// discordant pairs (each of them a win, the best case): now, or after `k ≤ more` wins.
    pub fn reachable(&self, w: u64, l: u64, more: u64) -> bool {
        // After `k` more wins the record is `(w + k, l)` at `d + k` pairs, accepted when
        // `w + k ≥ min_wins[d + k]`, that is `w − d ≥ min over j in d..=d + room of
        // (min_wins[j] − j)`.
        let Some(d) = w.checked_add(l) else {
            return false;
        };
        if d > self.questions {
            return false;
        }
        let room = self.questions.saturating_sub(d).min(more);
        let (Ok(from), Ok(len)) = (usize::try_from(d), usize::try_from(room.saturating_add(1)))
        else {
            return false;
        };
        // `len ≥ 1`: the largest power of two not above it, and the two windows covering it.
        let k = usize::try_from(len.ilog2()).unwrap_or(0);
        let span = 1_usize << k;
        let row = self.reach.get(k);
        let first = row.and_then(|r| r.get(from)).copied();
        let second = row
            .and_then(|r| r.get(from.saturating_add(len).saturating_sub(span)))
            .copied();
        let least = match (first, second) {
            (Some(a), Some(b)) => a.min(b),
            _ => return false,
        };
        i128::from(w) - i128::from(d) >= i128::from(least)
    }
}

impl Gate {
    /// Decide what to do after a validation block, the accept given by `boundary`, a pool's
    /// exactly calibrated boundary ([`PoolBoundary`]), instead of `e_confirm`.
    ///
    /// Exits, first match wins: `accept_confirmed` (`W` on or above the boundary at `W + L`
    /// discordant pairs, and `δ̂ ≥ delta_min`) → `reject_directional` (`λ ≤ lambda_dir`) →
    /// `reject_futility` (questions remain, yet no further wins among them could reach the
    /// boundary; with [`GateParams::futility_risk`](crate::GateParams::futility_risk), none among the remaining questions that
    /// can plausibly still be discordant) → at exhaustion `reject_inertia` (there is no
    /// provisional accept: every accept crosses the boundary) → `continue`. The verdict
    /// reports the e-process's statistics as [`Gate::decide`] does.
    ///
    /// # Errors
    /// As [`Gate::decide`]; [`GateError::InvalidPool`] when `n_used + n_remaining` exceeds the
    /// boundary's questions.
    pub fn decide_in_pool(
        &self,
        tally: &Tally,
        boundary: &PoolBoundary,
    ) -> Result<GateVerdict, GateError> {
        let decision = self.pool_decision(tally, boundary)?;
        let Tally { w, l, n_used, .. } = *tally;
        let ln_e = self.params().e_process.ln_e_value(w, l);
        let net_f = w as f64 - l as f64;
        Ok(GateVerdict {
            decision,
            e_value: ln_e.exp(),
            ln_e_value: ln_e,
            wald_lambda: wald_lambda(w, l),
            delta_hat: net_f / n_used as f64,
            delta_shrunk: net_f / (n_used as f64 + SHRINK_PSEUDO),
        })
    }

    /// [`Gate::decide_in_pool`]'s decision alone (no e-value): what the dynamic programs over
    /// a pool ask at every record.
    pub(crate) fn pool_decision(
        &self,
        tally: &Tally,
        boundary: &PoolBoundary,
    ) -> Result<GateDecision, GateError> {
        let Tally {
            w,
            l,
            n_used,
            n_remaining,
        } = *tally;
        let params = self.params();
        if n_used == 0 {
            return Err(GateError::NoQuestionsUsed);
        }
        match w.checked_add(l) {
            Some(d) if d <= n_used => {}
            _ => return Err(GateError::CountsExceedUsed { w, l, n_used }),
        }
        if n_used.saturating_add(n_remaining) > boundary.questions() {
            return Err(GateError::InvalidPool {
                reason: format!(
                    "{} questions used and remaining exceed the boundary's pool of {}",
                    n_used.saturating_add(n_remaining),
                    boundary.questions()
                ),
            });
        }
        let delta_hat = (w as f64 - l as f64) / n_used as f64;
        Ok(if boundary.accepts(w, l) && delta_hat >= params.delta_min {
            GateDecision::AcceptConfirmed
        } else if wald_lambda(w, l) <= params.lambda_dir {
            GateDecision::RejectDirectional
        } else if n_remaining > 0 && !boundary.reachable(w, l, n_remaining) {
            GateDecision::RejectFutility
        } else if let Some(risk) = params.futility_risk
            && n_remaining > 0
            && !boundary.reachable(
                w,
                l,
                plausible_discordant(w.saturating_add(l), n_used, n_remaining, risk),
            )
        {
            GateDecision::RejectFutility
        } else if n_remaining == 0 {
            GateDecision::RejectInertia
        } else {
            GateDecision::Continue
        })
    }
}

/// The sparse table of range minima of `min_wins[j] − j`.
fn range_minima(min_wins: &[u64]) -> Vec<Vec<i64>> {
    let base: Vec<i64> = min_wins
        .iter()
        .zip(0_i64..)
        .map(|(&needed, j)| i64::try_from(needed).unwrap_or(i64::MAX).saturating_sub(j))
        .collect();
    let mut table = vec![base];
    let mut span = 1_usize;
    while span.saturating_mul(2) <= min_wins.len() {
        let Some(previous) = table.last() else { break };
        let next: Vec<i64> = previous
            .iter()
            .zip(previous.iter().skip(span))
            .map(|(&a, &b)| a.min(b))
            .collect();
        table.push(next);
        span = span.saturating_mul(2);
    }
    table
}

/// `M`: the expected discordant count plus [`SPREAD`] standard deviations, within `1..=N`.
fn spending_horizon(questions: u64, discordance: f64) -> u64 {
    let n = questions as f64;
    let mean = n * discordance;
    let spread = SPREAD * (n * discordance * (1.0 - discordance)).sqrt();
    let horizon = (mean + spread).ceil();
    if horizon >= n {
        questions
    } else if horizon < 1.0 {
        1
    } else {
        // A positive integer below `questions`: the cast is exact.
        horizon as u64
    }
}

fn check_pool(questions: u64, level: f64) -> Result<(), GateError> {
    if questions == 0 || questions > MAX_POOL_QUESTIONS {
        return Err(GateError::InvalidPool {
            reason: format!("a pool of {questions} questions is not in 1..={MAX_POOL_QUESTIONS}"),
        });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(GateError::InvalidPool {
            reason: format!("level {level} must lie strictly between 0 and 1"),
        });
    }
    Ok(())
}

fn check_rate(
    what: &str,
    value: f64,
    low: f64,
    high: f64,
    high_included: bool,
) -> Result<(), GateError> {
    let in_range = value > low && (value < high || (high_included && value == high));
    if in_range {
        Ok(())
    } else {
        let close = if high_included { ']' } else { ')' };
        Err(GateError::InvalidPool {
            reason: format!("{what} {value} must lie in ({low}, {high}{close}"),
        })
    }
}

/// The thresholds and the spent level: a dynamic program over the wins of the paths of a fair
/// coin that have not crossed yet, absorbing at each pair the top of the distribution that the
/// spending function's cap allows.
///
/// The threshold kept for `d` pairs is one above the most wins a path can have there without
/// having crossed (tracked exactly, as counts, not from the masses): every record above it has
/// crossed at `d` or before, so accepting it adds nothing to the chance of crossing.
fn build(questions: u64, level: f64, shape: SpendingShape) -> (Vec<u64>, f64) {
    let n = usize::try_from(questions).unwrap_or(usize::MAX);
    let mut min_wins = Vec::with_capacity(n.saturating_add(1));
    min_wins.push(1_u64);
    // `live[w]`: chance of `w` wins after `d` pairs without having crossed.
    let mut live: Vec<f64> = vec![1.0];
    // The most wins a path that has not crossed can have.
    let mut top = 0_u64;
    let mut spent = 0.0_f64;
    let budget = level * (1.0 - LEVEL_MARGIN);
    for d in 1..=questions {
        let mut next = Vec::with_capacity(live.len().saturating_add(1));
        let mut carried = 0.0_f64;
        for &mass in &live {
            next.push(0.5 * (mass + carried));
            carried = mass;
        }
        next.push(0.5 * carried);
        top = top.saturating_add(1).min(d);
        let fraction = (d as f64 / shape.horizon as f64).min(1.0);
        let cap = budget * fraction.powf(shape.exponent);
        // The lowest threshold whose tail still fits under the cap.
        let mut tail = 0.0_f64;
        let mut threshold: Option<u64> = None;
        for (w, &mass) in next.iter().enumerate().rev() {
            let w = u64::try_from(w).unwrap_or(u64::MAX);
            if w > top {
                continue;
            }
            if spent + tail + mass <= cap {
                tail += mass;
                threshold = Some(w);
            } else {
                break;
            }
        }
        if let Some(threshold) = threshold {
            spent += tail;
            for mass in next
                .iter_mut()
                .skip(usize::try_from(threshold).unwrap_or(usize::MAX))
            {
                *mass = 0.0;
            }
            top = top.min(threshold.saturating_sub(1));
        }
        min_wins.push(top.saturating_add(1));
        live = next;
    }
    (min_wins, spent)
}

/// The exact probability that `gate`, deciding with `boundary` ([`Gate::decide_in_pool`]) at
/// the block ends of `ladder`, accepts a candidate whose pool questions are each, independently,
/// discordant with probability `discordance` and then won with probability `win_rate`.
///
/// A dynamic program over the wins and losses so far, question by question.
///
/// # Errors
/// [`GateError::InvalidWinProbability`] for a rate outside `[0, 1]`, [`GateError::InvalidPool`]
/// for more than [`MAX_POOL_POWER_QUESTIONS`] questions, [`GateError::InvalidLadder`].
pub fn pool_accept_probability(
    gate: &Gate,
    boundary: &PoolBoundary,
    ladder: &[usize],
    win_rate: f64,
    discordance: f64,
) -> Result<f64, GateError> {
    for p in [win_rate, discordance] {
        if !(0.0..=1.0).contains(&p) {
            return Err(GateError::InvalidWinProbability { p });
        }
    }
    let questions = check_power_pool(boundary)?;
    let ends = block_ends(questions, ladder)?;
    let (p_win, p_loss, p_tie) = (
        discordance * win_rate,
        discordance * (1.0 - win_rate),
        1.0 - discordance,
    );
    let mut live = Grid::new(questions);
    live.set(0, 0, 1.0);
    let mut accept = 0.0_f64;
    let mut previous = 0_u64;
    for &end in &ends {
        for asked in previous..end {
            live.step(asked, |tie, win, loss| {
                tie * p_tie + win * p_win + loss * p_loss
            });
        }
        accept += live.decide(gate, boundary, end, questions - end)?;
        previous = end;
    }
    Ok(accept.min(1.0))
}

/// The exact false-accept rate of `gate`, deciding with `boundary` at the block ends of
/// `ladder`, against the worst candidate that is not better: after each question it chooses —
/// knowing every outcome so far — between a tie and a discordant pair it wins with probability
/// ½, so as to be accepted as often as possible. A dynamic program over the questions, wins and
/// losses, backwards. At most [`PoolBoundary::false_accept`].
///
/// # Errors
/// [`GateError::InvalidPool`] for more than [`MAX_POOL_POWER_QUESTIONS`] questions,
/// [`GateError::InvalidLadder`].
pub fn pool_worst_case_false_accept(
    gate: &Gate,
    boundary: &PoolBoundary,
    ladder: &[usize],
) -> Result<f64, GateError> {
    let questions = check_power_pool(boundary)?;
    let ends = block_ends(questions, ladder)?;
    let size = usize::try_from(questions).unwrap_or(usize::MAX);
    // `value[w][l]` after `n` questions: the best chance of an accept from there on.
    let mut value = vec![vec![0.0_f64; size.saturating_add(2)]; size.saturating_add(2)];
    for n in (0..=questions).rev() {
        let is_look = ends.contains(&n);
        let mut next_value = vec![vec![0.0_f64; size.saturating_add(2)]; size.saturating_add(2)];
        for w in 0..=n {
            for l in 0..=(n - w) {
                let (wi, li) = (index(w), index(l));
                let later = if n == questions {
                    0.0
                } else {
                    let tie = cell(&value, wi, li);
                    let discordant = 0.5 * (cell(&value, wi + 1, li) + cell(&value, wi, li + 1));
                    tie.max(discordant)
                };
                let here = if is_look {
                    let decision =
                        gate.pool_decision(&Tally::new(w, l, n, questions - n), boundary)?;
                    if decision.is_accept() {
                        Some(1.0)
                    } else if decision.is_terminal() {
                        Some(0.0)
                    } else {
                        None
                    }
                } else {
                    None
                };
                if let Some(row) = next_value.get_mut(wi)
                    && let Some(slot) = row.get_mut(li)
                {
                    *slot = here.unwrap_or(later);
                }
            }
        }
        value = next_value;
    }
    Ok(cell(&value, 0, 0))
}

fn check_power_pool(boundary: &PoolBoundary) -> Result<u64, GateError> {
    let questions = boundary.questions();
    if questions > MAX_POOL_POWER_QUESTIONS {
        return Err(GateError::InvalidPool {
            reason: format!(
                "exact power is computed for at most {MAX_POOL_POWER_QUESTIONS} questions, not \
                 {questions}"
            ),
        });
    }
    Ok(questions)
}

fn index(count: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

fn cell(grid: &[Vec<f64>], w: usize, l: usize) -> f64 {
    grid.get(w)
        .and_then(|row| row.get(l))
        .copied()
        .unwrap_or(0.0)
}

/// Chances of (wins, losses) for the records still deciding, wins + losses ≤ questions asked.
struct Grid {
    questions: u64,
    mass: Vec<Vec<f64>>,
}

impl Grid {
    fn new(questions: u64) -> Self {
        let size = index(questions).saturating_add(1);
        Grid {
            questions,
            mass: vec![vec![0.0; size]; size],
        }
    }

    fn set(&mut self, w: u64, l: u64, value: f64) {
        if let Some(slot) = self
            .mass
            .get_mut(index(w))
            .and_then(|row| row.get_mut(index(l)))
        {
            *slot = value;
        }
    }

    /// One more question after `asked`: each record's chance from its three predecessors
    /// (a tie, a win, a loss), `combine(tie, win, loss)`.
    fn step(&mut self, asked: u64, combine: impl Fn(f64, f64, f64) -> f64) {
        let after = asked.saturating_add(1).min(self.questions);
        for d in (0..=after).rev() {
            for w in 0..=d {
                let l = d - w;
                let (wi, li) = (index(w), index(l));
                let tie = cell(&self.mass, wi, li);
                let win = if w > 0 {
                    cell(&self.mass, wi - 1, li)
                } else {
                    0.0
                };
                let loss = if l > 0 {
                    cell(&self.mass, wi, li - 1)
                } else {
                    0.0
                };
                let value = combine(tie, win, loss);
                if let Some(slot) = self.mass.get_mut(wi).and_then(|row| row.get_mut(li)) {
                    *slot = value;
                }
            }
        }
    }

    /// Stops the records the gate decides on after `used` questions, `remaining` left; returns
    /// the chance accepted.
    fn decide(
        &mut self,
        gate: &Gate,
        boundary: &PoolBoundary,
        used: u64,
        remaining: u64,
    ) -> Result<f64, GateError> {
        let mut accepted = 0.0_f64;
        for (w, row) in (0_u64..).zip(self.mass.iter_mut()) {
            for (l, slot) in (0_u64..).zip(row.iter_mut()) {
                if *slot == 0.0 || w.saturating_add(l) > used {
                    continue;
                }
                let decision = gate.pool_decision(&Tally::new(w, l, used, remaining), boundary)?;
                if decision.is_terminal() {
                    if decision.is_accept() {
                        accepted += *slot;
                    }
                    *slot = 0.0;
                }
            }
        }
        Ok(accepted)
    }
}

/// The fewest wins (with no loss) with which `gate`, deciding with `boundary`
/// ([`Gate::decide_in_pool`]) at the block ends of `ladder`, accepts, over every order the wins
/// and ties can come in (as [`fewest_wins`](crate::fewest_wins)); only `accept_confirmed` can
/// accept.
///
/// # Errors
/// As [`fewest_wins`](crate::fewest_wins).
pub fn pool_fewest_wins(
    gate: &Gate,
    boundary: &PoolBoundary,
    ladder: &[usize],
) -> Result<AcceptFloor, GateError> {
    fewest_wins_by(boundary.questions(), ladder, |tally| {
        gate.decide_in_pool(tally, boundary)
    })
}
