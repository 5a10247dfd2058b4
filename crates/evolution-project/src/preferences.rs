//! A project's house rules: the `preferences` file, found and read. The kernel parses its
//! text, carries it into every proposal prompt and holds proposals to its checks
//! (`evolution_evolve::preferences`, where the file's syntax is).
//!
//! Where the file is: `run` reads `--preferences FILE` (relative to the current folder),
//! else `[preferences] file` of its configuration (relative to it), else
//! [`PREFERENCES_FILE`] beside the configuration when there is one. `evolve` reads
//! `--preferences FILE`, else with `--agent-config` that configuration's, as `run` does;
//! else it has none.

use std::path::{Path, PathBuf};

use evolution_evolve::preferences::Preferences;

use crate::error::bad_at;
use crate::input::{InputKind, read_input_text};

/// The file name of a project's house rules beside its run configuration, read when the
/// configuration names none.
pub const PREFERENCES_FILE: &str = "preferences.md";

/// The house rules a command runs with, and the file they came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectPreferences {
    /// The file (`None`: the project has none).
    pub file: Option<PathBuf>,
    /// Its text and checks (empty without a file).
    pub preferences: Preferences,
}

impl ProjectPreferences {
    /// The house rules of the file at `path`.
    ///
    /// # Errors
    /// A bad input naming the file (and the line, for a bad `checks` block): a file that
    /// cannot be read, is not UTF-8, is too long, or whose checks do not parse.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = read_input_text(path, InputKind::Preferences)?;
        let preferences =
            Preferences::parse(&text).map_err(|e| bad_at(path, e.line(), e.to_string()))?;
        Ok(ProjectPreferences {
            file: Some(path.to_path_buf()),
            preferences,
        })
    }

    /// One line for the pre-flight and the summaries: `house rules: preferences.md (text
    /// in every proposal prompt; 3 check(s))`; `None` without a file.
    pub fn describe(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        let p = &self.preferences;
        let mut parts = Vec::new();
        if !p.text.is_empty() {
            parts.push("text in every proposal prompt".to_owned());
        }
        let checks = p.checks.len();
        if checks > 0 {
            parts.push(format!(
                "{checks} check(s) a proposal must pass before it is gated"
            ));
        }
        if parts.is_empty() {
            parts.push("empty".to_owned());
        }
        Some(format!(
            "house rules: {} ({})",
            file.display(),
            parts.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_checks_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("preferences.md");
        std::fs::write(&path, "Be brief.\n\n```checks\nmax_lines = \"x\"\n```\n").unwrap();
        let err = ProjectPreferences::read(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}:4: ```checks:", path.display())),
            "{err}"
        );
        std::fs::write(&path, "Be brief.\n```checks\nmax_lines = 9\n```\n").unwrap();
        let read = ProjectPreferences::read(&path).unwrap();
        assert_eq!(read.preferences.checks.max_lines, Some(9));
        let line = read.describe().unwrap();
        assert!(line.ends_with("(text in every proposal prompt; 1 check(s) a proposal must pass before it is gated)"), "{line}");
        assert_eq!(ProjectPreferences::default().describe(), None);
    }
}
