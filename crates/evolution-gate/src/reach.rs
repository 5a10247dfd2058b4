//! What a gate can do with a fixed number of questions looked at in blocks:
//! the fewest wins an accept needs, the fewest questions any accept needs,
//! and the exact chance of an accept for a candidate of a given win rate.
//!
//! A harness asks the gate only at the end of each block of its ladder
//! (sizes `ladder[0]`, `ladder[1]`, …, the last size repeated, the last
//! block cut at the number of questions), so these functions ask it there
//! and nowhere else, with the counts it would see.

use crate::GateError;
use crate::decision::{Gate, Tally};
use crate::types::GateDecision;

/// The most questions [`fewest_wins`], [`fewest_questions`] and
/// [`ladder_accept_probability`] take (their cost grows with the square of it
/// at worst).
pub const MAX_REACH_QUESTIONS: u64 = 100_000;

/// The smallest record one exit can accept: `wins` discordant pairs won, none
/// lost, the rest of the `questions` paired ties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmallestRecord {
    /// Wins needed, with no loss.
    pub wins: u64,
    /// Questions paired when the gate accepts (a block end).
    pub questions: u64,
}

/// The smallest accepting record of each accepting exit; `None` for an exit
/// no record can reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AcceptFloor {
    /// `accept_confirmed`: `E ≥ e_confirm` and `δ̂ ≥ delta_min` at a block end.
    pub confirmed: Option<SmallestRecord>,
    /// `accept_provisional`: at exhaustion, `E ≥ e_provisional` and `W − L ≥ w_net_min`.
    pub provisional: Option<SmallestRecord>,
}

impl AcceptFloor {
    /// The smaller of the two records (fewer wins; on a tie, the earlier
    /// look), with its exit; `None` when nothing can be accepted.
    pub fn smallest(&self) -> Option<(SmallestRecord, GateDecision)> {
        let confirmed = self.confirmed.map(|r| (r, GateDecision::AcceptConfirmed));
        let provisional = self
            .provisional
            .map(|r| (r, GateDecision::AcceptProvisional));
        match (confirmed, provisional) {
            (Some(c), Some(p)) => {
                if (p.0.wins, p.0.questions) < (c.0.wins, c.0.questions) {
                    Some(p)
                } else {
                    Some(c)
                }
            }
            (c, p) => c.or(p),
        }
    }
}

/// The block ends of `questions` questions under `ladder`: the number of
/// questions paired at each look.
///
/// # Errors
/// [`GateError::InvalidLadder`] for an empty ladder or a block of size 0.
pub fn block_ends(questions: u64, ladder: &[usize]) -> Result<Vec<u64>, GateError> {
    if ladder.is_empty() || ladder.contains(&0) {
        return Err(GateError::InvalidLadder);
    }
    let mut ends = Vec::new();
    let mut end = 0_u64;
    while end < questions {
        let size = ladder
            .get(ends.len())
            .or(ladder.last())
            .copied()
            .unwrap_or(1);
        let size = u64::try_from(size).unwrap_or(u64::MAX);
        end = end.saturating_add(size).min(questions);
        ends.push(end);
    }
    Ok(ends)
}

fn check_questions(questions: u64) -> Result<(), GateError> {
    if questions == 0 || questions > MAX_REACH_QUESTIONS {
        return Err(GateError::InvalidBudget {
            budget: questions,
            max: MAX_REACH_QUESTIONS,
        });
    }
    Ok(())
}

/// The fewest wins (with no loss) each accepting exit of `gate` needs when
/// `questions` questions are looked at in the blocks of `ladder`, over every
/// order the wins and ties can come in.
///
/// Exact: a search over the block ends of the counts the gate can still be
/// deciding on (`continue` at every earlier look), asking [`Gate::decide`]
/// itself at each. A loss only ever lowers `E` and the net wins, so a record
/// with losses needs more wins than the one reported.
///
/// ```
/// use evolution_gate::{Gate, fewest_wins};
///
/// let floor = fewest_wins(&Gate::preset("seed")?, 20, &[10, 20, 40])?;
/// let confirmed = floor.confirmed.expect("20 questions can confirm");
/// assert_eq!((confirmed.wins, confirmed.questions), (7, 10));
/// let provisional = floor.provisional.expect("and accept provisionally");
/// assert_eq!((provisional.wins, provisional.questions), (3, 20));
/// # Ok::<(), evolution_gate::GateError>(())
/// ```
///
/// # Errors
/// [`GateError::InvalidLadder`] for a bad ladder; [`GateError::InvalidBudget`]
/// for zero questions or more than [`MAX_REACH_QUESTIONS`].
pub fn fewest_wins(
    gate: &Gate,
    questions: u64,
    ladder: &[usize],
) -> Result<AcceptFloor, GateError> {
    fewest_wins_by(questions, ladder, |tally| gate.decide(tally))
}

