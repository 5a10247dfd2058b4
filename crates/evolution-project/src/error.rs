//! The bad-input contract: one line naming the file, the line and the
//! problem, exit code 2, nothing written. A problem that lists several items
//! (each skill a gate set is too small for) keeps its list on lines below the
//! headline at a terminal, and joins them into the one line everywhere else.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem with what the user gave us (a file, an option, a config value).
///
/// Raised before anything is written; `main` prints it as one line (and the
/// [`BadInput::lines_below`] under it) and exits with code 2. Everything else that fails is a runtime failure (exit 1).
#[derive(Debug)]
pub struct BadInput {
    file: Option<PathBuf>,
    line: Option<usize>,
    problem: String,
    /// Lines under the problem (one per item of a list), printed below it by a terminal and
    /// joined to it with `; ` as one line everywhere else.
    more: Vec<String>,
}

impl BadInput {
    /// A problem in `file`, at `line` when known.
    pub fn at(file: &Path, line: Option<usize>, problem: impl Into<String>) -> Self {
        BadInput {
            file: Some(file.to_path_buf()),
            line,
            problem: problem.into(),
            more: Vec::new(),
        }
    }

    /// A problem with an option or value that is not in a file.
    pub fn option(problem: impl Into<String>) -> Self {
        BadInput {
            file: None,
            line: None,
            problem: problem.into(),
            more: Vec::new(),
        }
    }

    /// The same problem with `lines` under it (a list, then what to do).
    #[must_use]
    pub fn with_lines(mut self, lines: Vec<String>) -> Self {
        self.more = lines;
        self
    }

    /// The lines under the problem's headline ([`BadInput::with_lines`]); the headline itself
    /// is the [`fmt::Display`] of a value without them.
    pub fn lines_below(&self) -> &[String] {
        &self.more
    }

    /// The headline alone: `file:line: problem`, one line.
    pub fn headline(&self) -> String {
        BadInput {
            file: self.file.clone(),
            line: self.line,
            problem: self.problem.clone(),
            more: Vec::new(),
        }
        .to_string()
    }
}

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}:", file.display())?;
            if let Some(line) = self.line {
                write!(f, "{line}:")?;
            }
            f.write_str(" ")?;
        }
        f.write_str(&one_line(&self.problem))?;
        for line in &self.more {
            write!(f, "; {}", one_line(line))?;
        }
        Ok(())
    }
}

impl std::error::Error for BadInput {}

/// Shorthand: a [`BadInput`] in `file` as an `anyhow::Error`.
pub fn bad_at(file: &Path, line: Option<usize>, problem: impl Into<String>) -> anyhow::Error {
    BadInput::at(file, line, problem).into()
}

/// Shorthand: a [`BadInput`] about an option as an `anyhow::Error`.
pub fn bad_option(problem: impl Into<String>) -> anyhow::Error {
    BadInput::option(problem).into()
}

/// Joins the lines of a message with `; ` so it prints as one line.
pub fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The 1-based line of byte offset `pos` in `text` (clamped to the text).
pub fn line_of(text: &str, pos: usize) -> usize {
    let end = pos.min(text.len());
    let prefix = text.as_bytes().get(..end).unwrap_or_default();
    prefix
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_file_line_problem_on_one_line() {
        let e = BadInput::at(Path::new("a/SKILL.md"), Some(7), "first\nsecond");
        assert_eq!(e.to_string(), "a/SKILL.md:7: first; second");
        let e = BadInput::at(Path::new("x.toml"), None, "missing");
        assert_eq!(e.to_string(), "x.toml: missing");
        assert_eq!(BadInput::option("no").to_string(), "no");
    }

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
