//! Recurring tasks mined from harvested sessions: a question set a person reviews before
//! `skill-evolve run` replays it.
//!
//! The grouping rule: two sessions ask the same task when their first user requests are equal
//! after [`normalize_request`] (lower case, runs of whitespace made one space, runs of digits
//! made `#`), so "Summarise report 12" and "summarise  report 13" are one task, and after
//! generated ids are made `#` too ([`IdTokens`]: "Work on bead spotter-dov" and "work on bead
//! spotter-fum" are one task when the requests show that `spotter-…` names ids). A group
//! recurs when it holds at least [`TaskMiner::min_sessions`] sessions; [`MiningReport`] says
//! why the other sessions gave no task. Each task keeps the
//! request of its most recent session as the question, the skill its sessions loaded most
//! often as its task type (made a valid skill name, [`task_type_of_skill`]; `default` when none
//! did), the ids of its sessions, and a suggested
//! check. When a user corrected a session of the group ([`TaskMiner::add_judged`]), the task
//! keeps their words and the answer they corrected (`correction`), and the check comes from
//! their words when they name what an answer must or must not hold
//! ([`crate::correction_check`]). Otherwise, when a session of the group passed and its
//! accepted answer (the answer to the user's last message that is not an acknowledgement, never
//! the reply to a closing "thanks") is one short line, a `contains` check on that answer;
//! otherwise a `rubric` for a person (or a judge) to make precise — quoting the user's correction
//! when there is one. Every task is written `"reviewed": false`.
//!
//! The texts come from [`Session`]s, whose readers already redacted them through their
//! [`TextPolicy`](crate::session::TextPolicy); nothing here reads a text the policy did not see.

use std::collections::{BTreeMap, BTreeSet};

use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};

pub use crate::correction_check::SuggestedCheck;
use crate::correction_check::check_from_correction;
use crate::corrections::is_acknowledgement;
use crate::session::{Role, Session};
use crate::signals::{CorrectedAnswer, Verdict};
use crate::trajectory::safe_id;

/// Longest final answer (in characters) suggested as a `contains` check.
pub const MAX_CONTAINS_CHARS: usize = 120;

/// Most characters of a task's normalized request used in its id.
const ID_CHARS: usize = 48;

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
    /// When a session of the task was corrected by its user: their words and the answer they
    /// corrected (the most recent such session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<TaskCorrection>,
}

/// A user's correction of an answer to a mined task, kept with the task for its reviewer and
/// for the run (its words reach the reference answer diagnosis and the proposer read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCorrection {
    /// The session the user corrected.
    pub session: String,
    /// The user's words (redacted; see [`CorrectedAnswer::said`]).
    pub said: String,
    /// The agent's answer they corrected, cut to [`MAX_CORRECTED_ANSWER_CHARS`] with a marker.
    pub answer: String,
}

/// Most characters of a corrected answer kept with a task.
pub const MAX_CORRECTED_ANSWER_CHARS: usize = 2_000;

/// What a session contributes to mining.
#[derive(Debug, Clone)]
struct Seen {
    id: String,
    request: String,
    when: Option<String>,
    skills: Vec<String>,
    passed: bool,
    answer: Option<String>,
    correction: Option<CorrectedAnswer>,
}

/// Why sessions gave a task or not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MiningReport {
    /// Sessions added.
    pub sessions: usize,
    /// Sessions in a written task.
    pub in_tasks: usize,
    /// Sessions with no user request to group by.
    pub no_request: usize,
    /// Sessions whose request fewer than [`TaskMiner::min_sessions`] sessions asked.
    pub not_recurring: usize,
    /// The different requests those sessions asked.
    pub rare_requests: usize,
    /// The [`TaskMiner::min_sessions`] the sessions were mined with.
    pub min_sessions: usize,
}

impl MiningReport {
    /// Why sessions gave no task: one line per reason, with its count (empty when every
    /// session is in a task).
    ///
    /// ```
    /// use evolution_harvest::tasks::MiningReport;
    /// let report = MiningReport {
    ///     sessions: 9, in_tasks: 0, no_request: 1, not_recurring: 8, rare_requests: 8,
    ///     min_sessions: 2,
    /// };
    /// assert_eq!(report.unmined(), [
    ///     "8 asked a request fewer than 2 sessions asked (8 different requests; \
    ///      --min-sessions 1 keeps requests asked once)",
    ///     "1 had no user request to group by",
    /// ]);
    /// ```
    pub fn unmined(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.not_recurring > 0 {
            lines.push(format!(
                "{} asked a request fewer than {} sessions asked ({} different request{}{})",
                self.not_recurring,
                self.min_sessions,
                self.rare_requests,
                if self.rare_requests == 1 { "" } else { "s" },
                if self.min_sessions > 1 {
                    "; --min-sessions 1 keeps requests asked once"
                } else {
                    ""
                }
            ));
        }
        if self.no_request > 0 {
            lines.push(format!(
                "{} had no user request to group by",
                self.no_request
            ));
        }
        lines
    }
}

