//! The CE-Gate: decides from paired evaluations whether a candidate skill or
//! prompt beats its baseline, with a false-accept guarantee that survives
//! looking at the data after every block.
//!
//! Key design choice: the evidence is an e-process, the mixture likelihood
//! ratio `E(W, L)` of `p ~ Uniform[1/2, 1]` against `p = 1/2` over the
//! discordant pairs, computed *exactly* in log space from its finite
//! binomial-sum form (no incomplete-beta approximation, no cancellation), so
//! Ville's inequality `P(sup_t E_t ≥ 1/α) ≤ α` applies to the numbers the
//! code actually compares. Everything here is pure arithmetic on counts: no
//! I/O, no time, no async. See `docs/gate.md` for the derivation and the
//! measured calibration.
//!
//! * [`ln_e_value`] / [`compute_e_value`]: `E(W, L)`, aimed at 1e-12 relative
//!   error (absolute where `|ln E| < 1`) for every `W, L ≤ 10^7`; tested to
//!   1e-13 against exact rationals and by identities up to `10^7`, and total
//!   (finite, no NaN, fast) over all of `u64`.
//! * [`wald_lambda`]: `W·ln 1.4 + L·ln 0.6`.
//! * [`Gate`]: the decision rules. [`Gate::new`] checks a [`GateParams`]
//!   once; [`Gate::decide`] then answers a [`Tally`] of wins, losses and
//!   questions with a [`GateVerdict`], and [`Gate::probation`] judges a
//!   provisionally accepted version ([`ProbationVerdict`]).
//! * [`GateParams::preset`] / [`Gate::preset`]: the named parameter sets of
//!   [`PRESET_NAMES`] (`seed`, the default, is the parameter set of the
//!   reference implementation — the original Python system this workspace
//!   reimplements — whose names and spellings the types keep); [`EProcess`] chooses the evidence (the uniform mixture
//!   by default, or Wald's likelihood ratio for one alternative).
//! * [`PoolBoundary`] and [`Gate::decide_in_pool`]: the accept boundary of a finite pool of
//!   gate questions, calibrated exactly for it (worst case, every look), so the level a test
//!   is granted is spent, not a fifth of it; [`pool_accept_probability`] its exact power and
//!   [`pool_worst_case_false_accept`] its exact false-accept rate against an adaptive
//!   candidate that is not better.
//! * [`operating_characteristics`]: the exact false-accept rate, power and
//!   expected pairs of a gate, by dynamic program over the discordant pairs.
//! * [`fewest_wins`], [`fewest_questions`], [`ladder_accept_probability`]:
//!   what a gate asked only at the block ends of a ladder can accept with a
//!   given number of questions, and how often ([`AcceptFloor`]).
//! * [`score_pair`] / [`scored_pair`]: how one question counts from what
//!   each arm produced ([`ArmResult`]): the better result wins, with a
//!   failure ranked below a wrong answer, so a failure counts against the
//!   version that failed; a question is left out only when both arms failed
//!   or one never started ([`PairScore::Excluded`]).
//! * [`pair_block`], [`classify_quadrants`], [`compute_accuracy`]: the pure
//!   parts of block validation, returning [`PairResult`] and
//!   [`QuadrantClassification`].
//!
//! The crate depends on no other crate of this workspace: every type its
//! functions take or return is defined here.

// The kernel performs no I/O: the calls clippy.toml lists are refused here.
#![cfg_attr(not(test), deny(clippy::disallowed_methods, clippy::disallowed_types))]
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod characteristics;
mod decision;
mod discordance;
mod error;
mod evalue;
mod pool;
mod reach;
mod types;
mod validate;

pub use crate::characteristics::{
    MAX_CHARACTERISTICS_BUDGET, OperatingCharacteristics, operating_characteristics,
};
pub use crate::decision::{Gate, Tally};
pub use crate::error::GateError;
pub use crate::evalue::{compute_e_value, ln_e_value, wald_lambda};
pub use crate::pool::{
    MAX_POOL_POWER_QUESTIONS, MAX_POOL_QUESTIONS, PoolBoundary, PoolDesign, SpendingShape,
    pool_accept_probability, pool_fewest_wins, pool_worst_case_false_accept,
};
pub use crate::reach::{
    AcceptFloor, MAX_REACH_QUESTIONS, SmallestRecord, block_ends, fewest_questions, fewest_wins,
    ladder_accept_probability,
};
pub use crate::types::{
    ArmResult, EProcess, GateDecision, GateParams, GateVerdict, PRESET_NAMES, PairResult,
    PairScore, ProbationVerdict, QuadrantClassification,
};
pub use crate::validate::{
    Correctness, classify_quadrants, compute_accuracy, pair_block, score_pair, scored_pair,
};
