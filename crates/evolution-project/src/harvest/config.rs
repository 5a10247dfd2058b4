//! The `[harvest]` table of `skill-evolve.toml`: which failure signals count and from how many
//! occurrences, and whether the follow-up judge runs (with the file's `[llm]` provider).
//! Absent file or table: the defaults (every signal, from one occurrence, tool errors only when
//! the agent never got past them; an explicit outcome decides alone; no follow-up judge).
//!
//! ```toml
//! [harvest]
//! signals = ["tool_error", "interrupted", "rejected_tool_call", "explicit_outcome",
//!            "repeated_request", "correction_phrase"]
//! min_tool_errors = 2        # a session with one failed tool call still passes
//! min_interruptions = 1
//! min_rejected_calls = 1
//! count_recovered_tool_errors = false  # true: a failed call counts even when a later call of
//!                                      # the same tool succeeded
//! retry_similarity = 0.6     # from this token-set similarity a turn repeats a request
//! followup_judge = false     # true: the [llm] provider judges the user's follow-ups
//! ```

use std::path::{Path, PathBuf};

use evolution_harvest::signals::HarvestRules;
use serde::Deserialize;

use crate::error::{bad_at, line_of};
use crate::input::{InputKind, read_input_text};
use crate::llm::{DEFAULT_CONFIG, LlmSection};

/// The configuration file as harvest sees it: its other tables belong to other commands.
#[derive(Debug, Default, Deserialize)]
struct HarvestFile {
    #[serde(default)]
    harvest: HarvestRules,
    /// The provider of the follow-up judge.
    #[serde(default)]
    llm: LlmSection,
}

/// What harvest reads of its configuration file.
#[derive(Debug, Default)]
pub(super) struct HarvestConfig {
    /// The `[harvest]` table.
    pub(super) rules: HarvestRules,
    /// The `[llm]` table (the follow-up judge's provider).
    pub(super) llm: LlmSection,
    /// The file read, if any (paths in `[llm]` are relative to it).
    pub(super) path: Option<PathBuf>,
}

/// The configuration from `explicit`, else `./skill-evolve.toml` when it exists, else the
/// defaults. A bad table is one line naming the file, the line and the problem.
pub(super) fn read_config(explicit: Option<&Path>) -> anyhow::Result<HarvestConfig> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let default = PathBuf::from(DEFAULT_CONFIG);
            if !default.is_file() {
                return Ok(HarvestConfig::default());
            }
            default
        }
    };
    let text = read_input_text(&path, InputKind::Config)?;
    let file: HarvestFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| line_of(&text, span.start));
        let table = if text_is_llm_error(&text, e.span()) {
            "[llm]"
        } else {
            "[harvest]"
        };
        bad_at(&path, line, format!("{table}: {}", e.message()))
    })?;
    if let Some(problem) = file.harvest.problem() {
        let line = text.find("retry_similarity").map(|at| line_of(&text, at));
        return Err(bad_at(&path, line, format!("[harvest]: {problem}")));
    }
    Ok(HarvestConfig {
        rules: file.harvest,
        llm: file.llm,
        path: Some(path),
    })
}

/// Whether the error at `span` lies in the `[llm]` tables of `text` (the last table header
/// before it starts with `[llm`).
fn text_is_llm_error(text: &str, span: Option<std::ops::Range<usize>>) -> bool {
    let Some(before) = span.and_then(|s| text.get(..s.start)) else {
        return false;
    };
    before
        .lines()
        .rev()
        .map(str::trim_start)
        .find(|line| line.starts_with('['))
        .is_some_and(|header| header.starts_with("[llm"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evolution_harvest::signals::SignalKind;

    #[test]
    fn the_table_is_read_and_checked_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[llm]\nprovider = \"replay\"\n\n[harvest]\nsignals = [\"interrupted\"]\nmin_interruptions = 2\n",
        )
        .unwrap();
        let rules = read_config(Some(&path)).unwrap().rules;
        assert_eq!(
            rules.signals.into_iter().collect::<Vec<_>>(),
            [SignalKind::Interrupted]
        );
        assert_eq!(rules.min_interruptions, 2);
        assert_eq!(rules.min_tool_errors, 1);
        std::fs::write(&path, "[harvest]\nsignals = [\"vibes\"]\n").unwrap();
        let err = read_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("c.toml:2: [harvest]: unknown variant `vibes`"),
            "{err}"
        );
        std::fs::write(&path, "[harvest]\nmin_errors = 2\n").unwrap();
        let err = read_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("c.toml:2: [harvest]: unknown field `min_errors`"),
            "{err}"
        );
        std::fs::write(
            &path,
            "[harvest]\nfollowup_judge = true\n\nretry_similarity = 2\n",
        )
        .unwrap();
        let err = read_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("c.toml:4: [harvest]: retry_similarity must be between 0 and 1, not 2"),
            "{err}"
        );
        std::fs::write(&path, "[llm]\nprovder = \"openai\"\n").unwrap();
        let err = read_config(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("c.toml:2: [llm]: unknown field `provder`"),
            "{err}"
        );
        std::fs::write(
            &path,
            "[llm]\nprovider = \"openai\"\n[harvest]\nfollowup_judge = true\nretry_similarity = 0.5\n",
        )
        .unwrap();
        let config = read_config(Some(&path)).unwrap();
        assert!(config.rules.followup_judge);
        assert!((config.rules.retry_similarity - 0.5).abs() < 1e-9);
        assert_eq!(config.path.as_deref(), Some(path.as_path()));
    }
}
