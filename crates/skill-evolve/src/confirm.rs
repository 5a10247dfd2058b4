//! Asking the user before anything is written: show the diff, then wait for
//! an explicit yes (in English or Chinese, e.g. 「确认改」).

use std::io::IsTerminal as _;

use dialoguer::Input;
use dialoguer::theme::SimpleTheme;

/// What the user answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Write it.
    Yes,
    /// Discard it.
    No,
}

/// The accepted answers: `y`/`yes` and the Chinese 「确认改」「确认」「同意」 say
/// yes; `n`/`no` and 「拒绝」 say no. Case and surrounding space are ignored.
pub(crate) fn parse_answer(text: &str) -> Option<Answer> {
    let t = text.trim().to_lowercase();
    match t.as_str() {
        "y" | "yes" | "确认改" | "确认" | "同意" => Some(Answer::Yes),
        "n" | "no" | "拒绝" => Some(Answer::No),
        _ => None,
    }
}

/// True when a person can answer on standard input.
pub(crate) fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Asks until the answer is one of the accepted ones.
pub(crate) fn ask_yes_no(question: &str) -> anyhow::Result<Answer> {
    let reply: String = Input::with_theme(&SimpleTheme)
        .with_prompt(format!("{question} [y/yes/确认改/确认/同意 | n/拒绝]"))
        .validate_with(|s: &String| -> Result<(), &str> {
            parse_answer(s)
                .map(|_| ())
                .ok_or("answer y, yes, 确认改, 确认 or 同意 to write; n or 拒绝 to discard")
        })
        .interact_text()?;
    parse_answer(&reply).ok_or_else(|| anyhow::anyhow!("unrecognised answer {reply:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_seeds_answers() {
        for yes in ["y", "Y", " yes ", "确认改", "确认", "同意"] {
            assert_eq!(parse_answer(yes), Some(Answer::Yes), "{yes}");
        }
        for no in ["n", "NO", "拒绝"] {
            assert_eq!(parse_answer(no), Some(Answer::No), "{no}");
        }
        for other in ["", "ok", "确认改吧", "yess"] {
            assert_eq!(parse_answer(other), None, "{other}");
        }
    }
}
