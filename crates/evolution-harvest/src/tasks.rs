//! Recurring tasks mined from harvested sessions: a question set a person reviews before
//! `skill-evolve run` replays it.
//!
//! The grouping rule: two sessions ask the same task when their first user requests are equal
//! after [`normalize_request`] (lower case, runs of whitespace made one space, runs of digits
//! made `#`), so "Summarise report 12" and "summarise  report 13" are one task. A group
//! recurs when it holds at least [`TaskMiner::min_sessions`] sessions. Each task keeps the
//! request of its most recent session as the question, the skill its sessions loaded most
//! often as its task type (`default` when none did), the ids of its sessions, and a suggested
//! check: when a session of the group passed and ended with a short one-line answer, a
//! `contains` check on that answer; otherwise a `rubric` for a person (or a judge) to make
//! precise. Every task is written `"reviewed": false`.
//!
//! The texts come from [`Session`]s, whose readers already redacted them through their
//! [`TextPolicy`](crate::session::TextPolicy); nothing here reads a text the policy did not see.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::session::Session;
use crate::trajectory::safe_id;

/// Longest final answer (in characters) suggested as a `contains` check.
pub const MAX_CONTAINS_CHARS: usize = 120;

/// Most characters of a task's normalized request used in its id.
const ID_CHARS: usize = 48;

/// How a replayed answer is checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SuggestedCheck {
    /// The answer contains `value` (case-insensitively).
    Contains {
        /// The text to find.
        value: String,
    },
    /// A rubric for a person or an LLM judge.
    Rubric {
        /// What a good answer does.
        text: String,
    },
}

/// One recurring task, as a line of `tasks.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinedTask {
    /// A file-safe id derived from the normalized request (`task-…`, unique in the set).
    pub question_id: String,
    /// The skill the sessions loaded most often, else `default`.
    pub task_type: String,
    /// The request, as the most recent session wrote it (redacted).
    pub question: String,
    /// The ids of the sessions that asked it, oldest first.
    pub sessions: Vec<String>,
    /// The suggested check.
    pub check: SuggestedCheck,
    /// Always `false` when mined: a person must read the task before `run` uses it.
    pub reviewed: bool,
}

/// What a session contributes to mining.
#[derive(Debug, Clone)]
struct Seen {
    id: String,
    request: String,
    when: Option<String>,
    skills: Vec<String>,
    passed: bool,
    answer: Option<String>,
}

/// Collects sessions one at a time and returns the recurring tasks.
#[derive(Debug, Clone)]
pub struct TaskMiner {
    /// Fewest sessions a request needs to count as recurring (at least 1).
    pub min_sessions: usize,
    groups: BTreeMap<String, Vec<Seen>>,
}

impl Default for TaskMiner {
    fn default() -> Self {
        TaskMiner::new(2)
    }
}

impl TaskMiner {
    /// A miner keeping requests seen in at least `min_sessions` sessions (0 is read as 1).
    pub fn new(min_sessions: usize) -> Self {
        TaskMiner {
            min_sessions: min_sessions.max(1),
            groups: BTreeMap::new(),
        }
    }

    /// Adds one session and whether it passed. A session without a user request is ignored.
    pub fn add(&mut self, session: &Session, passed: bool) {
        let Some(request) = session.first_prompt() else {
            return;
        };
        let key = normalize_request(request);
        if key.is_empty() {
            return;
        }
        self.groups.entry(key).or_default().push(Seen {
            id: session.id.clone(),
            request: request.trim().to_owned(),
            when: session
                .last_timestamp
                .clone()
                .or_else(|| session.first_timestamp.clone()),
            skills: session.skills.iter().cloned().collect(),
            passed,
            answer: session.last_answer().map(str::to_owned),
        });
    }

    /// The recurring tasks, in the order of their normalized requests.
    pub fn finish(self) -> Vec<MinedTask> {
        let mut ids = std::collections::HashSet::new();
        let mut tasks = Vec::new();
        for (key, mut seen) in self.groups {
            if seen.len() < self.min_sessions {
                continue;
            }
            // Oldest first; sessions without a time go first, in the order they came.
            seen.sort_by(|a, b| a.when.cmp(&b.when));
            let Some(latest) = seen.last() else {
                continue;
            };
            let base = safe_id("task", &key.chars().take(ID_CHARS).collect::<String>());
            let mut question_id = base.clone();
            let mut n = 1u32;
            while !ids.insert(question_id.clone()) {
                n = n.saturating_add(1);
                question_id = format!("{base}-{n}");
            }
            tasks.push(MinedTask {
                question_id,
                task_type: common_skill(&seen),
                question: latest.request.clone(),
                sessions: seen.iter().map(|s| s.id.clone()).collect(),
                check: suggest_check(&seen, &latest.request),
                reviewed: false,
            });
        }
        tasks
    }
}

