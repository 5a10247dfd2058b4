//! The checks against a candidate document: what a proposal breaks, in words a user reads.

use serde::{Deserialize, Serialize};

use super::Checks;
use super::markdown::{counts, normalize_heading, occurrences};

/// One check a proposal breaks: `breaks preference 'max_lines = 120': 134 lines`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breach {
    /// The check as the file states it: `max_lines = 120`, `forbidden "always"`.
    pub check: String,
    /// What the proposal does: `134 lines`, `adds 2 ("always": 1 before, 3 after)`.
    pub found: String,
    /// The document the proposal would write, when the caller named one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub document: String,
}

impl Breach {
    fn new(check: String, found: String) -> Self {
        Breach {
            check,
            found,
            document: String::new(),
        }
    }

    /// The same breach, naming the document it is in.
    #[must_use]
    pub fn in_document(mut self, document: &str) -> Self {
        document.clone_into(&mut self.document);
        self
    }
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "breaks preference '{}'", self.check)?;
        if !self.document.is_empty() {
            write!(f, " in {}", self.document)?;
        }
        write!(f, ": {}", self.found)
    }
}

/// `n` with the noun `one`, or its plural `many`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Checks {
    /// True when no check is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self == &Checks::default()
    }

    /// How many checks are set (each forbidden phrase and required heading counts once).
    #[must_use]
    pub fn len(&self) -> usize {
        [
            self.max_chars.is_some(),
            self.max_lines.is_some(),
            self.max_growth_chars.is_some(),
            self.max_growth_lines.is_some(),
            self.max_examples_added.is_some(),
            self.max_code_blocks_added.is_some(),
        ]
        .iter()
        .filter(|set| **set)
        .count()
        .saturating_add(self.forbidden.len())
        .saturating_add(self.required_headings.len())
    }

    /// The checks in plain words, one line each, for the prompts.
    #[must_use]
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(n) = self.max_chars {
            lines.push(format!(
                "the document stays within {}",
                count(n, "character", "characters")
            ));
        }
        if let Some(n) = self.max_lines {
            lines.push(format!(
                "the document stays within {}",
                count(n, "line", "lines")
            ));
        }
        if let Some(n) = self.max_growth_chars {
            lines.push(format!(
                "a proposal adds at most {}",
                count(n, "character", "characters")
            ));
        }
        if let Some(n) = self.max_growth_lines {
            lines.push(format!(
                "a proposal adds at most {}",
                count(n, "line", "lines")
            ));
        }
        if !self.forbidden.is_empty() {
            lines.push(format!(
                "a proposal adds none of these words or phrases, in any case: {}",
                quoted(&self.forbidden)
            ));
        }
        if let Some(n) = self.max_examples_added {
            lines.push(format!(
                "a proposal adds at most {} (a line starting with \"Example\")",
                count(n, "example", "examples")
            ));
        }
        if let Some(n) = self.max_code_blocks_added {
            lines.push(format!(
                "a proposal adds at most {}",
                count(n, "fenced code block", "fenced code blocks")
            ));
        }
        if !self.required_headings.is_empty() {
            lines.push(format!(
                "these headings stay: {}",
                quoted(&self.required_headings)
            ));
        }
        lines
    }

    /// What `after` breaks of these checks, judged against `before`, the text it would
    /// replace: only what it makes worse counts (see the module's documentation).
    #[must_use]
    pub fn evaluate(&self, before: &str, after: &str) -> Vec<Breach> {
        let mut breaches = Vec::new();
        let sizes = |text: &str| (text.chars().count(), text.lines().count());
        let (chars_before, lines_before) = sizes(before);
        let (chars_after, lines_after) = sizes(after);
        for (key, max, was, now, one, many) in [
            (
                "max_chars",
                self.max_chars,
                chars_before,
                chars_after,
                "character",
                "characters",
            ),
            (
                "max_lines",
                self.max_lines,
                lines_before,
                lines_after,
                "line",
                "lines",
            ),
        ] {
            if let Some(max) = max
                && now > max
                && now > was
            {
                let found = if was > max {
                    format!("{}, up from {was}", count(now, one, many))
                } else {
                    count(now, one, many)
                };
                breaches.push(Breach::new(format!("{key} = {max}"), found));
            }
        }
        for (key, max, was, now, many) in [
            (
                "max_growth_chars",
                self.max_growth_chars,
                chars_before,
                chars_after,
                "characters",
            ),
            (
                "max_growth_lines",
                self.max_growth_lines,
                lines_before,
                lines_after,
                "lines",
            ),
        ] {
            let grew = now.saturating_sub(was);
            if let Some(max) = max
                && grew > max
            {
                breaches.push(Breach::new(
                    format!("{key} = {max}"),
                    format!("+{grew} {many} ({was} → {now})"),
                ));
            }
        }
        for phrase in &self.forbidden {
            let lower = phrase.to_lowercase();
            let (was, now) = (occurrences(before, &lower), occurrences(after, &lower));
            if now > was {
                let found = if was == 0 {
                    format!("adds {}", count(now, "occurrence", "occurrences"))
                } else {
                    format!(
                        "adds {} ({was} before, {now} after)",
                        now.saturating_sub(was)
                    )
                };
                breaches.push(Breach::new(format!("forbidden {phrase:?}"), found));
            }
        }
        let (was, now) = (counts(before), counts(after));
        for (key, max, before_n, after_n, one, many) in [
            (
                "max_examples_added",
                self.max_examples_added,
                was.examples,
                now.examples,
                "example",
                "examples",
            ),
            (
                "max_code_blocks_added",
                self.max_code_blocks_added,
                was.code_blocks,
                now.code_blocks,
                "code block",
                "code blocks",
            ),
        ] {
            let added = after_n.saturating_sub(before_n);
            if let Some(max) = max
                && added > max
            {
                breaches.push(Breach::new(
                    format!("{key} = {max}"),
                    format!("adds {}", count(added, one, many)),
                ));
            }
        }
        for heading in &self.required_headings {
            let wanted = normalize_heading(heading);
            if was.headings.contains(&wanted) && !now.headings.contains(&wanted) {
                breaches.push(Breach::new(
                    format!("required_headings {heading:?}"),
                    "removes the heading".to_owned(),
                ));
            }
        }
        breaches
    }
}

/// `"a", "b"`.
fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}
