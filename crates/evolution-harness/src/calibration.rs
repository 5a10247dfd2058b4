//! How a test's accepts are calibrated: by the e-process's thresholds, valid past any number
//! of questions, or exactly for the test's own pool of gate questions.
//!
//! A gatekeeper whose configuration says [`Calibration::Pool`] builds, for each candidate, the
//! boundary of [`evolution_gate::PoolBoundary::design`] for the questions that candidate may
//! draw, at the level the test is granted (e-LOND's `α_t`, the ledger's if stricter, or
//! `1/e_confirm` without either), and hands e-LOND the e-value `1{accept}/α_t`. Where the
//! discordant pairs are expected among the questions places the boundary's spending; it never
//! touches its validity, so the share measured on the run's earlier tests may choose it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use evolution_gate::{Gate, GateError, MAX_POOL_QUESTIONS, PoolBoundary, PoolDesign};
use serde::{Deserialize, Serialize};

/// The win rate among discordant pairs a pool boundary is shaped to find.
pub const POOL_WIN_RATE: f64 = 0.7;

/// Paired questions a run must have seen before the share of discordant ones it measured
/// replaces the assumed share.
pub const MEASURED_DISCORDANCE_MIN_QUESTIONS: u64 = 20;

/// The least share of discordant pairs a design assumes (a pool shaped for fewer spends its
/// level on pairs that almost never come).
pub const MIN_DESIGN_DISCORDANCE: f64 = 0.05;

/// The step a measured share of discordant pairs is rounded to before a boundary is shaped
/// for it: a shape is valid for any share, and nearby shares give nearly the same power, so
/// rounding lets tests of one run (and runs of one process) reuse a design.
pub const DESIGN_DISCORDANCE_STEP: f64 = 0.05;

/// Designs kept for reuse before the memo starts again (each is a few kilobytes).
const MAX_MEMO_DESIGNS: usize = 512;

/// How a gatekeeper calibrates its accepts.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Calibration {
    /// The e-process against `e_confirm` and `e_provisional` (raised to e-LOND's threshold):
    /// valid past any number of questions, Ville's bound.
    #[default]
    EProcess,
    /// Each test's boundary calibrated exactly for its pool of gate questions: the level is
    /// spent, not a fraction of it. No provisional accepts.
    Pool {
        /// The share of questions assumed discordant until the run has measured it on
        /// [`MEASURED_DISCORDANCE_MIN_QUESTIONS`] paired questions, in `(0, 1]`.
        discordance: f64,
    },
}

/// The discordant pairs and paired questions of a run's tests so far: the measured share of
/// discordant pairs that shapes the next pool boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DiscordanceTally {
    /// Discordant pairs (wins and losses) over every screen and test.
    pub discordant: u64,
    /// Paired questions (ties included) over every screen and test.
    pub paired: u64,
}

impl DiscordanceTally {
    /// Adds one test's counts.
    pub fn add(&mut self, discordant: u64, paired: u64) {
        self.discordant = self.discordant.saturating_add(discordant);
        self.paired = self.paired.saturating_add(paired);
    }

    /// The measured share once enough questions were paired, else `assumed`; never below
    /// [`MIN_DESIGN_DISCORDANCE`], never above one.
    pub fn share_or(&self, assumed: f64) -> f64 {
        let share = if self.paired >= MEASURED_DISCORDANCE_MIN_QUESTIONS {
            self.discordant as f64 / self.paired as f64
        } else {
            assumed
        };
        share.clamp(MIN_DESIGN_DISCORDANCE, 1.0)
    }
}

/// The boundary of a pool of `questions` gate questions at `level` (rounded down to four
/// significant digits), shaped for `discordance` (rounded to [`DESIGN_DISCORDANCE_STEP`]), asked at the block ends of `ladder`; `None` for
/// a pool larger than [`MAX_POOL_QUESTIONS`] (the e-process decides there) or no question.
///
/// Designing a boundary computes its power for several shapes; the same design asked again
/// (the same gate settings, pool, level, share and ladder) is returned from a memo.
///
/// # Errors
/// The gate's, for a level outside `(0, 1)` or a bad ladder.
pub fn pool_boundary(
    gate: &Gate,
    questions: usize,
    level: f64,
    discordance: f64,
    ladder: &[usize],
) -> Result<Option<PoolBoundary>, GateError> {
    let questions = u64::try_from(questions).unwrap_or(u64::MAX);
    if questions == 0 || questions > MAX_POOL_QUESTIONS {
        return Ok(None);
    }
    let design = PoolDesign {
        questions,
        level: design_level(level),
        discordance: design_discordance(discordance),
        win_rate: POOL_WIN_RATE,
    };
    let key = format!(
        "{:?}|{questions}|{:x}|{:x}|{ladder:?}",
        gate.params(),
        design.level.to_bits(),
        design.discordance.to_bits()
    );
    static MEMO: Mutex<Option<HashMap<String, PoolBoundary>>> = Mutex::new(None);
    if let Some(found) = MEMO
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|memo| memo.get(&key))
    {
        return Ok(Some(found.clone()));
    }
    let boundary = PoolBoundary::design(gate, &design, ladder)?;
    let mut memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    let memo = memo.get_or_insert_with(HashMap::new);
    if memo.len() >= MAX_MEMO_DESIGNS {
        memo.clear();
    }
    memo.insert(key, boundary.clone());
    Ok(Some(boundary))
}