/// The skill loaded by most sessions of a group (ties: the first by name), else `default`.
fn common_skill(seen: &[Seen]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for skill in seen.iter().flat_map(|s| &s.skills) {
        let n = counts.entry(skill.as_str()).or_default();
        *n = n.saturating_add(1);
    }
    let mut best: Option<(&str, usize)> = None;
    for (skill, n) in counts {
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((skill, n));
        }
    }
    best.map_or_else(|| "default".to_owned(), |(skill, _)| skill.to_owned())
}

/// `contains` the latest passed session's answer when it is one short line, else a rubric.
fn suggest_check(seen: &[Seen], request: &str) -> SuggestedCheck {
    let answer = seen
        .iter()
        .rev()
        .filter(|s| s.passed)
        .find_map(|s| s.answer.as_deref())
        .map(str::trim);
    match answer {
        Some(a)
            if !a.is_empty() && !a.contains('\n') && a.chars().count() <= MAX_CONTAINS_CHARS =>
        {
            SuggestedCheck::Contains {
                value: a.to_owned(),
            }
        }
        _ => SuggestedCheck::Rubric {
            text: format!("The answer does what was asked: {request}"),
        },
    }
}

/// The grouping key of a request: lower case, whitespace runs made one space, digit runs made
/// `#`, trimmed.
///
/// ```
/// use evolution_harvest::tasks::normalize_request;
/// assert_eq!(normalize_request("  Summarise\treport 12 "), "summarise report #");
/// assert_eq!(normalize_request("summarise REPORT 7"), "summarise report #");
/// ```
pub fn normalize_request(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last_space = true;
    let mut last_digit = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
            last_digit = false;
        } else if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
            last_space = false;
        } else {
            out.extend(c.to_lowercase());
            last_space = false;
            last_digit = false;
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Role, SourceKind, Turn};

    fn session(id: &str, when: &str, request: &str, answer: &str, skill: Option<&str>) -> Session {
        let mut s = Session::new(SourceKind::ClaudeCode, id);
        s.last_timestamp = Some(when.to_owned());
        let turn = |role, text: &str| Turn {
            role,
            text: text.to_owned(),
            timestamp: None,
            subagent: None,
        };
        s.turns.push(turn(Role::User, request));
        s.turns.push(turn(Role::Assistant, answer));
        if let Some(skill) = skill {
            s.skills.insert(skill.to_owned());
        }
        s
    }

    #[test]
    fn requests_differing_in_case_space_and_numbers_are_one_task() {
        let mut miner = TaskMiner::default();
        miner.add(
            &session(
                "b",
                "2026-01-02",
                "Count lines of log 12",
                "42 lines",
                Some("logs"),
            ),
            true,
        );
        miner.add(
            &session("a", "2026-01-01", "count  lines of LOG 7", "7 lines", None),
            false,
        );
        miner.add(
            &session("c", "2026-01-01", "something else", "ok", None),
            true,
        );
        let tasks = miner.finish();
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        let task = &tasks[0];
        assert_eq!(task.question_id, "task-count_lines_of_log__");
        assert_eq!(task.question, "Count lines of log 12");
        assert_eq!(task.sessions, ["a", "b"]);
        assert_eq!(task.task_type, "logs");
        assert_eq!(
            task.check,
            SuggestedCheck::Contains {
                value: "42 lines".into()
            }
        );
        assert!(!task.reviewed);
        let line = serde_json::to_value(task).unwrap();
        assert_eq!(line["check"]["kind"], "contains");
        assert_eq!(line["reviewed"], false);
    }

    #[test]
    fn without_a_short_passed_answer_the_check_is_a_rubric() {
        let mut miner = TaskMiner::new(2);
        let long = "x".repeat(MAX_CONTAINS_CHARS + 1);
        miner.add(&session("a", "1", "deploy", &long, None), true);
        miner.add(&session("b", "2", "Deploy", "done", None), false);
        let tasks = miner.finish();
        assert_eq!(tasks[0].task_type, "default");
        assert_eq!(
            tasks[0].check,
            SuggestedCheck::Rubric {
                text: "The answer does what was asked: Deploy".into()
            }
        );
    }

    #[test]
    fn a_single_session_recurs_only_when_asked_to() {
        let one = session("a", "1", "hello", "hi", None);
        let mut miner = TaskMiner::default();
        miner.add(&one, true);
        assert!(miner.finish().is_empty());
        let mut miner = TaskMiner::new(0);
        miner.add(&one, true);
        assert_eq!(miner.finish().len(), 1);
    }

    #[test]
    fn ids_stay_unique_when_their_cut_keys_collide() {
        let mut miner = TaskMiner::new(1);
        let stem = "a".repeat(ID_CHARS);
        miner.add(&session("1", "1", &format!("{stem} one"), "", None), true);
        miner.add(&session("2", "1", &format!("{stem} two"), "", None), true);
        let ids: Vec<String> = miner.finish().into_iter().map(|t| t.question_id).collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
    }
}
