//! A harvested session as one trajectory object, in the format `skill-evolve evolve
//! --trajectories` reads: `id`, `task_description`, `question`, `fail_reason`,
//! `predicted_answer` (the agent's last answer; for a session the user corrected, the answer
//! before the first correction), `reference_text` (strings), `hard` (1 for a session that
//! passed, 0 for a failure), `feedback` (the user's later messages), `correction` (for a
//! corrected session, the user's words that corrected it, whole), `steps` (one per tool call)
//! and a `harvest` object with the source, the verdict's reasons, the skills and the counts.
//!
//! Every text in it already went through the reader's [`crate::session::TextPolicy`].

use evolution_types::template::truncate_chars;
use serde_json::{Map, Value, json};

use crate::session::{Role, Session};
use crate::signals::Verdict;

/// Most steps written per trajectory; the number left out is written as `steps_omitted`.
pub const MAX_STEPS: usize = 1_000;

/// Most characters of the user's later messages kept as `feedback`, all together.
pub const MAX_FEEDBACK_CHARS: usize = 32_000;

/// Most characters of a trajectory id (before the source prefix).
const MAX_ID_CHARS: usize = 96;

/// The id a session is written under: `<source>-<session id>` (see [`safe_id`]).
pub fn trajectory_id(session: &Session) -> String {
    safe_id(session.source.name(), &session.id)
}

