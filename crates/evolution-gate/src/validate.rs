//! Block-validation decisions: pairing, quadrants, accuracy.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hash};

use crate::types::{ArmResult, PairResult, PairScore, QuadrantClassification};

use crate::GateError;

/// A map from question id to "answered correctly".
///
/// Implemented for `HashMap` and `BTreeMap` with any key that borrows as `str`.
pub trait Correctness {
    /// Whether question `id` was answered correctly, `None` if it has no entry.
    fn correct(&self, id: &str) -> Option<bool>;
}

impl<K, S> Correctness for HashMap<K, bool, S>
where
    K: Borrow<str> + Hash + Eq,
    S: BuildHasher,
{
    fn correct(&self, id: &str) -> Option<bool> {
        self.get(id).copied()
    }
}

impl<K> Correctness for BTreeMap<K, bool>
where
    K: Borrow<str> + Ord,
{
    fn correct(&self, id: &str) -> Option<bool> {
        self.get(id).copied()
    }
}

fn lookup<M: Correctness + ?Sized>(
    map: &M,
    id: &str,
    arm: &'static str,
) -> Result<bool, GateError> {
    map.correct(id).ok_or_else(|| GateError::MissingQuestion {
        id: id.to_owned(),
        arm,
    })
}

/// Pair the two arms question by question and count the flips.
///
/// `w` counts baseline-wrong/candidate-right, `l` the reverse. An empty id
/// list gives an empty result.
///
/// # Errors
/// [`GateError::MissingQuestion`] when an id is absent from either map,
/// [`GateError::DuplicateQuestion`] when an id is listed twice (it would be
/// counted twice but observed once).
pub fn pair_block<B, C, I>(
    baseline: &B,
    candidate: &C,
    question_ids: &[I],
) -> Result<PairResult, GateError>
where
    B: Correctness + ?Sized,
    C: Correctness + ?Sized,
    I: AsRef<str>,
{
    let mut result = PairResult::default();
    for id in question_ids {
        let id = id.as_ref();
        let b = lookup(baseline, id, "baseline")?;
        let c = lookup(candidate, id, "candidate")?;
        if result.observed.insert(id.to_owned(), (b, c)).is_some() {
            return Err(GateError::DuplicateQuestion { id: id.to_owned() });
        }
        match (b, c) {
            (false, true) => result.w += 1,
            (true, false) => result.l += 1,
            _ => {}
        }
    }
    Ok(result)
}

impl ArmResult {
    /// The rank the gate compares: `Failed < Wrong < Right`; none for `NotStarted`.
    fn rank(self) -> Option<u8> {
        match self {
            ArmResult::Right => Some(2),
            ArmResult::Wrong => Some(1),
            ArmResult::Failed => Some(0),
            ArmResult::NotStarted => None,
        }
    }
}

/// Scores one question of a paired comparison from what each arm produced.
///
/// The arm with the better result wins, with `Failed < Wrong < Right`: a
/// failure in the candidate's arm alone is a loss whatever the baseline
/// answered, a failure in the baseline's arm alone a win. Scoring a failure
/// against the arm that failed, instead of leaving the question out, is what
/// keeps a candidate from passing by making the agent give up on the
/// questions it would lose. The question is left out only when nothing can
/// be compared: both arms failed, or either arm never started.
///
/// ```
/// use evolution_gate::{ArmResult, PairScore, score_pair};
///
/// assert_eq!(score_pair(ArmResult::Wrong, ArmResult::Failed), PairScore::Loss);
/// assert_eq!(score_pair(ArmResult::Failed, ArmResult::Wrong), PairScore::Win);
/// assert_eq!(score_pair(ArmResult::Failed, ArmResult::Failed), PairScore::Excluded);
/// assert_eq!(score_pair(ArmResult::Right, ArmResult::NotStarted), PairScore::Excluded);
/// ```
pub fn score_pair(baseline: ArmResult, candidate: ArmResult) -> PairScore {
    match (baseline.rank(), candidate.rank()) {
        (Some(0), Some(0)) | (None, _) | (_, None) => PairScore::Excluded,
        (Some(b), Some(c)) if c > b => PairScore::Win,
        (Some(b), Some(c)) if c < b => PairScore::Loss,
        _ => PairScore::Tie,
    }
}

/// The pair [`score_pair`] counts, as (baseline right, candidate right) the
/// way [`pair_block`] and [`classify_quadrants`] read it: `None` for a
/// question left out; a win is `(false, true)` and a loss `(true, false)`
/// even when the side that "won" answered wrong (against a failure); a tie
/// keeps the arms' own correctness.
pub fn scored_pair(baseline: ArmResult, candidate: ArmResult) -> Option<(bool, bool)> {
    match score_pair(baseline, candidate) {
        PairScore::Win => Some((false, true)),
        PairScore::Loss => Some((true, false)),
        PairScore::Tie => Some((baseline == ArmResult::Right, candidate == ArmResult::Right)),
        PairScore::Excluded => None,
    }
}

/// Sort paired outcomes into the four quadrants, each list in id order.
pub fn classify_quadrants(observed: &BTreeMap<String, (bool, bool)>) -> QuadrantClassification {
    let mut qc = QuadrantClassification::default();
    // A BTreeMap iterates in key order, so every quadrant comes out sorted.
    for (id, &(before, now)) in observed {
        let bucket = match (before, now) {
            (false, true) => &mut qc.improvements,
            (true, false) => &mut qc.regressions,
            (false, false) => &mut qc.persistent_fails,
            (true, true) => &mut qc.stable_successes,
        };
        bucket.push(id.clone());
    }
    qc
}

/// Share of `question_ids` answered correctly.
///
/// # Errors
/// [`GateError::EmptyQuestionIds`] for an empty list,
/// [`GateError::MissingQuestion`] for an id without an entry,
/// [`GateError::DuplicateQuestion`] for an id listed twice.
pub fn compute_accuracy<M, I>(correctness: &M, question_ids: &[I]) -> Result<f64, GateError>
where
    M: Correctness + ?Sized,
    I: AsRef<str>,
{
    if question_ids.is_empty() {
        return Err(GateError::EmptyQuestionIds);
    }
    let mut seen = BTreeSet::new();
    let mut correct = 0_u64;
    for id in question_ids {
        let id = id.as_ref();
        if !seen.insert(id) {
            return Err(GateError::DuplicateQuestion { id: id.to_owned() });
        }
        if lookup(correctness, id, "correctness")? {
            correct += 1;
        }
    }
    Ok(correct as f64 / seen.len() as f64)
}
