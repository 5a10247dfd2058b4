//! The parts of an `evolve` session that are not the terminal's: its trajectories, its
//! gated comparison against the configured agent, and the slow update's comparison.
//!
//! - [`trajectories`]: the failure trajectories, read and held to the bad-input contract;
//! - [`gating`]: the candidate against the document it came from, on paired rollouts;
//! - [`slow`]: the comparison the slow update writes long-term guidance from.

pub mod gating;
pub mod slow;
pub mod trajectories;
