//! Outputs of the block-validation decisions (seed §4.4, §7).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Paired outcomes of one validation block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PairResult {
    /// Questions the baseline got wrong and the candidate right.
    pub w: u64,
    /// Questions the baseline got right and the candidate wrong.
    pub l: u64,
    /// Question id → (baseline correct, candidate correct).
    pub observed: BTreeMap<String, (bool, bool)>,
}

/// The four quadrants of a paired comparison, each sorted by question id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct QuadrantClassification {
    /// Wrong before, right now.
    pub improvements: Vec<String>,
    /// Right before, wrong now.
    pub regressions: Vec<String>,
    /// Wrong in both.
    pub persistent_fails: Vec<String>,
    /// Right in both.
    pub stable_successes: Vec<String>,
}
