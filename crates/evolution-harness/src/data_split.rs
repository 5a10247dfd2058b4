//! The question sets of a run — training, gate, holdout and probation — checked disjoint
//! before any rollout.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::validate::ValidationError;

/// The question sets of a run: evidence for diagnosis and writing (`train`),
/// the gate's questions (`gate`), and questions only ever used to report
/// the final score (`holdout`). Built only if the three are disjoint, so a
/// run configured to gate on its own evidence fails before any rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSplit {
    train: BTreeSet<String>,
    gate: BTreeSet<String>,
    holdout: BTreeSet<String>,
    #[serde(default)]
    probation: BTreeSet<String>,
}

impl DataSplit {
    /// Checks and builds a split.
    ///
    /// # Errors
    /// [`ValidationError::SplitOverlap`] listing every id in two sets;
    /// [`ValidationError::DuplicateQuestion`] for an id listed twice in one set;
    /// [`ValidationError::NoQuestions`] when the gate set is empty.
    pub fn new<S: AsRef<str>>(
        train: &[S],
        gate: &[S],
        holdout: &[S],
    ) -> Result<Self, ValidationError> {
        fn set<S: AsRef<str>>(ids: &[S]) -> Result<BTreeSet<String>, ValidationError> {
            let mut out = BTreeSet::new();
            for id in ids {
                if !out.insert(id.as_ref().to_owned()) {
                    return Err(ValidationError::DuplicateQuestion(id.as_ref().to_owned()));
                }
            }
            Ok(out)
        }
        let (train, gate, holdout) = (set(train)?, set(gate)?, set(holdout)?);
        if gate.is_empty() {
            return Err(ValidationError::NoQuestions);
        }
        let overlap: BTreeSet<String> = train
            .intersection(&gate)
            .chain(train.intersection(&holdout))
            .chain(gate.intersection(&holdout))
            .cloned()
            .collect();
        if !overlap.is_empty() {
            return Err(ValidationError::SplitOverlap(overlap.into_iter().collect()));
        }
        Ok(DataSplit {
            train,
            gate,
            holdout,
            probation: BTreeSet::new(),
        })
    }

    /// The same split with a probation pool: questions that judge a
    /// provisionally accepted version and nothing else.
    ///
    /// # Errors
    /// [`ValidationError::DuplicateQuestion`] for an id listed twice;
    /// [`ValidationError::SplitOverlap`] listing every pool id that is also
    /// a training, gate or holdout question.
    pub fn with_probation<S: AsRef<str>>(self, probation: &[S]) -> Result<Self, ValidationError> {
        let mut pool = BTreeSet::new();
        for id in probation {
            if !pool.insert(id.as_ref().to_owned()) {
                return Err(ValidationError::DuplicateQuestion(id.as_ref().to_owned()));
            }
        }
        let overlap: Vec<String> = pool
            .iter()
            .filter(|id| {
                self.train.contains(*id) || self.gate.contains(*id) || self.holdout.contains(*id)
            })
            .cloned()
            .collect();
        if !overlap.is_empty() {
            return Err(ValidationError::SplitOverlap(overlap));
        }
        Ok(DataSplit {
            probation: pool,
            ..self
        })
    }

    /// Questions diagnosis and evolution may learn from.
    pub fn train(&self) -> &BTreeSet<String> {
        &self.train
    }

    /// Questions the gate validates on.
    pub fn gate(&self) -> &BTreeSet<String> {
        &self.gate
    }

    /// Questions kept for the final report.
    pub fn holdout(&self) -> &BTreeSet<String> {
        &self.holdout
    }

    /// Questions that judge provisionally accepted versions.
    pub fn probation(&self) -> &BTreeSet<String> {
        &self.probation
    }
}
