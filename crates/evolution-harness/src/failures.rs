//! Rollouts that gave no usable answer, counted per phase, and the rule that stops a run
//! when most of a phase's rollouts are such failures.
//!
//! A failure is either the agent's (it never started, crashed, broke the protocol, timed out
//! or reported an error) or the judge's: the answer came, but the judge that scores it (a
//! rubric judge, an LLM) gave no verdict. A judge failure carries [`JUDGE_ERROR_KEY`] in its
//! prediction, so that no message blames the agent for it.
//!
//! Only rollouts of versions already accepted count toward a stop (the training and holdout
//! rollouts, the baseline arm of a gate or a probation): a candidate whose documents make the
//! agent fail loses its gate, which is evidence about the candidate, not a broken agent.

use evolution_types::Prediction;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::phase::Phase;
use crate::runner::is_infra_stop;

/// The prediction field that marks a failure of the judge scoring an answer, not of the
/// agent; its value is the judge's reason (a string).
pub const JUDGE_ERROR_KEY: &str = "judge_error";

/// Failures from which a finished phase whose rollouts failed more than half the time stops
/// the run (a phase of fewer rollouts stops when all of them failed).
pub const MIN_FAILURES_TO_STOP: u64 = 3;

/// Failures from which a phase still under way (a gate, a probation: block after block)
/// whose rollouts failed more than half the time stops the run; below it, the gate's own
/// INFRA guard judges the comparison.
pub const MIN_FAILURES_UNDER_WAY: u64 = 5;

/// Characters of an error message kept (the start of the first, the end of the last).
pub(crate) const KEPT_ERROR_CHARS: usize = 4000;

/// Whether `p` gave no usable answer (an INFRA failure of the agent or of its judge).
pub fn is_failure(p: &Prediction) -> bool {
    is_infra_stop(&p.stop_reason) || p.error.is_some()
}

/// The judge's reason when `p` failed because its judge gave no verdict.
pub fn judge_error(p: &Prediction) -> Option<&str> {
    match p.extra.get(JUDGE_ERROR_KEY) {
        Some(Value::String(reason)) if is_failure(p) => Some(reason),
        _ => None,
    }
}

/// The failures among some rollouts: how many, whose, and the first and last messages.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FailureCount {
    /// Rollouts counted.
    pub rollouts: u64,
    /// Rollouts the agent failed (never started, crashed, broke the protocol, timed out,
    /// reported an error).
    pub agent_failures: u64,
    /// Answers the judge gave no verdict on.
    pub judge_failures: u64,
    /// The first agent failure's message (its start, at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_agent_error: Option<String>,
    /// The last agent failure's message (its end, at most 4000 characters): the agent's
    /// last error output, when it wrote any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_agent_error: Option<String>,
    /// The first judge failure's reason (its start, at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_judge_error: Option<String>,
}

impl FailureCount {
    /// Counts one rollout.
    pub fn add(&mut self, p: &Prediction) {
        self.rollouts = self.rollouts.saturating_add(1);
        if !is_failure(p) {
            return;
        }
        if let Some(reason) = judge_error(p) {
            self.judge_failures = self.judge_failures.saturating_add(1);
            if self.first_judge_error.is_none() {
                self.first_judge_error = Some(head(reason));
            }
            return;
        }
        self.agent_failures = self.agent_failures.saturating_add(1);
        let message = p.error.as_deref().unwrap_or(p.stop_reason.as_str());
        if self.first_agent_error.is_none() {
            self.first_agent_error = Some(head(message));
        }
        self.last_agent_error = Some(tail(message));
    }

    /// Counts every rollout of `predictions`.
    pub fn of<'a>(predictions: impl IntoIterator<Item = &'a Prediction>) -> Self {
        let mut count = FailureCount::default();
        for p in predictions {
            count.add(p);
        }
        count
    }

    /// Failures of either kind.
    pub fn failures(&self) -> u64 {
        self.agent_failures.saturating_add(self.judge_failures)
    }

    /// Whether these rollouts, a whole phase, stop the run: more than half of them failed,
    /// and at least [`MIN_FAILURES_TO_STOP`] did (all of them, when there were fewer).
    pub fn stops_a_finished_phase(&self) -> bool {
        let failed = self.failures();
        failed > 0
            && failed.saturating_mul(2) > self.rollouts
            && failed >= MIN_FAILURES_TO_STOP.min(self.rollouts)
    }

    /// Whether these rollouts, a phase still under way, stop the run: more than half of them
    /// failed, and at least [`MIN_FAILURES_UNDER_WAY`] did.
    pub fn stops_a_phase_under_way(&self) -> bool {
        let failed = self.failures();
        failed >= MIN_FAILURES_UNDER_WAY && failed.saturating_mul(2) > self.rollouts
    }
}

