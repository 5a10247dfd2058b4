//! The pre-flight's reach of a gate calibrated exactly for its pool of gate questions: the
//! level the first candidate is tested at, the fewest wins an accept needs, the exact power at
//! the share of discordant pairs assumed, and the gate questions 50 % and 80 % power need.

use evolution_gate::{
    AcceptFloor, Gate, GateError, MAX_POOL_POWER_QUESTIONS, PoolBoundary, pool_accept_probability,
    pool_fewest_wins,
};
use evolution_harness::{ELond, GammaSequence, pool_boundary};

use super::reach::{GateReach, LedgerReach, MAX_NEEDED_SEARCH, NEEDED_AT_WIN_RATE, PoolReach};
use super::*;

/// The win rates the pre-flight states a pool boundary's power at.
pub const POOL_POWER_WIN_RATES: [f64; 3] = [0.6, 0.7, 0.8];

/// The powers the pre-flight says how many gate questions reach.
const NEEDED_POWERS: [f64; 2] = [0.5, 0.8];

impl GateSettings {
    /// [`GateSettings::reach_with`] for a gate calibrated for its pool, assuming
    /// `discordance` of the questions discordant.
    pub(super) fn pool_reach(
        &self,
        questions: usize,
        horizon: u64,
        ledger: Option<LedgerReach>,
        discordance: f64,
    ) -> anyhow::Result<GateReach> {
        let gate = Gate::new(self.params).map_err(|e| bad_option(format!("[gate]: {e}")))?;
        let gate_error = |e: GateError| bad_option(format!("[gate]: {e}"));
        let run_level = match self.fdr_alpha {
            Some(alpha) => {
                ELond::new(
                    alpha,
                    GammaSequence::Horizon {
                        proposals: horizon.max(1),
                    },
                )
                .map_err(|e| bad_option(format!("[gate] fdr_alpha: {e}")))?
                .next_level()
                .alpha_t
            }
            None => 1.0 / self.params.e_confirm,
        };
        let level = match &ledger {
            Some(l) if l.level.alpha_t <= 0.0 => {
                return Err(bad_option(
                    "[gate] ledger_horizon: the skill's ledger has spent its level (every test \
                     of its horizon is used); raise ledger_horizon to go on"
                        .to_owned(),
                ));
            }
            Some(l) => run_level.min(l.level.alpha_t),
            None => run_level,
        };
        let boundary = pool_boundary(&gate, questions, level, discordance, &self.ladder)
            .map_err(gate_error)?;
        let floor = match &boundary {
            Some(b) => Some(pool_fewest_wins(&gate, b, &self.ladder).map_err(gate_error)?),
            None if questions == 0 => Some(AcceptFloor::default()),
            None => None,
        };
        let power = match &boundary {
            Some(b) if b.questions() <= MAX_POOL_POWER_QUESTIONS => POOL_POWER_WIN_RATES
                .iter()
                .map(|&p| {
                    pool_accept_probability(&gate, b, &self.ladder, p, discordance)
                        .map(|power| (p, power))
                        .map_err(gate_error)
                })
                .collect::<anyhow::Result<Vec<_>>>()?,
            _ => Vec::new(),
        };
        let mut powers = PowerCache::default();
        let needed = NEEDED_POWERS
            .iter()
            .map(|&target| {
                needed_questions(&mut powers, &gate, level, discordance, &self.ladder, target)
                    .map(|n| (target, n))
                    .map_err(gate_error)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let fewest =
            fewest_pool_questions(&gate, level, discordance, &self.ladder).map_err(gate_error)?;
        Ok(GateReach {
            best_per_epoch: self.best_per_epoch,
            questions,
            distinct: questions,
            answers: 1,
            alike: None,
            e_confirm: 1.0 / level,
            e_provisional: 1.0 / level,
            fdr: self.fdr_alpha.map(|alpha| (alpha, horizon.max(1))),
            floor,
            power: Vec::new(),
            fewest_questions: fewest,
            scope: None,
            ledger,
            pool: Some(PoolReach {
                level,
                false_accept: boundary.as_ref().map(PoolBoundary::false_accept),
                discordance,
                power,
                needed,
            }),
        })
    }
}

/// The powers at a 70 % win rate already computed, by pool size.
#[derive(Default)]
struct PowerCache(std::collections::BTreeMap<u64, f64>);

impl PowerCache {
    /// The power of a pool of `questions` at a 70 % win rate.
    fn power_of(
        &mut self,
        gate: &Gate,
        questions: u64,
        level: f64,
        discordance: f64,
        ladder: &[usize],
    ) -> Result<f64, GateError> {
        if let Some(&power) = self.0.get(&questions) {
            return Ok(power);
        }
        let n = usize::try_from(questions).unwrap_or(usize::MAX);
        let power = match pool_boundary(gate, n, level, discordance, ladder)? {
            Some(b) => pool_accept_probability(gate, &b, ladder, NEEDED_AT_WIN_RATE, discordance)?,
            None => 0.0,
        };
        self.0.insert(questions, power);
        Ok(power)
    }
}

/// The fewest gate questions (a multiple of 5, up to 200) whose power at a 70 % win rate
/// reaches `target`: a bisection, power growing with the questions but for the steps of
/// discreteness.
fn needed_questions(
    powers: &mut PowerCache,
    gate: &Gate,
    level: f64,
    discordance: f64,
    ladder: &[usize],
    target: f64,
) -> Result<Option<u64>, GateError> {
    const STEP: u64 = 5;
    if powers.power_of(gate, MAX_NEEDED_SEARCH, level, discordance, ladder)? < target {
        return Ok(None);
    }
    let (mut lo, mut hi) = (0_u64, MAX_NEEDED_SEARCH / STEP);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if powers.power_of(gate, mid * STEP, level, discordance, ladder)? >= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi * STEP))
}

/// The fewest gate questions with which a pool boundary at `level` can accept anything: at
/// least `log2(1/level)` (every question won is the likeliest accept, `2^-n` for a candidate
/// that is not better), searched up from there.
fn fewest_pool_questions(
    gate: &Gate,
    level: f64,
    discordance: f64,
    ladder: &[usize],
) -> Result<Option<u64>, GateError> {
    let start = (1.0 / level).log2().ceil().max(1.0);
    // `start` is a small positive integer for any level in (0, 1) a double holds.
    let start = start as u64;
    for n in start..start.saturating_add(64) {
        let size = usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(b) = pool_boundary(gate, size, level, discordance, ladder)?
            && pool_fewest_wins(gate, &b, ladder)?.smallest().is_some()
        {
            return Ok(Some(n));
        }
    }
    Ok(None)
}
