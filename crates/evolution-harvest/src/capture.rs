//! One rollout's result as a trajectory object: what an agent was asked, what it answered,
//! whether that was right, its steps, the skill it ran with, when, and free metadata. The
//! object is in the format `skill-evolve evolve --trajectories` reads, so a folder of captured
//! rollouts is evolution input as it stands.

use serde_json::{Map, Value, json};

use crate::redact::Redactor;
use crate::signals::{Reason, Verdict};

/// One rollout's result.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rollout {
    /// The trajectory's id.
    pub id: String,
    /// What the agent was asked.
    pub question: String,
    /// What it answered.
    pub prediction: String,
    /// Whether the answer was right.
    pub correct: bool,
    /// The expected answer, when known.
    pub reference: String,
    /// Why it was wrong, when known.
    pub fail_reason: String,
    /// What the agent was asked to do, in general.
    pub task: String,
    /// The skill the agent ran with, when known.
    pub skill: Option<String>,
    /// The task type of the question, when known (the trajectory's `task_type`).
    pub task_type: Option<String>,
    /// The agent's steps (trace step objects: `tool_name`, `tool_input`, `tool_output`…).
    pub steps: Vec<Value>,
    /// When the rollout ran (ISO 8601, UTC).
    pub timestamp: String,
    /// Anything else the caller wants kept.
    pub metadata: Map<String, Value>,
}

/// Why a rollout counts as it does: the caller's score, and its reason when it gave one.
pub fn rollout_verdict(rollout: &Rollout) -> Verdict {
    let value = if rollout.correct {
        "true".to_owned()
    } else if rollout.fail_reason.trim().is_empty() {
        "false".to_owned()
    } else {
        format!("false ({})", rollout.fail_reason.trim())
    };
    Verdict {
        passed: rollout.correct,
        reasons: vec![Reason::ExplicitOutcome {
            passed: rollout.correct,
            field: "correct".to_owned(),
            value,
        }],
    }
}

/// The rollout as a trajectory object, every string redacted when `redactor` is given.
pub fn rollout_trajectory(
    rollout: &Rollout,
    redactor: Option<&mut Redactor>,
) -> Map<String, Value> {
    let verdict = rollout_verdict(rollout);
    let task = if rollout.task.trim().is_empty() {
        match &rollout.skill {
            Some(skill) => format!("a rollout of the agent with skill {skill}"),
            None => "a rollout of the agent".to_owned(),
        }
    } else {
        rollout.task.clone()
    };
    let fail_reason = match (rollout.correct, rollout.fail_reason.trim().is_empty()) {
        (true, _) => String::new(),
        (false, false) => rollout.fail_reason.clone(),
        (false, true) => "the rollout was scored incorrect".to_owned(),
    };
    let steps: Vec<Value> = rollout
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let mut step = step.clone();
            if let Value::Object(map) = &mut step {
                map.entry("step")
                    .or_insert_with(|| json!(i.saturating_add(1)));
            }
            step
        })
        .collect();
    let mut value = json!({
        "id": rollout.id,
        "task_description": task,
        "question": rollout.question,
        "fail_reason": fail_reason,
        "predicted_answer": rollout.prediction,
        "reference_text": rollout.reference,
        "hard": if rollout.correct { 1.0 } else { 0.0 },
        "steps": steps,
        "skill_id": rollout.skill,
        "timestamp": rollout.timestamp,
        "metadata": rollout.metadata,
        "harvest": {
            "source": "capture",
            "verdict": if verdict.passed { "passed" } else { "failed" },
            "reasons": verdict.reasons,
        },
    });
    if let (Some(task_type), Value::Object(map)) = (&rollout.task_type, &mut value) {
        map.insert("task_type".to_owned(), Value::String(task_type.clone()));
    }
    if let Some(redactor) = redactor {
        redactor.redact_json(&mut value);
    }
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
///
/// ```
/// assert_eq!(evolution_harvest::capture::iso_utc(0), "1970-01-01T00:00:00Z");
/// assert_eq!(evolution_harvest::capture::iso_utc(951_782_400), "2000-02-29T00:00:00Z");
/// ```
pub fn iso_utc(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The calendar date of a day count since 1970-01-01, by eras of 400 years (146 097 days).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01, so that a year's leap day is its last day.
    let z = days.saturating_add(719_468);
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_known_days() {
        assert_eq!(iso_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(iso_utc(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(iso_utc(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(iso_utc(1_709_164_800), "2024-02-29T00:00:00Z");
        assert_eq!(iso_utc(1_735_689_599), "2024-12-31T23:59:59Z");
    }

    #[test]
    fn a_wrong_rollout_says_why_and_is_redacted() {
        let rollout = Rollout {
            id: "r1".into(),
            question: "q".into(),
            prediction: "use key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx".into(),
            correct: false,
            skill: Some("triage".into()),
            steps: vec![json!({"tool_name": "search"})],
            timestamp: iso_utc(0),
            ..Rollout::default()
        };
        let mut redactor = Redactor::default();
        let t = rollout_trajectory(&rollout, Some(&mut redactor));
        assert_eq!(t["fail_reason"], "the rollout was scored incorrect");
        assert_eq!(t["hard"], 0.0);
        assert_eq!(t["steps"][0]["step"], 1);
        assert_eq!(
            t["task_description"],
            "a rollout of the agent with skill triage"
        );
        assert_eq!(t["predicted_answer"], "use key [REDACTED:anthropic_key]");
        assert_eq!(t["harvest"]["reasons"][0]["value"], "false");
        assert_eq!(redactor.total(), 1);
        assert!(!t.contains_key("task_type"));
        let typed = Rollout {
            task_type: Some("triage".into()),
            ..rollout
        };
        assert_eq!(rollout_trajectory(&typed, None)["task_type"], "triage");
    }
}
