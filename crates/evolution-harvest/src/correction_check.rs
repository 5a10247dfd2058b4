//! A check proposed from a user's correction: what the user said an answer must (or must not)
//! hold becomes a `contains` (or `not_contains`) check, and anything else a rubric quoting
//! them. A person reviews it before `run` replays the task.
//!
//! The rule: the first code span (between backticks) or double-quoted text of the correction
//! that the words just before it ask for ("use `make migration`", "should be `archived_at`")
//! becomes `contains`; failing that, the first one they refuse (the word just before it is
//! `not`, `no`, `never`, `without`, `avoid`, `remove`, `drop` or `except`, or the one before
//! that negates a verb, as in "don't use `--force`", or it follows "instead of") becomes
//! `not_contains`. A span is kept when it is one
//! line of 1 to [`MAX_SPAN_CHARS`] characters (a trailing `…` or `...` taken off). A
//! correction with no such span ("that did not fix it, payments still fail") gives a rubric that
//! quotes the user's words whole.

use evolution_types::template::truncate_chars;
use serde::{Deserialize, Serialize};

/// How a replayed answer is checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SuggestedCheck {
    /// The answer contains `value` (case-insensitively).
    Contains {
        /// The text to find.
        value: String,
    },
    /// The answer does not contain `value` (case-insensitively).
    NotContains {
        /// The text that must not be there.
        value: String,
    },
    /// A rubric for a person or an LLM judge.
    Rubric {
        /// What a good answer does.
        text: String,
    },
}

/// Longest span of a correction made a `contains` or `not_contains` check.
pub const MAX_SPAN_CHARS: usize = 80;

/// Most characters of the user's words quoted in a rubric.
pub const MAX_QUOTE_CHARS: usize = 1_000;

/// How many words before a span are read for a word that asks for it.
const CONTEXT_WORDS: usize = 3;

/// Words just before a span that refuse it ("not `npm`", "without `sudo`").
const REFUSING: [&str; 8] = [
    "not", "no", "never", "without", "avoid", "remove", "drop", "except",
];

/// Words before a verb that make it refuse the span after it ("don't use `x`").
const NEGATING: [&str; 5] = ["don't", "dont", "never", "not", "avoid"];

/// Words before a span that ask for it.
const ASKING: [&str; 16] = [
    "use", "run", "call", "be", "is", "it's", "with", "prefer", "want", "need", "means", "like",
    "meant", "to", "should", "try",
];

/// The check a correction proposes for a task whose request is `request`.
///
/// ```
/// use evolution_harvest::correction_check::check_from_correction;
/// use evolution_harvest::tasks::SuggestedCheck;
///
/// let contains = |v: &str| SuggestedCheck::Contains { value: v.into() };
/// assert_eq!(
///     check_from_correction("no, that's wrong, use `make migration …`", "add a migration"),
///     contains("make migration")
/// );
/// assert_eq!(
///     check_from_correction("Don't use `git push --force` here", "publish the branch"),
///     SuggestedCheck::NotContains { value: "git push --force".into() }
/// );
/// assert_eq!(
///     check_from_correction("Use `pnpm`, not `npm`.", "install"),
///     contains("pnpm")
/// );
/// let SuggestedCheck::Rubric { text } =
///     check_from_correction("That did not fix it, payments still fail.", "fix the webhook")
/// else {
///     panic!()
/// };
/// assert!(text.contains("\"That did not fix it, payments still fail.\""), "{text}");
/// ```
pub fn check_from_correction(said: &str, request: &str) -> SuggestedCheck {
    let mut refused: Option<String> = None;
    for (before, span) in spans(said) {
        let Some(value) = usable(&span) else {
            continue;
        };
        let words: Vec<String> = before
            .split_whitespace()
            .rev()
            .take(CONTEXT_WORDS)
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                    .replace('’', "'")
                    .to_lowercase()
            })
            .collect();
        let last = words.first().map_or("", String::as_str);
        let second = words.get(1).map_or("", String::as_str);
        let refuses = REFUSING.contains(&last)
            || NEGATING.contains(&second)
            || before.to_lowercase().trim_end().ends_with("instead of");
        if refuses {
            refused.get_or_insert(value);
        } else if words.iter().any(|w| ASKING.contains(&w.as_str())) {
            return SuggestedCheck::Contains { value };
        }
    }
    if let Some(value) = refused {
        return SuggestedCheck::NotContains { value };
    }
    SuggestedCheck::Rubric {
        text: format!(
            "The answer does what was asked: {}. A user corrected an earlier answer to this \
             request with these words, and the answer heeds them: \"{}\"",
            request.trim().trim_end_matches('.'),
            truncate_chars(said.trim(), MAX_QUOTE_CHARS)
        ),
    }
}

/// The spans of `text` between backticks or double quotes (straight or curly), each with the
/// text before it.
fn spans(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut before = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        let close = match c {
            '`' => '`',
            '"' => '"',
            '“' => '”',
            _ => {
                before.push(c);
                continue;
            }
        };
        let mut span = String::new();
        let mut closed = false;
        for inner in chars.by_ref() {
            if inner == close {
                closed = true;
                break;
            }
            span.push(inner);
        }
        if closed {
            out.push((before.clone(), span.clone()));
        }
        before.push(' ');
        before.push_str(&span);
        before.push(' ');
    }
    out
}

/// `span` as a check's value: trimmed, a trailing ellipsis taken off, one line of 1 to
/// [`MAX_SPAN_CHARS`] characters.
fn usable(span: &str) -> Option<String> {
    let value = span
        .trim()
        .trim_end_matches('…')
        .trim_end_matches("...")
        .trim();
    let n = value.chars().count();
    (n > 0 && n <= MAX_SPAN_CHARS && !value.contains(['\n', '\r'])).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(said: &str) -> SuggestedCheck {
        check_from_correction(said, "do the thing")
    }

    #[test]
    fn spans_the_user_asks_for_or_refuses_become_checks() {
        let contains = |v: &str| SuggestedCheck::Contains { value: v.into() };
        let not = |v: &str| SuggestedCheck::NotContains { value: v.into() };
        for (said, expect) in [
            (
                "Should be `archived_at`, not `archivedAt`.",
                contains("archived_at"),
            ),
            (
                "It needs to be \"20260101_add_archived_at\"",
                contains("20260101_add_archived_at"),
            ),
            ("no, run “make lint” first", contains("make lint")),
            (
                "never call `alembic upgrade` directly",
                not("alembic upgrade"),
            ),
            (
                "use the helper instead of `requests.get`",
                not("requests.get"),
            ),
            ("`npm` is wrong here, use `pnpm`", contains("pnpm")),
        ] {
            assert_eq!(check(said), expect, "{said}");
        }
    }

    #[test]
    fn anything_else_is_a_rubric_quoting_the_user_whole() {
        for said in [
            "Wrong file. The handler is in webhooks/stripe.py.",
            "the output of `ls` is empty",
            "use `an unterminated span",
            &format!("use `{}`", "x".repeat(MAX_SPAN_CHARS + 1)),
            "use `two\nlines`",
            "use ``",
        ] {
            let SuggestedCheck::Rubric { text } = check(said) else {
                panic!("{said}: {:?}", check(said));
            };
            assert!(text.starts_with("The answer does what was asked: do the thing."));
            assert!(text.contains(&format!("\"{}\"", said.trim())), "{text}");
        }
        let long = "x".repeat(MAX_QUOTE_CHARS * 2);
        let SuggestedCheck::Rubric { text } = check(&long) else {
            panic!()
        };
        assert!(text.contains("more chars]"), "the cut is marked");
    }
}
