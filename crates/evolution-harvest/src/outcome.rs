//! Explicit outcomes: a session counts as passed or failed by what a field *says*, never by a
//! word found somewhere in its text. `Outcome: failed`, `结果: 成功`, `status: ✅` and
//! `status: [ ]` are outcomes; "修复错误后测试通过" ("fixed the error, tests pass") in a note is
//! not a failure, because no outcome field says so.
//!
//! A value is read from its start only: a checkbox (`[x]` passed, `[ ]` failed), a check or
//! cross mark, or its first word (`failed`, `passed`, `成功`, `失败`, `not done`…). A value
//! that starts with anything else (`in progress`, `修复错误`) states no outcome.

use serde::{Deserialize, Serialize};

/// An outcome a session states explicitly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// True for a positive outcome.
    pub passed: bool,
    /// The field that stated it (`outcome`, `结果`, `status`…), lower-cased.
    pub field: String,
    /// The value as written (trimmed).
    pub value: String,
}

/// Fields that state a session's outcome in a SESSION-STATE.md (lower-case).
pub const STATE_OUTCOME_FIELDS: [&str; 8] = [
    "outcome", "result", "status", "verdict", "结果", "状态", "结论", "结局",
];

/// Fields that state an outcome on a line of its own inside a conversation (a user writing
/// `Outcome: failed`). Narrower than [`STATE_OUTCOME_FIELDS`]: a pasted build log's
/// `Status: FAILED` line is not the user's verdict.
pub const MESSAGE_OUTCOME_FIELDS: [&str; 2] = ["outcome", "结果"];

const PASS_WORDS: [&str; 17] = [
    "pass",
    "passed",
    "passes",
    "success",
    "succeeded",
    "successful",
    "ok",
    "okay",
    "done",
    "complete",
    "completed",
    "resolved",
    "fixed",
    "solved",
    "correct",
    "accepted",
    "good",
];

const FAIL_WORDS: [&str; 16] = [
    "fail",
    "failed",
    "fails",
    "failure",
    "error",
    "errored",
    "wrong",
    "incorrect",
    "unresolved",
    "unsolved",
    "abandoned",
    "aborted",
    "blocked",
    "broken",
    "rejected",
    "bad",
];

const PASS_PREFIXES_ZH: [&str; 7] = ["成功", "通过", "完成", "已完成", "已解决", "正确", "已修复"];
const FAIL_PREFIXES_ZH: [&str; 9] = [
    "失败",
    "未通过",
    "未完成",
    "未解决",
    "错误",
    "不正确",
    "放弃",
    "中止",
    "被拒",
];

/// What a value states: `Some(true)` passed, `Some(false)` failed, `None` nothing.
///
/// ```
/// use evolution_harvest::outcome::classify;
///
/// assert_eq!(classify("failed: wrong chip model"), Some(false));
/// assert_eq!(classify("✅ shipped"), Some(true));
/// assert_eq!(classify("修复错误后测试通过"), None);
/// assert_eq!(classify("not done yet"), Some(false));
/// ```
pub fn classify(value: &str) -> Option<bool> {
    let value = value
        .trim()
        .trim_start_matches(['*', '_', '`', '"', '\'', ' '])
        .trim_start();
    if let Some(rest) = value.strip_prefix('[') {
        let mark = rest.get(..2)?;
        return match mark {
            "x]" | "X]" => Some(true),
            " ]" => Some(false),
            _ => None,
        };
    }
    let first = value.chars().next()?;
    if matches!(first, '✅' | '✔' | '☑' | '✓' | '🟢') {
        return Some(true);
    }
    if matches!(first, '❌' | '✗' | '✘' | '❎' | '🔴' | '⛔') {
        return Some(false);
    }
    if let Some(p) = PASS_PREFIXES_ZH.iter().find(|p| value.starts_with(*p)) {
        // `完成度 30%` is not `完成`: the word must end there.
        let after = value.get(p.len()..).unwrap_or_default();
        return word_ends(after).then_some(true);
    }
    if let Some(p) = FAIL_PREFIXES_ZH.iter().find(|p| value.starts_with(*p)) {
        let after = value.get(p.len()..).unwrap_or_default();
        return word_ends(after).then_some(false);
    }
    let mut words = value
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ',' | ';' | ':' | '.' | '!' | '(' | ')' | '—' | '–' | '*' | '`'
                )
        })
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase);
    let word = words.next()?;
    let is = |list: &[&str], w: &str| list.contains(&w);
    if word == "not" || (word == "no" && words.clone().next().is_some()) {
        let next = words.next()?;
        return is(&PASS_WORDS, &next).then_some(false);
    }
    if is(&PASS_WORDS, &word) || word == "yes" || word == "true" {
        Some(true)
    } else if is(&FAIL_WORDS, &word) || word == "no" || word == "false" {
        Some(false)
    } else {
        None
    }
}

