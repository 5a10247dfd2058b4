//! Probation: a provisionally accepted version is watched on later runs
//! until the evidence confirms it or calls for a rollback.

use std::collections::BTreeMap;

use evolution_gate::{Gate, ProbationVerdict};
use evolution_types::StoreError;
use serde::{Deserialize, Serialize};

use evolution_types::VersionedStore;

/// The watch over one provisionally accepted version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probation {
    /// The version on probation.
    pub version: String,
    /// The version it replaced, restored on rollback.
    pub previous_version: String,
    /// Questions the previous version got wrong and this one right, so far.
    pub w: u64,
    /// Questions the previous version got right and this one wrong, so far.
    pub l: u64,
    /// Questions already counted, so a question seen again is not counted twice.
    pub seen: BTreeMap<String, (bool, bool)>,
}

/// What settling a probation did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbationOutcome {
    /// The verdict.
    pub verdict: ProbationVerdict,
    /// The version current after settling.
    pub current_version: String,
}

impl Probation {
    /// Starts watching `version`, which replaced `previous_version`.
    pub fn new(version: impl Into<String>, previous_version: impl Into<String>) -> Self {
        Probation {
            version: version.into(),
            previous_version: previous_version.into(),
            w: 0,
            l: 0,
            seen: BTreeMap::new(),
        }
    }

    /// Adds the pairs of a later run: question id → (previous version
    /// correct, this version correct). Questions already counted are skipped;
    /// returns how many were new.
    pub fn observe(&mut self, observed: &BTreeMap<String, (bool, bool)>) -> usize {
        let mut added = 0_usize;
        for (id, &(before, now)) in observed {
            if self.seen.contains_key(id) {
                continue;
            }
            self.seen.insert(id.clone(), (before, now));
            match (before, now) {
                (false, true) => self.w = self.w.saturating_add(1),
                (true, false) => self.l = self.l.saturating_add(1),
                _ => {}
            }
            added = added.saturating_add(1);
        }
        added
    }

    /// The verdict of `gate` on the evidence so far.
    pub fn verdict(&self, gate: &Gate) -> ProbationVerdict {
        gate.probation(self.w, self.l)
    }

    /// Decides, and on [`ProbationVerdict::Rollback`] makes the previous
    /// version current again through `store` (when the version on probation
    /// is still current; a later accept is never undone behind its back).
    ///
    /// # Errors
    /// The store's error; the probation is unchanged then.
    pub fn settle(
        &self,
        store: &dyn VersionedStore,
        gate: &Gate,
    ) -> Result<ProbationOutcome, StoreError> {
        let verdict = self.verdict(gate);
        let current = store.current_version()?;
        if verdict == ProbationVerdict::Rollback && current == self.version {
            store.rollback(&self.previous_version)?;
            return Ok(ProbationOutcome {
                verdict,
                current_version: self.previous_version.clone(),
            });
        }
        Ok(ProbationOutcome {
            verdict,
            current_version: current,
        })
    }
}
