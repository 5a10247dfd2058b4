//! How a test's accepts are calibrated: by the e-process's thresholds, valid past any number
//! of questions, or exactly for the test's own pool of gate questions.
//!
//! A gatekeeper whose configuration says [`Calibration::Pool`] builds, for each candidate, the
//! boundary of [`evolution_gate::PoolBoundary::design`] for the questions that candidate may
//! draw, at the level the test is granted (e-LOND's `α_t`, the ledger's if stricter, or
//! `1/e_confirm` without either), and hands e-LOND the e-value `1{accept}/α_t`. Where the
//! discordant pairs are expected among the questions places the boundary's spending; it never
//! touches its validity, so the share measured on the run's earlier tests may choose it.

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
    /// Discordant pairs (wins and losses) over every test.
    pub discordant: u64,
    /// Paired questions (ties included) over every test.
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

/// The boundary of a pool of `questions` gate questions at `level`, shaped for `discordance`,
/// asked at the block ends of `ladder`; `None` for a pool larger than
/// [`MAX_POOL_QUESTIONS`] (the e-process decides there) or no question.
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
        level,
        discordance: discordance.clamp(MIN_DESIGN_DISCORDANCE, 1.0),
        win_rate: POOL_WIN_RATE,
    };
    PoolBoundary::design(gate, &design, ladder).map(Some)
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
