//! Handoff answers the run could not read: a reply that is not what its request asked for
//! (not the JSON object of an `evolve.*` request's reply format, or no JSON object where the
//! request asked for JSON). The run goes on past such a reply as past a model's, but the
//! answers are the user's: the report names each one, and when every answer the run used
//! is unreadable the run ends with an error naming them, not with a report that blames the
//! model for proposing nothing.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use evolution_llm_cassette::handoff::{ANSWERS_FILE, answered_requests};

use crate::error::bad_at;
use crate::run::dir::RunDir;
use crate::working_copy::write_atomically;

/// Most unreadable answers the error line lists (the report lists them all).
const LISTED: usize = 10;

/// Most characters of the reason given for one answer.
const MAX_WHY_CHARS: usize = 200;

/// One answer whose reply could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// Its line in `answers.jsonl`.
    pub(crate) line: usize,
    /// The request's tag, or `request` when it had none.
    pub(crate) purpose: String,
    /// The first characters of the request's key.
    pub(crate) key: String,
    /// Why it could not be read.
    pub(crate) why: String,
}

/// What the check of a handoff folder found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AnswerCheck {
    /// The answers file.
    pub(crate) file: PathBuf,
    /// Answers whose reply has a form to check.
    pub(crate) checked: usize,
    /// Those that could not be read.
    pub(crate) unreadable: Vec<Unreadable>,
}

impl AnswerCheck {
    /// Whether every answer checked is unreadable (and there was one).
    pub(crate) fn all_unreadable(&self) -> bool {
        self.checked > 0 && self.unreadable.len() == self.checked
    }

    /// The unreadable answers on one line: `line 3 (evolve.skill, key 1a2b3c4d…): why; …`,
    /// the first [`LISTED`] of them.
    fn listed(&self) -> String {
        let mut listed = self
            .unreadable
            .iter()
            .take(LISTED)
            .map(|u| format!("line {} ({}, key {}…): {}", u.line, u.purpose, u.key, u.why))
            .collect::<Vec<_>>()
            .join("; ");
        let more = self.unreadable.len().saturating_sub(LISTED);
        if more > 0 {
            listed.push_str(&format!("; and {more} more (the report lists them all)"));
        }
        listed
    }

    /// The report's section on them (empty when every answer could be read).
    fn section(&self) -> String {
        if self.unreadable.is_empty() {
            return String::new();
        }
        let mut md = format!(
            "## Unreadable handoff answers\n\n{} of the {} answer(s) in `{}` could not be read \
             as the reply their request asks for, so the run had nothing to use from them; \
             what it proposed (or did not) below follows from that, not from a model:\n\n",
            self.unreadable.len(),
            self.checked,
            self.file.display()
        );
        for u in &self.unreadable {
            md.push_str(&format!(
                "- line {} (`{}`, key `{}…`): {}\n",
                u.line, u.purpose, u.key, u.why
            ));
        }
        md.push_str(
            "\nWrite each reply as the JSON its prompt asks for, then run again with `--fresh` \
             (the run's journal keeps the replies it has read).\n\n",
        );
        md
    }
}

/// Checks the answers of the handoff folder `folder`.
///
/// # Errors
/// An answers file that cannot be read.
pub(crate) fn check_answers(folder: &Path) -> anyhow::Result<AnswerCheck> {
    let answered = answered_requests(folder).map_err(|e| anyhow::anyhow!("handoff: {e}"))?;
    let mut check = AnswerCheck {
        file: folder.join(ANSWERS_FILE),
        ..AnswerCheck::default()
    };
    for answer in &answered {
        let Some(verdict) = verdict(answer.tag.as_deref(), answer.wants_json, &answer.reply) else {
            continue;
        };
        check.checked = check.checked.saturating_add(1);
        if let Err(why) = verdict {
            check.unreadable.push(Unreadable {
                line: answer.line,
                purpose: answer.tag.as_deref().map_or_else(
                    || "request".to_owned(),
                    |tag| crate::render::terminal_safe(tag).into_owned(),
                ),
                key: answer.key.chars().take(8).collect(),
                why: crate::render::terminal_safe(&crate::error::one_line(&why))
                    .chars()
                    .take(MAX_WHY_CHARS)
                    .collect(),
            });
        }
    }
    Ok(check)
}

/// Whether `reply` reads as its request (tagged `tag`, asking for JSON or not) asked (`None`:
/// a free-text request, nothing to check).
fn verdict(tag: Option<&str>, wants_json: bool, reply: &str) -> Option<Result<(), String>> {
    if let Some(tag) = tag.filter(|t| evolution_evolve::reply_schema(t).is_some()) {
        return Some(
            evolution_evolve::replies::read_reply(tag, reply)
                .map(drop)
                .map_err(|e| e.why),
        );
    }
    wants_json.then(|| {
        evolution_evolve::parse_llm_json(reply)
            .map(drop)
            .ok_or_else(|| "the reply is not a JSON object".to_owned())
    })
}

/// After a finished run that used handoff answers: the report names the unreadable ones, and
/// when every one is unreadable the run ends with an error naming them.
///
/// # Errors
/// Every answer unreadable (bad input naming the answers file), or a report that cannot be
/// rewritten.
pub(crate) fn report_unreadable(dir: &RunDir, folder: &Path) -> anyhow::Result<()> {
    let check = check_answers(folder)?;
    if check.unreadable.is_empty() {
        return Ok(());
    }
    let path = dir.report_md();
    if let Ok(md) = std::fs::read_to_string(&path) {
        let section = check.section();
        let at = md.find("\n## ").map_or(md.len(), |i| i.saturating_add(1));
        let (head, tail) = md.split_at(at);
        write_atomically(&path, &format!("{head}{section}{tail}"))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if check.all_unreadable() {
        return Err(bad_at(
            &check.file,
            None,
            format!(
                "every answer the run used is unreadable, so nothing came of them (report: \
                 {}): {}; write each reply as the JSON its prompt asks for, then run again \
                 with --fresh",
                path.display(),
                check.listed()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_as_their_request_asked() {
        let edits = r#"{"edits": [{"op": "append", "content": "x"}]}"#;
        assert_eq!(verdict(Some("evolve.skill"), true, edits), Some(Ok(())));
        let why = verdict(Some("evolve.skill"), true, "sure, here you go");
        assert!(matches!(why, Some(Err(w)) if w.contains("not a JSON object")));
        let wrong = verdict(Some("evolve.skill"), true, r#"{"edits": "none"}"#);
        assert!(matches!(wrong, Some(Err(w)) if w.contains("`edits`")));
        assert_eq!(
            verdict(Some("judge.span"), true, r#"{"a": 1}"#),
            Some(Ok(()))
        );
        assert!(matches!(verdict(None, true, "no"), Some(Err(_))));
        assert_eq!(verdict(Some("demo"), false, "free text"), None);
    }
}