/// `<prefix>-<raw>` with `raw` reduced to letters, digits, `-`, `_` and `.` (others become
/// `_`, leading dots are dropped) and at most 96 characters, so that it is safe as a file
/// name; `<prefix>-session` when nothing is left. An empty prefix adds no dash.
pub fn safe_id(prefix: &str, raw: &str) -> String {
    let clean: String = raw
        .chars()
        .take(MAX_ID_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = clean.trim_start_matches('.');
    let clean = if clean.is_empty() { "session" } else { clean };
    if prefix.is_empty() {
        clean.to_owned()
    } else {
        format!("{prefix}-{clean}")
    }
}

/// The trajectory object of `session` judged by `verdict`.
pub fn to_trajectory(session: &Session, verdict: &Verdict) -> Map<String, Value> {
    let id = trajectory_id(session);
    let project = session
        .projects
        .first()
        .map_or("an unknown folder", String::as_str);
    let mut task = format!(
        "{} session {} in {project}",
        session.source.display_name(),
        session.id.chars().take(MAX_ID_CHARS).collect::<String>()
    );
    if !session.skills.is_empty() {
        let skills: Vec<&str> = session.skills.iter().map(String::as_str).collect();
        task.push_str(&format!(" (skills: {})", skills.join(", ")));
    }
    let later_messages: Vec<&str> = session
        .turns
        .iter()
        .filter(|t| t.role == Role::User && t.subagent.is_none())
        .skip(1)
        .map(|t| t.text.as_str())
        .collect();
    let steps: Vec<Value> = session
        .tool_calls
        .iter()
        .take(MAX_STEPS)
        .enumerate()
        .map(|(i, call)| {
            let mut step = json!({
                "step": i.saturating_add(1),
                "tool_name": call.name,
                "tool_input": call.input,
                "tool_output": call.output.clone().unwrap_or_default(),
                "thought": call.thought,
                "is_error": call.is_error,
            });
            if let Some(obj) = step.as_object_mut() {
                if call.rejected {
                    obj.insert("rejected".to_owned(), Value::Bool(true));
                }
                if let Some(agent) = &call.subagent {
                    obj.insert("subagent".to_owned(), Value::String(agent.clone()));
                }
                if call.output.is_none() {
                    obj.insert("no_result".to_owned(), Value::Bool(true));
                }
            }
            step
        })
        .collect();
    let omitted = session.tool_calls.len().saturating_sub(MAX_STEPS);
    let mut out = Map::new();
    out.insert("id".to_owned(), Value::String(id));
    out.insert("task_description".to_owned(), Value::String(task));
    out.insert(
        "question".to_owned(),
        Value::String(session.first_prompt().unwrap_or_default().to_owned()),
    );
    out.insert(
        "fail_reason".to_owned(),
        Value::String(if verdict.passed {
            String::new()
        } else {
            verdict.describe()
        }),
    );
    // A session the user corrected is judged by the answer they corrected, not by the apology
    // after it.
    let corrected = verdict.corrected_answer(session);
    let predicted = match &corrected {
        Some(c) => c.answer.clone(),
        None => session.last_answer().unwrap_or_default().to_owned(),
    };
    out.insert("predicted_answer".to_owned(), Value::String(predicted));
    if let Some(c) = &corrected {
        out.insert("correction".to_owned(), Value::String(c.said.clone()));
    }
    out.insert("reference_text".to_owned(), Value::String(String::new()));
    out.insert(
        "hard".to_owned(),
        json!(if verdict.passed { 1.0 } else { 0.0 }),
    );
    out.insert(
        "feedback".to_owned(),
        Value::String(truncate_chars(
            &later_messages.join("\n---\n"),
            MAX_FEEDBACK_CHARS,
        )),
    );
    out.insert("steps".to_owned(), Value::Array(steps));
    if omitted > 0 {
        out.insert("steps_omitted".to_owned(), json!(omitted));
    }
    out.insert(
        "harvest".to_owned(),
        json!({
            "source": session.source.name(),
            "session_id": session.id,
            "projects": session.projects,
            "first_timestamp": session.first_timestamp,
            "last_timestamp": session.last_timestamp,
            "skills": session.skills,
            "verdict": if verdict.passed { "passed" } else { "failed" },
            "reasons": verdict.reasons,
            "turns": session.turns.len(),
            "tool_calls": session.tool_calls.len(),
            "tool_errors": session.tool_errors(),
            "rejected_tool_calls": session.rejected_calls(),
            "interruptions": session.interruptions,
            "skipped_records": session.skipped_records,
            "side_files": session.side_files,
        }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{SourceKind, Turn};
    use crate::signals::{HarvestRules, judge};

    #[test]
    fn ids_are_safe_file_names() {
        let mut s = Session::new(SourceKind::ClaudeCode, "../../etc/passwd");
        assert_eq!(trajectory_id(&s), "claude-code-_.._etc_passwd");
        s.id = "...".to_owned();
        assert_eq!(trajectory_id(&s), "claude-code-session");
        s.id = "x".repeat(500);
        assert!(trajectory_id(&s).len() <= 12 + MAX_ID_CHARS);
    }

    #[test]
    fn a_passed_session_has_hard_one_and_no_fail_reason() {
        let mut s = Session::new(SourceKind::Codex, "abc");
        for (role, text) in [
            (Role::User, "first"),
            (Role::Assistant, "answer"),
            (Role::User, "thanks"),
        ] {
            s.turns.push(Turn {
                role,
                text: text.to_owned(),
                timestamp: None,
                subagent: None,
            });
        }
        let t = to_trajectory(&s, &judge(&s, &HarvestRules::default()));
        assert_eq!(t["id"], "codex-abc");
        assert_eq!(t["hard"], 1.0);
        assert_eq!(t["fail_reason"], "");
        assert_eq!(t["question"], "first");
        assert_eq!(t["predicted_answer"], "answer");
        assert_eq!(t["feedback"], "thanks");
        assert_eq!(t["harvest"]["reasons"][0]["signal"], "no_failure_signal");
        assert!(t.get("correction").is_none());
    }

    #[test]
    fn a_corrected_session_keeps_the_answer_the_user_corrected_and_their_words() {
        let mut s = Session::new(SourceKind::ClaudeCode, "c");
        for (role, text) in [
            (Role::User, "fix the payment webhook"),
            (Role::Assistant, "Fixed the signature check."),
            (Role::User, "That did not fix it, payments still fail."),
            (Role::Assistant, "Sorry, you are right. I will look again."),
        ] {
            s.turns.push(Turn {
                role,
                text: text.to_owned(),
                timestamp: None,
                subagent: None,
            });
        }
        let t = to_trajectory(&s, &judge(&s, &HarvestRules::default()));
        assert_eq!(t["hard"], 0.0);
        assert_eq!(t["predicted_answer"], "Fixed the signature check.");
        assert_eq!(t["correction"], "That did not fix it, payments still fail.");
    }
}
