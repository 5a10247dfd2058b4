//! Several answers per gate question: each question asked `k` times of each arm, every
//! answer its own pair.
//!
//! A stochastic agent answers the same question differently from one try to the next, so a
//! second answer of each arm is a second paired observation of the same question. The gate's
//! claim is conditional on the questions: given them, each pair's outcome comes from the
//! agent's own randomness, independently of the other tries, so under "the candidate is not
//! better on any of these questions" every discordant pair is still a win with probability at
//! most ½, and the pool calibration holds for `k × n` pairs. What `k > 1` buys is certainty
//! about *these* questions; it says nothing more about questions unlike them. For an agent
//! that answers alike every time, a repeat is the same pair again and adds nothing but cost.
//!
//! The copies are ordinary questions with their own ids (`<id>#2`, `<id>#3`, …; the first
//! keeps its id), so the agent, the run log and the baseline cache need nothing new; the
//! gate's fixed order spreads them over the run.

use std::collections::BTreeMap;

use evolution_types::GeneratedQuestion;
use serde::{Deserialize, Serialize};

/// The most answers per arm a gate question may get.
pub const MAX_ANSWERS_PER_QUESTION: u32 = 10;

/// Gate questions asked several times: the copies, and the question each copy repeats.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RepeatedQuestions {
    /// Every question `k` times: the original first, then its copies.
    pub questions: Vec<GeneratedQuestion>,
    /// The id of the question each copy repeats (copies only).
    pub origin: BTreeMap<String, String>,
}

impl RepeatedQuestions {
    /// The id of the question `id` asks: the original's for a copy, `id` itself otherwise.
    pub fn original<'a>(&'a self, id: &'a str) -> &'a str {
        self.origin.get(id).map_or(id, String::as_str)
    }
}

/// The id of the `answer`-th try (from 2) of the question `id`.
pub fn repeat_id(id: &str, answer: u32) -> String {
    format!("{id}#{answer}")
}

/// Each of `questions` asked `answers` times (1 or less: once, unchanged; above
/// [`MAX_ANSWERS_PER_QUESTION`]: that many). A copy whose id is already a question's is left
/// to the gate's duplicate check, which refuses it.
pub fn repeat_questions(questions: &[GeneratedQuestion], answers: u32) -> RepeatedQuestions {
    let answers = answers.clamp(1, MAX_ANSWERS_PER_QUESTION);
    let mut out = RepeatedQuestions {
        questions: Vec::with_capacity(questions.len().saturating_mul(answers as usize)),
        origin: BTreeMap::new(),
    };
    for q in questions {
        out.questions.push(q.clone());
        for answer in 2..=answers {
            let id = repeat_id(&q.question_id, answer);
            out.origin.insert(id.clone(), q.question_id.clone());
            out.questions.push(GeneratedQuestion {
                question_id: id,
                ..q.clone()
            });
        }
    }
    out
}

/// How many answers per gate question to ask when the run chooses: once for an agent that
/// answers alike, and for a stochastic one enough to give each test about `target_pairs`
/// pairs on the smallest gate pool a candidate draws, at most `max`. Measured before any
/// gate test, on training questions only, so the choice is fixed in advance of the gate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoAnswers {
    /// Training questions answered a second time by the same version.
    pub questions: usize,
    /// The share of them answered differently (right once, wrong once) at which the agent
    /// counts as stochastic.
    pub min_disagreement: f64,
    /// The pairs each test should reach.
    pub target_pairs: usize,
    /// The most answers per question chosen.
    pub max: u32,
}

impl Default for AutoAnswers {
    fn default() -> Self {
        AutoAnswers {
            questions: 20,
            min_disagreement: 0.05,
            target_pairs: 40,
            max: 5,
        }
    }
}

/// The agent's self-disagreement: training questions the same version answered twice, and
/// how many of them it got right once and wrong once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AgentNoise {
    /// Questions answered twice (failures left out).
    pub questions: usize,
    /// Of them, answered right once and wrong once.
    pub disagreed: usize,
}

impl AgentNoise {
    /// The share of questions answered differently, `None` when none was measured.
    pub fn share(&self) -> Option<f64> {
        #[expect(
            clippy::cast_precision_loss,
            reason = "counts of training questions, far below 2^53"
        )]
        (self.questions > 0).then(|| self.disagreed as f64 / self.questions as f64)
    }
}

impl AutoAnswers {
    /// The answers per question for an agent measured as `noise` whose smallest gate pool
    /// (the fewest gate questions a candidate can draw) is `smallest_pool`: 1 when the agent
    /// answered alike (or nothing was measured), else `⌈target_pairs / smallest_pool⌉`
    /// within `1..=max`.
    pub fn choose(&self, noise: AgentNoise, smallest_pool: usize) -> u32 {
        let stochastic = noise.share().is_some_and(|s| s >= self.min_disagreement);
        if !stochastic || smallest_pool == 0 {
            return 1;
        }
        let k = self.target_pairs.div_ceil(smallest_pool);
        u32::try_from(k)
            .unwrap_or(u32::MAX)
            .clamp(1, self.max.clamp(1, MAX_ANSWERS_PER_QUESTION))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: &str) -> GeneratedQuestion {
        GeneratedQuestion {
            question_id: id.to_owned(),
            task_type: "t".to_owned(),
            question: format!("text of {id}"),
            ..GeneratedQuestion::default()
        }
    }

    #[test]
    fn each_question_is_asked_k_times_and_each_copy_names_its_original() {
        let r = repeat_questions(&[q("a"), q("b")], 3);
        let ids: Vec<&str> = r.questions.iter().map(|q| q.question_id.as_str()).collect();
        assert_eq!(ids, ["a", "a#2", "a#3", "b", "b#2", "b#3"]);
        assert!(
            r.questions
                .iter()
                .all(|c| c.question.starts_with("text of "))
        );
        assert_eq!(r.original("b#3"), "b");
        assert_eq!(r.original("a"), "a");
        assert_eq!(r.origin.len(), 4);
    }

    #[test]
    fn an_agent_that_answers_alike_is_asked_once_and_a_stochastic_one_enough_times() {
        let auto = AutoAnswers::default();
        let alike = AgentNoise {
            questions: 10,
            disagreed: 0,
        };
        let noisy = AgentNoise {
            questions: 10,
            disagreed: 2,
        };
        assert_eq!(auto.choose(alike, 8), 1);
        assert_eq!(auto.choose(AgentNoise::default(), 8), 1);
        assert_eq!(auto.choose(noisy, 8), 5);
        assert_eq!(auto.choose(noisy, 20), 2);
        assert_eq!(auto.choose(noisy, 40), 1);
        assert_eq!(auto.choose(noisy, 3), 5, "at most max");
        assert_eq!(auto.choose(noisy, 0), 1);
        let one_in_twenty_one = AgentNoise {
            questions: 21,
            disagreed: 1,
        };
        assert_eq!(auto.choose(one_in_twenty_one, 8), 1);
    }

    #[test]
    fn one_answer_or_none_leaves_the_set_as_it_is_and_the_count_is_capped() {
        let set = [q("a")];
        assert_eq!(repeat_questions(&set, 1).questions, set);
        assert_eq!(repeat_questions(&set, 0).questions, set);
        assert_eq!(
            repeat_questions(&set, 1000).questions.len(),
            MAX_ANSWERS_PER_QUESTION as usize
        );
    }
}
