//! `evolve --slow-update`: the comparison the harness's slow update writes
//! long-term guidance from, built for `evolve`. Gated, it is the agent's
//! answers on the training questions under the original and under the
//! candidate (what `run` compares between two epochs). Ungated there is no
//! agent to ask: the comparison is the trajectories themselves, each failure
//! counted as improved when the meta-reflection judged it addressed and as
//! still failing otherwise, and the report says so.

use std::collections::{BTreeMap, BTreeSet};

use evolution_evolve::reflect::Round;
use evolution_harness::{ComparisonPair, SlowUpdate};
use evolution_types::{GeneratedQuestion, Prediction};
use serde::Serialize;

use super::trajectories::Trajectory;

/// What the slow update did, as the summary and `report.json` keep it.
#[derive(Debug, Clone, Serialize)]
pub struct SlowReport {
    /// Whether new guidance was written into the candidate.
    pub updated: bool,
    /// The guidance now in the region (the previous one when kept).
    pub guidance: String,
    /// Why the previous guidance was kept, or why the update did not run.
    pub note: Option<String>,
    /// What the comparison was made of.
    pub compared_on: String,
}

impl SlowReport {
    /// The report of a slow update that did not run, and why.
    pub fn skipped(why: &str) -> Self {
        SlowReport {
            updated: false,
            guidance: String::new(),
            note: Some(why.to_owned()),
            compared_on: String::new(),
        }
    }

    /// The report of a slow update that ran on `compared_on`.
    pub fn of(update: &SlowUpdate, compared_on: String) -> Self {
        SlowReport {
            updated: update.updated,
            guidance: update.guidance.clone(),
            note: update.kept_because.clone(),
            compared_on,
        }
    }
}

/// What the predictions of an ungated comparison say, since no agent ran.
const NOT_RERUN_ADDRESSED: &str =
    "(not rerun: the meta-reflection judged this failure addressed by the candidate)";
const NOT_RERUN_OPEN: &str = "(not rerun: this failure is still open after the rounds)";

/// The ungated comparison: every failure, improved when an accepted round's
/// meta-reflection addressed it and no later one left it open.
pub fn ungated_pairs(failures: &[Trajectory], rounds: &[Round]) -> Vec<ComparisonPair> {
    let mut addressed = BTreeSet::new();
    for round in rounds.iter().filter(|r| r.accepted) {
        for id in &round.meta.addressed {
            addressed.insert(id.as_str());
        }
        for (id, _) in &round.meta.unaddressed {
            addressed.remove(id.as_str());
        }
    }
    failures
        .iter()
        .map(|f| {
            let fixed = addressed.contains(f.id.as_str());
            ComparisonPair {
                question_id: f.id.clone(),
                question: f.question.clone(),
                answer: f.reference_text.clone(),
                previous_prediction: f.predicted_answer.clone(),
                previous_correct: false,
                current_prediction: if fixed {
                    NOT_RERUN_ADDRESSED
                } else {
                    NOT_RERUN_OPEN
                }
                .to_owned(),
                current_correct: fixed,
            }
        })
        .collect()
}

/// The gated comparison: the questions both versions answered (a question
/// that failed for infrastructure reasons in either is left out).
pub fn gated_pairs(
    questions: &[GeneratedQuestion],
    before: &BTreeMap<String, Prediction>,
    after: &BTreeMap<String, Prediction>,
) -> Vec<ComparisonPair> {
    questions
        .iter()
        .filter_map(|q| {
            let b = before.get(&q.question_id)?;
            let a = after.get(&q.question_id)?;
            Some(ComparisonPair {
                question_id: q.question_id.clone(),
                question: q.question.clone(),
                answer: q.answer.clone(),
                previous_prediction: b.prediction.clone(),
                previous_correct: b.correct,
                current_prediction: a.prediction.clone(),
                current_correct: a.correct,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use evolution_evolve::reflect::Meta;

    use super::*;

    fn failure(id: &str) -> Trajectory {
        Trajectory {
            id: id.to_owned(),
            task_description: String::new(),
            question: format!("question {id}"),
            fail_reason: "wrong".to_owned(),
            predicted_answer: "p".to_owned(),
            reference_text: "r".to_owned(),
            feedback: String::new(),
        }
    }

    fn round(accepted: bool, addressed: &[&str], open: &[&str]) -> Round {
        Round {
            round: 1,
            budget: None,
            trajectories: 0,
            proposed: 0,
            dropped: Vec::new(),
            selected: Vec::new(),
            clip: serde_json::Map::new(),
            reports: Vec::new(),
            breaches: Vec::new(),
            accepted,
            meta: Meta {
                addressed: addressed.iter().map(|s| (*s).to_owned()).collect(),
                unaddressed: open
                    .iter()
                    .map(|s| ((*s).to_owned(), "w".to_owned()))
                    .collect(),
                ..Meta::default()
            },
        }
    }

    #[test]
    fn ungated_pairs_follow_the_accepted_rounds_verdicts() {
        let failures = [failure("t1"), failure("t2"), failure("t3")];
        let rounds = [
            round(true, &["t1", "t2"], &["t3"]),
            round(false, &["t3"], &[]),
            round(true, &[], &["t2"]),
        ];
        let pairs = ungated_pairs(&failures, &rounds);
        let fixed: Vec<bool> = pairs.iter().map(|p| p.current_correct).collect();
        assert_eq!(fixed, [true, false, false]);
        assert!(pairs.iter().all(|p| !p.previous_correct));
        assert_eq!(pairs[0].current_prediction, NOT_RERUN_ADDRESSED);
        assert_eq!(pairs[2].current_prediction, NOT_RERUN_OPEN);
    }
}
