//! A mined tasks file kept across harvests: harvesting again into a file a person has reviewed
//! keeps every line they left, never brings back a task they deleted, and appends the tasks
//! mined for the first time, unreviewed.
//!
//! A task is known by its `question_id` (derived from its normalized request, so the same
//! recurring request gets the same id each time it is mined). What the file held after the
//! last harvest and which tasks were deleted since are remembered in a small state beside the
//! file ([`TaskFileState`]): a task that was in the file after a harvest and is gone the next
//! time was deleted by the person, and stays out of every later harvest. A line a person wrote
//! or edited is never rewritten: the file's text is kept byte for byte and new lines are only
//! appended.
//!
//! Nothing here reads or writes a file: the caller passes the file's text and the state, and
//! writes what [`merge_tasks`] returns (the tasks file first, then the state, so that a write
//! cut short never counts a task as deleted).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tasks::MinedTask;

/// What is remembered beside a tasks file between harvests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFileState {
    /// The `question_id`s the file held after the last harvest.
    #[serde(default)]
    pub in_file: BTreeSet<String>,
    /// The `question_id`s a person deleted from the file: never written again.
    #[serde(default)]
    pub dropped: BTreeSet<String>,
}

/// A tasks file after a harvest, and what changed in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedTasks {
    /// The file's new text: the old text unchanged, then one line per added task.
    pub text: String,
    /// The state to keep beside it.
    pub state: TaskFileState,
    /// Tasks already in the file, kept as they were.
    pub kept: usize,
    /// Of those, the lines marked `"reviewed": true`.
    pub kept_reviewed: usize,
    /// Tasks mined for the first time, appended unreviewed.
    pub added: usize,
    /// Tasks mined again that a person had deleted, left out.
    pub dropped_before: usize,
}

impl MergedTasks {
    /// What changed, in words (`3 kept as they were (2 reviewed), 1 added unreviewed, 1 you
    /// deleted before left out`).
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "{} kept as {} (reviewed: {})",
            self.kept,
            if self.kept == 1 {
                "it was"
            } else {
                "they were"
            },
            self.kept_reviewed
        )];
        parts.push(format!("{} added unreviewed", self.added));
        parts.push(format!("{} deleted before left out", self.dropped_before));
        parts.join(", ")
    }
}

/// A line of an existing tasks file that is not a task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct TaskLineError {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub problem: String,
}

/// Merges `mined` into a tasks file whose text is `existing` (`None`: no file yet), given the
/// `state` remembered beside it (`None`: none, as for a file written by hand).
///
/// # Errors
/// [`TaskLineError`] for a line of `existing` that is not blank and not a JSON object with a
/// non-empty string `question_id` (nothing can be written without losing or doubling it).
///
/// ```
/// use evolution_harvest::task_file::merge_tasks;
/// use evolution_harvest::tasks::{MinedTask, SuggestedCheck};
///
/// let task = |id: &str| MinedTask {
///     question_id: id.into(),
///     task_type: "default".into(),
///     question: format!("do {id}"),
///     sessions: vec!["s1".into(), "s2".into()],
///     check: SuggestedCheck::Rubric { text: "does it".into() },
///     reviewed: false,
///     correction: None,
/// };
/// let first = merge_tasks(None, None, &[task("a"), task("b")]).unwrap();
/// assert_eq!(first.added, 2);
/// // The person reviews `a` and deletes `b`; a later harvest mines a, b and c.
/// let reviewed = "{\"question_id\": \"a\", \"question\": \"do a, sharpened\", \"reviewed\": true}\n";
/// let again = merge_tasks(Some(reviewed), Some(&first.state), &[task("a"), task("b"), task("c")])
///     .unwrap();
/// assert!(again.text.starts_with(reviewed));
/// assert!(again.text.contains("\"question_id\":\"c\""));
/// assert!(!again.text.contains("\"question_id\":\"b\""));
/// assert_eq!((again.kept, again.kept_reviewed, again.added, again.dropped_before), (1, 1, 1, 1));
/// ```
pub fn merge_tasks(
    existing: Option<&str>,
    state: Option<&TaskFileState>,
    mined: &[MinedTask],
) -> Result<MergedTasks, TaskLineError> {
    let lines: Vec<(String, String)> = mined
        .iter()
        .filter_map(|task| {
            let line = MinedTask {
                reviewed: false,
                ..task.clone()
            };
            // A mined task is plain data: it always serializes.
            serde_json::to_string(&line)
                .ok()
                .map(|json| (task.question_id.clone(), json))
        })
        .collect();
    merge_lines(existing, state, &lines)
}