/// True when a Chinese outcome word is not the start of a longer word: the value ends, or a
/// separator or a space follows.
fn word_ends(after: &str) -> bool {
    after.chars().next().is_none_or(|c| {
        c.is_whitespace()
            || c.is_ascii_punctuation()
            || matches!(
                c,
                '，' | '。' | '；' | '：' | '！' | '、' | '（' | '(' | '—'
            )
            || c == '了'
    })
}

/// Reads `key: value` (`：` too, a leading `- `/`* ` bullet and `**bold**` allowed) and
/// returns the outcome when `key` is one of `fields` and the value states one.
pub fn outcome_line(line: &str, fields: &[&str]) -> Option<Outcome> {
    let line = line.trim();
    let line = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .unwrap_or(line)
        .trim();
    let (key, value) = split_key(line)?;
    let key = key
        .trim_matches(|c: char| c == '*' || c == '_' || c == '`' || c.is_whitespace())
        .to_lowercase();
    if !fields.contains(&key.as_str()) {
        return None;
    }
    let value = value.trim().trim_start_matches(['*', '_']).trim();
    classify(value).map(|passed| Outcome {
        passed,
        field: key,
        value: value.to_owned(),
    })
}

/// Splits at the first `:` or `：`.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let at = line.find([':', '：'])?;
    let key = line.get(..at)?;
    let sep = line.get(at..)?.chars().next()?;
    let value = line.get(at.saturating_add(sep.len_utf8())..)?;
    Some((key, value))
}

/// The last explicit outcome line of a message (the latest verdict wins).
pub fn outcome_in_message(text: &str) -> Option<Outcome> {
    text.lines()
        .rev()
        .find_map(|line| outcome_line(line, &MESSAGE_OUTCOME_FIELDS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_from_their_start() {
        for (value, expected) in [
            ("passed", Some(true)),
            ("Success — all green", Some(true)),
            ("**FAILED**: timeout", Some(false)),
            ("[x]", Some(true)),
            ("[ ] not yet", Some(false)),
            ("❌ tool call", Some(false)),
            ("成功", Some(true)),
            ("失败，芯片型号错了", Some(false)),
            ("完成度 30%", None),
            ("修复错误", None),
            ("in progress", None),
            ("the build failed", None),
            ("no", Some(false)),
            ("not resolved", Some(false)),
            ("", None),
        ] {
            assert_eq!(classify(value), expected, "{value:?}");
        }
    }

    #[test]
    fn outcome_lines_need_a_known_field() {
        let o = outcome_line("- **Outcome**: failed (wrong file)", &STATE_OUTCOME_FIELDS);
        assert_eq!(
            o,
            Some(Outcome {
                passed: false,
                field: "outcome".to_owned(),
                value: "failed (wrong file)".to_owned()
            })
        );
        assert_eq!(
            outcome_line("结果：成功", &MESSAGE_OUTCOME_FIELDS).map(|o| o.passed),
            Some(true)
        );
        assert!(outcome_line("Note: failed once, then fixed", &STATE_OUTCOME_FIELDS).is_none());
        assert!(outcome_line("Status: FAILED", &MESSAGE_OUTCOME_FIELDS).is_none());
        let text = "Outcome: failed\nretried\nOutcome: passed";
        assert_eq!(outcome_in_message(text).map(|o| o.passed), Some(true));
    }
}