/// [`fewest_wins`] with the decision `decide`.
pub(crate) fn fewest_wins_by(
    questions: u64,
    ladder: &[usize],
    decide: impl Fn(&Tally) -> Result<crate::GateVerdict, GateError>,
) -> Result<AcceptFloor, GateError> {
    check_questions(questions)?;
    let ends = block_ends(questions, ladder)?;
    let mut floor = AcceptFloor::default();
    // The wins the gate can still be deciding on after the previous look:
    // an interval, since `continue` with no loss is an interval of wins
    // (confirm grows with the wins, futility shrinks with them).
    let mut live: Option<(u64, u64)> = Some((0, 0));
    let mut previous = 0_u64;
    for &end in &ends {
        let Some((lo, hi)) = live else { break };
        let block = end - previous;
        let remaining = questions - end;
        let mut next: Option<(u64, u64)> = None;
        for w in lo..=hi.saturating_add(block).min(end) {
            let verdict = decide(&Tally::new(w, 0, end, remaining))?;
            let record = SmallestRecord {
                wins: w,
                questions: end,
            };
            let slot = match verdict.decision {
                GateDecision::AcceptConfirmed => &mut floor.confirmed,
                GateDecision::AcceptProvisional => &mut floor.provisional,
                GateDecision::Continue => {
                    next = Some(match next {
                        Some((a, _)) => (a, w),
                        None => (w, w),
                    });
                    continue;
                }
                _ => continue,
            };
            if slot.is_none_or(|r| w < r.wins) {
                *slot = Some(record);
            }
        }
        live = next;
        previous = end;
    }
    Ok(floor)
}

/// The fewest questions, at most `max`, with which some record can be
/// accepted by `gate` under `ladder`: every question a win is the best case,
/// so this follows that one path. `None` when even `max` questions cannot.
///
/// # Errors
/// As [`fewest_wins`] for `max`.
pub fn fewest_questions(gate: &Gate, ladder: &[usize], max: u64) -> Result<Option<u64>, GateError> {
    check_questions(max)?;
    block_ends(1, ladder)?;
    for n in 1..=max {
        if accepts_all_wins(gate, n, ladder)? {
            return Ok(Some(n));
        }
    }
    Ok(None)
}

/// Whether `n` questions, every one a win, are accepted at some block end.
fn accepts_all_wins(gate: &Gate, n: u64, ladder: &[usize]) -> Result<bool, GateError> {
    for end in block_ends(n, ladder)? {
        let decision = gate.decide(&Tally::new(end, 0, end, n - end))?.decision;
        if decision.is_accept() {
            return Ok(true);
        }
        if decision.is_terminal() {
            return Ok(false);
        }
    }
    Ok(false)
}