/// The level a boundary is built for when a test is granted `level`: rounded down to four
/// significant digits, so a boundary never spends more than granted, and levels that differ
/// only by the rounding of a sum (a ledger's `(α − spent)/(tests left)`) share one design.
/// A level that is not in `(0, 1)` is returned as it is, for the design to refuse.
fn design_level(level: f64) -> f64 {
    if !(level > 0.0 && level < 1.0) {
        return level;
    }
    let scale = 10f64.powf(3.0 - level.log10().floor());
    let rounded = (level * scale).floor() / scale;
    if rounded > 0.0 && rounded <= level {
        rounded
    } else {
        level
    }
}

/// The share a boundary is shaped for when `discordance` is measured or assumed: rounded to
/// [`DESIGN_DISCORDANCE_STEP`] within `[MIN_DESIGN_DISCORDANCE, 1]`; a share that is not a
/// number counts as every pair discordant.
pub fn design_discordance(discordance: f64) -> f64 {
    if discordance.is_nan() {
        return 1.0;
    }
    let rounded = (discordance / DESIGN_DISCORDANCE_STEP).round() * DESIGN_DISCORDANCE_STEP;
    rounded.clamp(MIN_DESIGN_DISCORDANCE, 1.0)
}

/// What a test calibrated for its pool was held to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoolCheck {
    /// Gate questions in the pool.
    pub questions: u64,
    /// The level the test was granted.
    pub level: f64,
    /// The boundary's exact worst-case false-accept rate (at most `level`).
    pub false_accept: f64,
    /// The share of discordant pairs the boundary was shaped for.
    pub discordance: f64,
    /// Wins an accept needed at the final count of discordant pairs (`None`: none could).
    pub wins_needed: Option<u64>,
}

#[cfg(test)]
mod tests {
    use evolution_gate::GateParams;

    use super::*;

    #[test]
    fn a_share_is_rounded_to_the_design_step_within_its_range() {
        assert!((design_discordance(0.43) - 0.45).abs() < 1e-12);
        assert!((design_discordance(0.41) - 0.40).abs() < 1e-12);
        assert!((design_discordance(0.0) - MIN_DESIGN_DISCORDANCE).abs() < 1e-12);
        assert!((design_discordance(3.0) - 1.0).abs() < 1e-12);
        assert!((design_discordance(f64::NAN) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_design_asked_again_is_the_same_boundary_and_nearby_shares_share_it() {
        let gate = Gate::new(GateParams::calibrated()).unwrap();
        let first = pool_boundary(&gate, 30, 0.01, 0.41, &[5]).unwrap().unwrap();
        let again = pool_boundary(&gate, 30, 0.01, 0.39, &[5]).unwrap().unwrap();
        assert_eq!(first, again);
        let fresh = PoolBoundary::design(
            &gate,
            &PoolDesign {
                questions: 30,
                level: 0.01,
                discordance: 0.4,
                win_rate: POOL_WIN_RATE,
            },
            &[5],
        )
        .unwrap();
        assert_eq!(first, fresh);
        assert!(first.false_accept() <= 0.01);
        // Another level is another design.
        let other = pool_boundary(&gate, 30, 0.02, 0.4, &[5]).unwrap().unwrap();
        assert!((other.level() - 0.02).abs() < 1e-15);
    }

    #[test]
    fn a_level_is_rounded_down_to_four_digits_never_up() {
        for level in [0.05 / 365.0, 0.01, 0.0033333, 0.123_456_7, 1e-9, 0.999_99] {
            let rounded = design_level(level);
            assert!(
                rounded <= level && rounded > level * 0.999,
                "{level} -> {rounded}"
            );
        }
        let sum = (0..365).fold(0.0, |s, _| s + 0.05 / 365.0);
        assert_eq!(
            design_level((0.05 - sum + 0.05 / 365.0) / 1.0),
            design_level(0.05 / 365.0)
        );
        assert!(design_level(0.0) == 0.0 && design_level(1.5) == 1.5);
    }

    #[test]
    fn no_question_or_a_pool_past_the_exact_limit_has_no_boundary() {
        let gate = Gate::new(GateParams::calibrated()).unwrap();
        assert!(pool_boundary(&gate, 0, 0.01, 0.5, &[5]).unwrap().is_none());
        let too_many = usize::try_from(MAX_POOL_QUESTIONS + 1).unwrap();
        assert!(
            pool_boundary(&gate, too_many, 0.01, 0.5, &[5])
                .unwrap()
                .is_none()
        );
    }
}
