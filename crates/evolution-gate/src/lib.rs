//! The CE-Gate: decides from paired evaluations whether a candidate skill or
//! prompt beats its baseline, with a false-accept guarantee that survives
//! looking at the data after every block (seed §5, §7).
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
//! * [`ln_e_value`] / [`compute_e_value`]: `E(W, L)`, within about 1e-13
//!   relative error of the exact value for every `W, L ≤ 10^7`.
//! * [`wald_lambda`]: `W·ln 1.4 + L·ln 0.6`.
//! * [`gate_decision`], [`probation_verdict`]: the decision rules.
//! * [`pair_block`], [`classify_quadrants`], [`compute_accuracy`]: the pure
//!   parts of block validation.

mod decision;
mod error;
mod evalue;
mod validate;

pub use crate::decision::{gate_decision, probation_verdict};
pub use crate::error::GateError;
pub use crate::evalue::{compute_e_value, ln_e_value, wald_lambda};
pub use crate::validate::{Correctness, classify_quadrants, compute_accuracy, pair_block};
