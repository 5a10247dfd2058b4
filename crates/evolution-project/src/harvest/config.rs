//! The `[harvest]` table of `skill-evolve.toml`: which failure signals count and from how many
//! occurrences. Absent file or table: the defaults (every signal, from one occurrence, tool
//! errors only when the agent never got past them; an explicit outcome decides alone).
//!
//! ```toml
//! [harvest]
//! signals = ["tool_error", "interrupted", "rejected_tool_call", "explicit_outcome"]
//! min_tool_errors = 2        # a session with one failed tool call still passes
//! min_interruptions = 1
//! min_rejected_calls = 1
//! count_recovered_tool_errors = false  # true: a failed call counts even when a later call of
//!                                      # the same tool succeeded
//! ```

use std::path::{Path, PathBuf};

use evolution_harvest::signals::HarvestRules;
use serde::Deserialize;

use crate::error::{bad_at, line_of};
use crate::input::{InputKind, read_input_text};
use crate::llm::DEFAULT_CONFIG;

/// The configuration file as harvest sees it: its other tables belong to other commands.
#[derive(Debug, Default, Deserialize)]
struct HarvestFile {
    #[serde(default)]
    harvest: HarvestRules,
}

/// The rules from `explicit`, else `./skill-evolve.toml` when it exists, else the defaults.
/// A bad table is one line naming the file, the line and the problem.
pub(super) fn read_rules(explicit: Option<&Path>) -> anyhow::Result<HarvestRules> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let default = PathBuf::from(DEFAULT_CONFIG);
            if !default.is_file() {
                return Ok(HarvestRules::default());
            }
            default
        }
    };
    let text = read_input_text(&path, InputKind::Config)?;
    let file: HarvestFile = toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|span| line_of(&text, span.start));
        bad_at(&path, line, format!("[harvest]: {}", e.message()))
    })?;
    Ok(file.harvest)
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
        let rules = read_rules(Some(&path)).unwrap();
        assert_eq!(
            rules.signals.into_iter().collect::<Vec<_>>(),
            [SignalKind::Interrupted]
        );
        assert_eq!(rules.min_interruptions, 2);
        assert_eq!(rules.min_tool_errors, 1);
        std::fs::write(&path, "[harvest]\nsignals = [\"vibes\"]\n").unwrap();
        let err = read_rules(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("c.toml:2: [harvest]: unknown variant `vibes`"),
            "{err}"
        );
        std::fs::write(&path, "[harvest]\nmin_errors = 2\n").unwrap();
        let err = read_rules(Some(&path)).unwrap_err().to_string();
        assert!(
            err.contains("c.toml:2: [harvest]: unknown field `min_errors`"),
            "{err}"
        );
    }
}