/// The exact probability that `gate` accepts (either exit) a candidate that
/// wins each of `questions` questions with probability `p` and loses it
/// otherwise (no ties), asked at the block ends of `ladder`.
///
/// A dynamic program over the wins at each block end: the binomial step of
/// a block moves the mass still deciding, and [`Gate::decide`] stops it.
/// Ties only use up questions, so a candidate with ties has less power than
/// this at the same win rate among its discordant pairs.
///
/// # Errors
/// [`GateError::InvalidWinProbability`] when `p` is not in `[0, 1]`, and as
/// [`fewest_wins`].
pub fn ladder_accept_probability(
    gate: &Gate,
    questions: u64,
    ladder: &[usize],
    p: f64,
) -> Result<f64, GateError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(GateError::InvalidWinProbability { p });
    }
    check_questions(questions)?;
    let ends = block_ends(questions, ladder)?;
    let q = 1.0 - p;
    let mut accept = 0.0_f64;
    // `live[w]`: probability of `w` wins so far and the gate still deciding.
    let mut live: Vec<f64> = vec![1.0];
    let mut previous = 0_u64;
    for &end in &ends {
        for _ in previous..end {
            let mut next = Vec::with_capacity(live.len().saturating_add(1));
            let mut carried = 0.0_f64;
            for &mass in &live {
                next.push(mass * q + carried * p);
                carried = mass;
            }
            next.push(carried * p);
            live = next;
        }
        let remaining = questions - end;
        for (w, mass) in (0_u64..).zip(live.iter_mut()) {
            if *mass == 0.0 {
                continue;
            }
            let decision = gate
                .decide(&Tally::new(w, end - w, end, remaining))?
                .decision;
            if decision.is_terminal() {
                if decision.is_accept() {
                    accept += *mass;
                }
                *mass = 0.0;
            }
        }
        previous = end;
    }
    Ok(accept.min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GateParams;

    #[test]
    fn block_ends_follow_the_ladder_and_cut_the_last_block() {
        assert_eq!(block_ends(25, &[10, 20, 40]).unwrap(), vec![10, 25]);
        assert_eq!(
            block_ends(100, &[10, 20]).unwrap(),
            vec![10, 30, 50, 70, 90, 100]
        );
        assert_eq!(block_ends(3, &[10]).unwrap(), vec![3]);
        assert!(block_ends(3, &[]).is_err());
        assert!(block_ends(3, &[2, 0]).is_err());
    }

    #[test]
    fn fewest_wins_agrees_with_a_brute_force_over_orders() {
        // Every sequence of wins and ties over 12 questions, asked at the
        // block ends of [4, 4]: the fewest wins of an accepting sequence.
        let gate = Gate::preset("seed").unwrap();
        let n = 12_u64;
        let ladder = [4_usize];
        let ends = block_ends(n, &ladder).unwrap();
        let mut best_confirmed: Option<u64> = None;
        let mut best_provisional: Option<u64> = None;
        for mask in 0_u32..(1 << n) {
            for &end in &ends {
                let wins = u64::from((mask & ((1_u32 << end) - 1)).count_ones());
                let d = gate
                    .decide(&Tally::new(wins, 0, end, n - end))
                    .unwrap()
                    .decision;
                let slot = match d {
                    GateDecision::AcceptConfirmed => &mut best_confirmed,
                    GateDecision::AcceptProvisional => &mut best_provisional,
                    _ => &mut None,
                };
                if d.is_accept() && slot.is_none_or(|b| wins < b) {
                    *slot = Some(wins);
                }
                if d.is_terminal() {
                    break;
                }
            }
        }
        let floor = fewest_wins(&gate, n, &ladder).unwrap();
        assert_eq!(floor.confirmed.map(|r| r.wins), best_confirmed);
        assert_eq!(floor.provisional.map(|r| r.wins), best_provisional);
    }

    #[test]
    fn a_raised_threshold_needs_more_questions() {
        let ladder = [10_usize, 20, 40];
        let seed = Gate::preset("seed").unwrap();
        let raised = Gate::new(GateParams {
            e_confirm: 400.0,
            e_provisional: 400.0,
            ..GateParams::default()
        })
        .unwrap();
        let few = fewest_questions(&seed, &ladder, 1000).unwrap().unwrap();
        let more = fewest_questions(&raised, &ladder, 1000).unwrap().unwrap();
        assert!(more > few, "{more} vs {few}");
        // At one question fewer nothing is accepted, at that many something is.
        let below = fewest_wins(&raised, more - 1, &ladder).unwrap();
        assert_eq!(below.smallest(), None);
        assert!(
            fewest_wins(&raised, more, &ladder)
                .unwrap()
                .smallest()
                .is_some()
        );
    }

    #[test]
    fn asked_after_every_question_it_is_the_pairwise_dynamic_program() {
        // A ladder of ones asks the gate after every pair, as `operating_characteristics` does.
        for name in crate::PRESET_NAMES {
            let gate = Gate::preset(name).unwrap();
            for p in [0.5, 0.6, 0.7] {
                let ours = ladder_accept_probability(&gate, 60, &[1], p).unwrap();
                let theirs = crate::operating_characteristics(&gate, 60, p)
                    .unwrap()
                    .accept;
                assert!(
                    (ours - theirs).abs() < 1e-12,
                    "{name} {p}: {ours} vs {theirs}"
                );
            }
        }
    }

    #[test]
    fn power_grows_with_the_win_rate_and_matches_certainty() {
        let gate = Gate::preset("calibrated").unwrap();
        let ladder = [10_usize, 20, 40];
        let p6 = ladder_accept_probability(&gate, 80, &ladder, 0.6).unwrap();
        let p7 = ladder_accept_probability(&gate, 80, &ladder, 0.7).unwrap();
        assert!(0.0 < p6 && p6 < p7 && p7 < 1.0, "{p6} {p7}");
        assert_eq!(
            ladder_accept_probability(&gate, 80, &ladder, 1.0).unwrap(),
            1.0
        );
        assert_eq!(
            ladder_accept_probability(&gate, 80, &ladder, 0.0).unwrap(),
            0.0
        );
        // Looking only at block ends, the false-accept rate stays within 1/20.
        assert!(ladder_accept_probability(&gate, 80, &ladder, 0.5).unwrap() <= 0.05);
    }
}
