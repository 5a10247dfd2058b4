//! The crate's error type.

/// Why a gate or block-validation function refused its input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// [`Gate::decide`](crate::Gate::decide) needs at least one used question (`δ̂` divides by it).
    #[error("n_used must be at least 1")]
    NoQuestionsUsed,
    /// More wins and losses than questions used.
    #[error("w + l = {w} + {l} exceeds n_used = {n_used}")]
    CountsExceedUsed {
        /// Wins.
        w: u64,
        /// Losses.
        l: u64,
        /// Questions used.
        n_used: u64,
    },
    /// A threshold of `GateParams` is out of range (NaN, infinite, or an e-value threshold ≤ 1).
    #[error("invalid gate parameter {field} = {value}: {reason}")]
    InvalidParams {
        /// Field name of `GateParams`.
        field: &'static str,
        /// The offending value.
        value: f64,
        /// What the field must satisfy.
        reason: &'static str,
    },
    /// [`GateParams::preset`](crate::GateParams::preset) was given a name not in
    /// [`PRESET_NAMES`](crate::PRESET_NAMES).
    #[error("unknown gate preset {name:?} (known: seed, calibrated, thrifty, thorough)")]
    UnknownPreset {
        /// The name given.
        name: String,
    },
    /// [`operating_characteristics`](crate::operating_characteristics) was given a
    /// win probability outside `[0, 1]` (or NaN).
    #[error("win probability {p} is not in [0, 1]")]
    InvalidWinProbability {
        /// The probability given.
        p: f64,
    },
    /// [`operating_characteristics`](crate::operating_characteristics) was given a
    /// budget of zero pairs or above its limit.
    #[error("budget {budget} is not in 1..={max}")]
    InvalidBudget {
        /// The budget given.
        budget: u64,
        /// The largest budget accepted.
        max: u64,
    },
    /// A finite pool's boundary or its power was asked for with values it cannot take (see
    /// [`PoolBoundary`](crate::PoolBoundary)).
    #[error("invalid pool calibration: {reason}")]
    InvalidPool {
        /// What was wrong.
        reason: String,
    },
    /// A block ladder that is empty or holds a block of size 0.
    #[error("the block ladder must list block sizes of at least 1")]
    InvalidLadder,
    /// `compute_accuracy` was given no question ids.
    #[error("the question id list is empty")]
    EmptyQuestionIds,
    /// A question id has no entry in one of the maps.
    #[error("question {id:?} is missing from the {arm} results")]
    MissingQuestion {
        /// The id that was looked up.
        id: String,
        /// Which map lacked it: `baseline`, `candidate` or `correctness`.
        arm: &'static str,
    },
    /// A question id appears twice in the id list.
    #[error("question {id:?} appears more than once in the id list")]
    DuplicateQuestion {
        /// The repeated id.
        id: String,
    },
}