/// Why a run stopped: most rollouts of one phase gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseFailures {
    /// The phase (`rollout` for training and holdout rollouts, `gate`, `probation`).
    pub phase: Phase,
    /// The run id whose rollouts were counted.
    pub run_id: String,
    /// What failed.
    pub count: FailureCount,
}

impl PhaseFailures {
    /// Whether the judge, not the agent, failed most of the time.
    pub fn judge_at_fault(&self) -> bool {
        self.count.judge_failures > self.count.agent_failures
    }
}

impl std::fmt::Display for PhaseFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.count;
        if self.judge_at_fault() {
            write!(
                f,
                "the rubric judge gave no verdict on {} of {} answers of {}",
                c.judge_failures, c.rollouts, self.run_id
            )
        } else {
            write!(
                f,
                "the agent failed on {} of {} questions of {}",
                c.agent_failures, c.rollouts, self.run_id
            )
        }
    }
}

/// The start of `text`, at most [`KEPT_ERROR_CHARS`] characters.
fn head(text: &str) -> String {
    evolution_types::template::truncate_chars(text, KEPT_ERROR_CHARS)
}

/// The end of `text`, at most [`KEPT_ERROR_CHARS`] characters.
fn tail(text: &str) -> String {
    let count = text.chars().count();
    match text
        .char_indices()
        .nth(count.saturating_sub(KEPT_ERROR_CHARS))
    {
        Some((cut, _)) if cut > 0 => text.get(cut..).unwrap_or(text).to_owned(),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use evolution_types::INFRA_STOP_REASON;

    use super::*;

    fn answered() -> Prediction {
        Prediction {
            stop_reason: "submit".into(),
            ..Prediction::default()
        }
    }

    fn failed(message: &str) -> Prediction {
        Prediction {
            stop_reason: INFRA_STOP_REASON.into(),
            error: Some(message.into()),
            ..Prediction::default()
        }
    }

    fn judge_failed(reason: &str) -> Prediction {
        let mut p = failed(&format!("the rubric judge gave no verdict: {reason}"));
        p.extra.insert(JUDGE_ERROR_KEY.into(), reason.into());
        p
    }

    #[test]
    fn agent_and_judge_failures_are_counted_apart() {
        let count = FailureCount::of(&[
            failed("first"),
            answered(),
            judge_failed("unreadable"),
            failed("last"),
            judge_failed("second"),
        ]);
        assert_eq!(count.rollouts, 5);
        assert_eq!(count.agent_failures, 2);
        assert_eq!(count.judge_failures, 2);
        assert_eq!(count.first_agent_error.as_deref(), Some("first"));
        assert_eq!(count.last_agent_error.as_deref(), Some("last"));
        assert_eq!(count.first_judge_error.as_deref(), Some("unreadable"));
    }

    #[test]
    fn a_phase_stops_the_run_when_most_of_it_failed() {
        let phase = |failures: usize, answers: usize| {
            let mut ps = vec![failed("x"); failures];
            ps.extend(vec![answered(); answers]);
            FailureCount::of(&ps)
        };
        assert!(phase(40, 0).stops_a_finished_phase());
        assert!(phase(1, 0).stops_a_finished_phase());
        assert!(phase(2, 0).stops_a_finished_phase());
        assert!(phase(6, 4).stops_a_finished_phase());
        assert!(!phase(2, 1).stops_a_finished_phase());
        assert!(!phase(1, 9).stops_a_finished_phase());
        assert!(!phase(5, 5).stops_a_finished_phase());
        assert!(!phase(0, 0).stops_a_finished_phase());
        assert!(!phase(4, 0).stops_a_phase_under_way());
        assert!(phase(5, 4).stops_a_phase_under_way());
        assert!(!phase(5, 5).stops_a_phase_under_way());
    }

    #[test]
    fn kept_messages_are_capped_at_the_right_end() {
        let long = format!("{}END", "a".repeat(KEPT_ERROR_CHARS * 2));
        let count = FailureCount::of(&[failed(&long)]);
        let last = count.last_agent_error.unwrap();
        assert_eq!(last.chars().count(), KEPT_ERROR_CHARS);
        assert!(last.ends_with("END"));
        let first = count.first_agent_error.unwrap();
        assert!(first.starts_with("aaa") && first.contains("more chars]"));
    }
}