/// Collects sessions one at a time and returns the recurring tasks.
#[derive(Debug, Clone)]
pub struct TaskMiner {
    /// Fewest sessions a request needs to count as recurring (at least 1).
    pub min_sessions: usize,
    seen: Vec<Seen>,
    report: MiningReport,
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
            seen: Vec::new(),
            report: MiningReport::default(),
        }
    }

    /// Adds one session and whether it passed. A session without a user request is counted
    /// ([`MiningReport::no_request`]) and otherwise ignored.
    pub fn add(&mut self, session: &Session, passed: bool) {
        self.push(session, passed, None);
    }

    /// Adds one session as `verdict` judged it: whether it passed, and, when its user corrected
    /// it, their words and the answer they corrected ([`Verdict::corrected_answer`]).
    pub fn add_judged(&mut self, session: &Session, verdict: &Verdict) {
        self.push(session, verdict.passed, verdict.corrected_answer(session));
    }

    fn push(&mut self, session: &Session, passed: bool, correction: Option<CorrectedAnswer>) {
        self.report.sessions = self.report.sessions.saturating_add(1);
        let request = session
            .first_prompt()
            .filter(|r| !normalize_request(r).is_empty());
        let Some(request) = request else {
            self.report.no_request = self.report.no_request.saturating_add(1);
            return;
        };
        self.seen.push(Seen {
            id: session.id.clone(),
            request: request.trim().to_owned(),
            when: session
                .last_timestamp
                .clone()
                .or_else(|| session.first_timestamp.clone()),
            skills: session.skills.iter().cloned().collect(),
            passed,
            answer: accepted_answer(session).map(str::to_owned),
            correction,
        });
    }

    /// The recurring tasks, in the order of their normalized requests.
    pub fn finish(self) -> Vec<MinedTask> {
        self.finish_with_report().0
    }

    /// The recurring tasks, in the order of their normalized requests, and why the other
    /// sessions gave none.
    pub fn finish_with_report(self) -> (Vec<MinedTask>, MiningReport) {
        let mut report = MiningReport {
            min_sessions: self.min_sessions,
            ..self.report
        };
        let id_tokens = IdTokens::of(self.seen.iter().map(|s| s.request.as_str()));
        let mut groups: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
        for seen in self.seen {
            let key = id_tokens.normalize(&seen.request);
            groups.entry(key).or_default().push(seen);
        }
        let mut ids = std::collections::HashSet::new();
        let mut tasks = Vec::new();
        for (key, mut seen) in groups {
            if seen.len() < self.min_sessions {
                report.not_recurring = report.not_recurring.saturating_add(seen.len());
                report.rare_requests = report.rare_requests.saturating_add(1);
                continue;
            }
            report.in_tasks = report.in_tasks.saturating_add(seen.len());
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
            let correction = seen.iter().rev().find_map(|s| {
                s.correction.as_ref().map(|c| TaskCorrection {
                    session: s.id.clone(),
                    said: c.said.clone(),
                    answer: truncate_chars(&c.answer, MAX_CORRECTED_ANSWER_CHARS),
                })
            });
            tasks.push(MinedTask {
                question_id,
                task_type: common_skill(&seen),
                question: latest.request.clone(),
                sessions: seen.iter().map(|s| s.id.clone()).collect(),
                check: suggest_check(&seen, &latest.request, correction.as_ref()),
                reviewed: false,
                correction,
            });
        }
        (tasks, report)
    }
}

/// The skill loaded by most sessions of a group as a task type: the skill's own name (the
/// part after the last `:` of a plugin's `plugin:name`) made a valid skill name
/// ([`evolution_types::skill_name_from`]), or `default` when nothing usable is left.
///
/// ```
/// use evolution_harvest::tasks::task_type_of_skill;
/// assert_eq!(task_type_of_skill("elixir:hex-docs-search"), "hex-docs-search");
/// assert_eq!(task_type_of_skill("my skill"), "my-skill");
/// assert_eq!(task_type_of_skill("::"), "default");
/// ```
pub fn task_type_of_skill(skill: &str) -> String {
    let own = skill.rsplit(':').find(|part| !part.trim().is_empty());
    own.and_then(evolution_types::skill_name_from)
        .unwrap_or_else(|| "default".to_owned())
}