/// [`merge_tasks`] of tasks already written as JSON lines: each `(question_id, line)` of
/// `new` is appended as it is unless the file holds that id or a person deleted it.
///
/// # Errors
/// As [`merge_tasks`].
pub fn merge_lines(
    existing: Option<&str>,
    state: Option<&TaskFileState>,
    new: &[(String, String)],
) -> Result<MergedTasks, TaskLineError> {
    let mut present: BTreeSet<String> = BTreeSet::new();
    let mut kept = 0usize;
    let mut kept_reviewed = 0usize;
    for (n, line) in existing.unwrap_or_default().lines().enumerate() {
        let line_no = n.saturating_add(1);
        if line.trim().is_empty() {
            continue;
        }
        let bad = |problem: String| TaskLineError {
            line: line_no,
            problem,
        };
        let value: Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not a JSON object: {e}")))?;
        let Value::Object(object) = value else {
            return Err(bad("not a JSON object".to_owned()));
        };
        let id = match object.get("question_id") {
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            _ => return Err(bad("has no question_id (a non-empty string)".to_owned())),
        };
        if !present.insert(id) {
            continue;
        }
        kept = kept.saturating_add(1);
        if object.get("reviewed") == Some(&Value::Bool(true)) {
            kept_reviewed = kept_reviewed.saturating_add(1);
        }
    }
    let before = state.cloned().unwrap_or_default();
    let mut dropped: BTreeSet<String> = before
        .dropped
        .iter()
        .chain(before.in_file.difference(&present))
        .filter(|id| !present.contains(*id))
        .cloned()
        .collect();
    let mut text = existing.unwrap_or_default().to_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let mut in_file = present.clone();
    let mut added = 0usize;
    let mut dropped_before = 0usize;
    for (id, json) in new {
        if present.contains(id) {
            continue;
        }
        if dropped.contains(id) {
            dropped_before = dropped_before.saturating_add(1);
            continue;
        }
        if !in_file.insert(id.clone()) {
            continue;
        }
        text.push_str(json);
        text.push('\n');
        added = added.saturating_add(1);
    }
    dropped.retain(|id| !in_file.contains(id));
    Ok(MergedTasks {
        text,
        state: TaskFileState { in_file, dropped },
        kept,
        kept_reviewed,
        added,
        dropped_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::SuggestedCheck;

    fn task(id: &str) -> MinedTask {
        MinedTask {
            question_id: id.to_owned(),
            task_type: "default".to_owned(),
            question: format!("do {id}"),
            sessions: vec!["s1".to_owned()],
            check: SuggestedCheck::Contains {
                value: "ok".to_owned(),
            },
            reviewed: false,
            correction: None,
        }
    }

    #[test]
    fn reviewed_lines_stay_byte_for_byte_and_deleted_tasks_stay_out() {
        let first = merge_tasks(None, None, &[task("a"), task("b"), task("c")]).unwrap();
        assert_eq!(first.added, 3);
        assert_eq!(first.text.lines().count(), 3);
        assert!(first.state.dropped.is_empty());
        // The person edits `a` (reviewed, a sharper check, a field of their own, odd spacing),
        // leaves `c` as it was and deletes `b`.
        let c_line = first.text.lines().nth(2).unwrap();
        let edited = format!(
            "{{ \"question_id\": \"a\",  \"question\": \"do a now\", \"check\": {{\"kind\": \
             \"contains\", \"value\": \"done\"}}, \"reviewed\": true, \"note\": \"mine\" }}\n\n{c_line}"
        );
        let second = merge_tasks(
            Some(&edited),
            Some(&first.state),
            &[task("a"), task("b"), task("c"), task("d")],
        )
        .unwrap();
        assert!(second.text.starts_with(&edited), "{}", second.text);
        assert_eq!(second.text.lines().count(), 4, "{}", second.text);
        let last: Value = serde_json::from_str(second.text.lines().last().unwrap()).unwrap();
        assert_eq!(last["question_id"], "d");
        assert_eq!(last["reviewed"], false);
        assert_eq!(
            (
                second.kept,
                second.kept_reviewed,
                second.added,
                second.dropped_before
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(
            second.describe(),
            "2 kept as they were (reviewed: 1), 1 added unreviewed, 1 deleted before left out"
        );
        assert_eq!(second.state.dropped, BTreeSet::from(["b".to_owned()]));
        // Still out a harvest later, when the state no longer lists it in the file.
        let third = merge_tasks(Some(&second.text), Some(&second.state), &[task("b")]).unwrap();
        assert_eq!(third.text, second.text);
        assert_eq!(third.dropped_before, 1);
        // Written back by hand, it is the person's again.
        let back = format!(
            "{}{}\n",
            third.text,
            serde_json::to_string(&task("b")).unwrap()
        );
        let fourth = merge_tasks(Some(&back), Some(&third.state), &[task("b")]).unwrap();
        assert_eq!(fourth.text, back);
        assert!(fourth.state.dropped.is_empty());
        assert_eq!(fourth.kept, 4);
    }

    #[test]
    fn a_file_without_state_keeps_every_line_and_adds_the_rest() {
        let hand = "{\"question_id\": \"mine\", \"question\": \"q\", \"answer\": \"a\"}";
        let merged = merge_tasks(Some(hand), None, &[task("mine"), task("new")]).unwrap();
        assert_eq!(merged.text.lines().next(), Some(hand));
        assert!(merged.text.ends_with('\n'));
        assert_eq!((merged.kept, merged.added), (1, 1));
        assert_eq!(
            merged.state.in_file,
            BTreeSet::from(["mine".to_owned(), "new".to_owned()])
        );
        // An unchanged harvest changes nothing.
        let again = merge_tasks(Some(&merged.text), Some(&merged.state), &[task("new")]).unwrap();
        assert_eq!(again.text, merged.text);
        assert_eq!((again.kept, again.added, again.dropped_before), (2, 0, 0));
    }

    #[test]
    fn a_line_that_is_not_a_task_is_refused_with_its_number() {
        for (text, line, needle) in [
            ("{\"question_id\": \"a\"}\nnot json", 2, "not a JSON object"),
            ("[1, 2]", 1, "not a JSON object"),
            ("\n{\"question\": \"q\"}", 2, "question_id"),
            ("{\"question_id\": \"  \"}", 1, "question_id"),
            ("{\"question_id\": 7}", 1, "question_id"),
        ] {
            let err = merge_tasks(Some(text), None, &[task("a")]).unwrap_err();
            assert_eq!(err.line, line, "{text}");
            assert!(err.problem.contains(needle), "{err}");
        }
    }

    #[test]
    fn state_round_trips_and_refuses_unknown_fields() {
        let state = TaskFileState {
            in_file: BTreeSet::from(["a".to_owned()]),
            dropped: BTreeSet::from(["b".to_owned()]),
        };
        let text = serde_json::to_string(&state).unwrap();
        assert_eq!(serde_json::from_str::<TaskFileState>(&text).unwrap(), state);
        assert!(serde_json::from_str::<TaskFileState>("{\"other\": 1}").is_err());
        assert_eq!(
            serde_json::from_str::<TaskFileState>("{}").unwrap(),
            TaskFileState::default()
        );
    }
}