/// Shortest and longest generated part of an id token (`dov` of `spotter-dov`).
const ID_PART_CHARS: std::ops::RangeInclusive<usize> = 3..=4;

/// The generated ids among a set of requests, so that requests differing only in them group
/// as one task.
///
/// A token (a word, surrounding punctuation aside) is an id when it is `prefix-part`, the
/// prefix a word and the part 3 or 4 letters or digits (a `.1`-style subtask number may
/// follow), and one of these holds: the part mixes letters and digits (`spotter-a0y`); at
/// least three different parts follow the same prefix among the requests (`spotter-dov`,
/// `spotter-fum`, `spotter-gqc`); or two do and the token is repeated in its own request (as
/// in "work on spotter-dov; run bd show spotter-dov"). A pair of ordinary compounds such as
/// `web-app` and `web-api` is none of these, so "deploy the web-app" and "deploy the web-api"
/// stay two tasks.
#[derive(Debug, Clone, Default)]
pub struct IdTokens {
    /// Prefix → the different parts seen after it.
    families: BTreeMap<String, BTreeSet<String>>,
}

impl IdTokens {
    /// The id families of `requests`.
    pub fn of<'a>(requests: impl IntoIterator<Item = &'a str>) -> Self {
        let mut families: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for request in requests {
            for word in request.split_whitespace() {
                if let Some((prefix, part)) = id_shape(&word.to_lowercase()) {
                    families.entry(prefix).or_default().insert(part);
                }
            }
        }
        IdTokens { families }
    }

    /// Whether `word` (lower case) is an id in `request` (lower case).
    fn is_id(&self, word: &str, request: &str) -> bool {
        let Some((prefix, part)) = id_shape(word) else {
            return false;
        };
        let mixed = part.chars().any(|c| c.is_ascii_digit())
            && part.chars().any(|c| c.is_ascii_alphabetic());
        let parts = self.families.get(&prefix).map_or(0, BTreeSet::len);
        let core = core_of(word);
        let repeated = request
            .split_whitespace()
            .filter(|w| core_of(w) == core)
            .count()
            >= 2;
        mixed || parts >= 3 || (parts >= 2 && repeated)
    }

    /// The grouping key of `request`: its ids made `prefix-#`, then [`normalize_request`].
    pub fn normalize(&self, request: &str) -> String {
        let lower = request.to_lowercase();
        let mut rewritten = String::with_capacity(lower.len());
        for (i, word) in lower.split_whitespace().enumerate() {
            if i > 0 {
                rewritten.push(' ');
            }
            match id_shape(word).filter(|_| self.is_id(word, &lower)) {
                Some((prefix, _)) => {
                    let core = core_of(word);
                    let start = word.find(core).unwrap_or(0);
                    let end = start.saturating_add(core.len());
                    rewritten.push_str(word.get(..start).unwrap_or(""));
                    rewritten.push_str(&prefix);
                    rewritten.push_str("-#");
                    rewritten.push_str(word.get(end..).unwrap_or(""));
                }
                None => rewritten.push_str(word),
            }
        }
        normalize_request(&rewritten)
    }
}

/// `word` without the punctuation around it.
fn core_of(word: &str) -> &str {
    word.trim_matches(|c: char| !c.is_alphanumeric())
}

/// `(prefix, part)` when `word` (lower case) has an id's shape: `prefix-part`, the prefix
/// starting with a letter and made of letters, digits, `-` and `_`, the part 3 or 4 letters
/// or digits, optionally followed by `.<digits>` groups.
fn id_shape(word: &str) -> Option<(String, String)> {
    let (prefix, rest) = core_of(word).rsplit_once('-')?;
    let mut pieces = rest.split('.');
    let part = pieces.next()?;
    let prefix_ok = prefix.starts_with(|c: char| c.is_ascii_alphabetic())
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let part_ok = ID_PART_CHARS.contains(&part.chars().count())
        && part.chars().all(|c| c.is_ascii_alphanumeric());
    let subtask_ok = pieces.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    (prefix_ok && part_ok && subtask_ok).then(|| (prefix.to_owned(), part.to_owned()))
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
    best.map_or_else(
        || "default".to_owned(),
        |(skill, _)| task_type_of_skill(skill),
    )
}

/// The check of a task: what its user's correction asks for when one names it
/// ([`check_from_correction`]: `contains` or `not_contains`); else `contains` the latest passed
/// session's accepted answer when it is one short line; else the correction's rubric quoting the
/// user; else a rubric describing the request.
fn suggest_check(
    seen: &[Seen],
    request: &str,
    correction: Option<&TaskCorrection>,
) -> SuggestedCheck {
    let from_correction = correction.map(|c| check_from_correction(&c.said, request));
    if let Some(check) = &from_correction
        && !matches!(check, SuggestedCheck::Rubric { .. })
    {
        return check.clone();
    }
    let answer = seen
        .iter()
        .rev()
        .filter(|s| s.passed)
        .find_map(|s| s.answer.as_deref())
        .map(str::trim);
    match (answer, from_correction) {
        (Some(a), _)
            if !a.is_empty() && !a.contains('\n') && a.chars().count() <= MAX_CONTAINS_CHARS =>
        {
            SuggestedCheck::Contains {
                value: a.to_owned(),
            }
        }
        (_, Some(rubric)) => rubric,
        _ => SuggestedCheck::Rubric {
            text: format!("The answer does what was asked: {request}"),
        },
    }
}

/// The answer the user accepted: the agent's last answer to the user's last message that is
/// not an acknowledgement, so that the reply to a closing "thanks, looks good" ("Glad it
/// helps.") is never taken for it.
fn accepted_answer(session: &Session) -> Option<&str> {
    let mut answer: Option<&str> = None;
    let mut open = false;
    for turn in session.turns.iter().filter(|t| t.subagent.is_none()) {
        match turn.role {
            Role::User if is_acknowledgement(&turn.text) => open = false,
            Role::User => {
                open = true;
                answer = None;
            }
            Role::Assistant if open && !turn.text.trim().is_empty() => answer = Some(&turn.text),
            Role::Assistant => {}
        }
    }
    answer
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
    use crate::session::{SourceKind, Turn};
    use crate::signals::{HarvestRules, judge};

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

    /// A session of `turns` (user first), asked at `when`.
    fn conversation(id: &str, when: &str, turns: &[&str]) -> Session {
        let mut s = Session::new(SourceKind::ClaudeCode, id);
        s.last_timestamp = Some(when.to_owned());
        for (i, text) in turns.iter().enumerate() {
            s.turns.push(Turn {
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                text: (*text).to_owned(),
                timestamp: None,
                subagent: None,
            });
        }
        s
    }

    fn mine(sessions: &[Session]) -> MinedTask {
        let mut miner = TaskMiner::new(1);
        for session in sessions {
            miner.add_judged(session, &judge(session, &HarvestRules::default()));
        }
        let mut tasks = miner.finish();
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        tasks.remove(0)
    }

    #[test]
    fn a_corrected_session_gives_the_users_words_and_a_check_from_them() {
        let corrected = conversation(
            "b",
            "2",
            &[
                "Add a migration for archived_at",
                "Ran alembic revision --autogenerate -m archived_at.",
                "no, that's wrong, use `make migration name=…`: it keeps our dated rev-id",
                "Sorry! Ran make migration name=add_archived_at.",
                "thanks, looks good",
                "Glad it helps.",
            ],
        );
        let passed = conversation(
            "a",
            "1",
            &[
                "add a migration for archived_at",
                "Done: 0042_archived_at.py",
            ],
        );
        let task = mine(&[passed, corrected]);
        assert_eq!(
            task.check,
            SuggestedCheck::Contains {
                value: "make migration name=".into()
            }
        );
        let correction = task.correction.unwrap();
        assert_eq!(correction.session, "b");
        assert_eq!(
            correction.said,
            "no, that's wrong, use `make migration name=…`: it keeps our dated rev-id"
        );
        assert_eq!(
            correction.answer,
            "Ran alembic revision --autogenerate -m archived_at."
        );
    }

    #[test]
    fn a_correction_without_a_span_gives_a_rubric_quoting_the_user() {
        let corrected = conversation(
            "a",
            "1",
            &[
                "fix the payment webhook",
                "Fixed the signature check.",
                "That did not fix it, payments still fail.",
                "Sorry.",
            ],
        );
        let task = mine(&[corrected]);
        let SuggestedCheck::Rubric { text } = &task.check else {
            panic!("{:?}", task.check)
        };
        assert!(
            text.contains("\"That did not fix it, payments still fail.\""),
            "{text}"
        );
        let line = serde_json::to_value(&task).unwrap();
        assert_eq!(line["correction"]["answer"], "Fixed the signature check.");
    }

    #[test]
    fn the_reply_to_an_acknowledgement_is_never_a_check() {
        let thanked = conversation(
            "a",
            "1",
            &[
                "Write release notes for v2.3",
                "Faster search, dark mode.",
                "thanks, looks good",
                "Glad it helps.",
            ],
        );
        let task = mine(&[thanked]);
        assert_eq!(
            task.check,
            SuggestedCheck::Contains {
                value: "Faster search, dark mode.".into()
            }
        );
        assert!(task.correction.is_none());
        let line = serde_json::to_value(&task).unwrap();
        assert!(line.get("correction").is_none(), "{line}");
        // A session that ends on an acknowledgement alone has no answer to check.
        let only_thanks = conversation(
            "b",
            "1",
            &[
                "Write release notes for v2.3",
                "",
                "thanks",
                "Glad it helps.",
            ],
        );
        let task = mine(&[only_thanks]);
        assert!(
            matches!(task.check, SuggestedCheck::Rubric { .. }),
            "{:?}",
            task.check
        );
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

    fn bead(id: &str) -> String {
        format!(
            "Work on bead spotter-{id}. Run bd show spotter-{id} to see the issue details and \
             bd ready to find available subtasks."
        )
    }

    #[test]
    fn requests_differing_only_in_generated_ids_are_one_task() {
        // Two sessions: the id repeats in its own request.
        let mut miner = TaskMiner::default();
        miner.add(&session("a", "1", &bead("dov"), "done", None), true);
        miner.add(&session("b", "2", &bead("fum"), "done", None), true);
        let (tasks, report) = miner.finish_with_report();
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        assert_eq!(tasks[0].sessions, ["a", "b"]);
        assert_eq!(tasks[0].question, bead("fum"));
        assert_eq!((report.in_tasks, report.not_recurring), (2, 0));

        // A family of three or more ids, or an id mixing letters and digits, needs no repeat.
        let mut miner = TaskMiner::default();
        for (n, id) in ["dov", "fum", "gqc"].iter().enumerate() {
            let when = n.to_string();
            miner.add(
                &session(id, &when, &format!("Implement spotter-{id}"), "", None),
                true,
            );
        }
        miner.add(
            &session("x", "4", "implement spotter-4te.1", "", None),
            true,
        );
        miner.add(&session("y", "5", "Close bead spotter-a0y", "", None), true);
        let (tasks, report) = miner.finish_with_report();
        assert_eq!(tasks.len(), 1, "{tasks:?}");
        assert_eq!(tasks[0].sessions.len(), 4);
        assert_eq!(tasks[0].question_id, "task-implement_spotter-_");
        assert_eq!(report.not_recurring, 1, "the close request is another task");
        assert_eq!(
            report.unmined(),
            [
                "1 asked a request fewer than 2 sessions asked (1 different request; \
              --min-sessions 1 keeps requests asked once)"
            ]
        );
    }

    #[test]
    fn ordinary_compound_words_are_not_ids() {
        let mut miner = TaskMiner::new(1);
        for (id, request) in [
            ("a", "Deploy the web-app"),
            ("b", "Deploy the web-api"),
            ("c", "Fix the sign-in page"),
            ("d", "Fix the sign-up page"),
        ] {
            miner.add(&session(id, "1", request, "", None), true);
        }
        let tasks = miner.finish();
        assert_eq!(tasks.len(), 4, "{tasks:?}");
        // Digits alone still group as before.
        let mut miner = TaskMiner::default();
        miner.add(&session("a", "1", "Deploy release-2024", "", None), true);
        miner.add(&session("b", "2", "deploy release-2025", "", None), true);
        assert_eq!(miner.finish().len(), 1);
    }

    #[test]
    fn task_types_are_valid_skill_names_and_unmined_sessions_are_counted() {
        let mut miner = TaskMiner::new(1);
        miner.add(
            &session(
                "a",
                "1",
                "search hex docs",
                "",
                Some("elixir:hex-docs-search"),
            ),
            true,
        );
        let mut empty = session("b", "1", "   ", "", None);
        empty.turns.retain(|t| t.role != Role::User);
        miner.add(&empty, true);
        let (tasks, report) = miner.finish_with_report();
        assert_eq!(tasks[0].task_type, "hex-docs-search");
        assert_eq!(
            evolution_types::skill_name_problem(&tasks[0].task_type),
            None
        );
        assert_eq!(
            report,
            MiningReport {
                sessions: 2,
                in_tasks: 1,
                no_request: 1,
                not_recurring: 0,
                rare_requests: 0,
                min_sessions: 1,
            }
        );
        assert_eq!(report.unmined(), ["1 had no user request to group by"]);
    }
}
