//! A project's house rules: a `preferences` file whose free text every proposal prompt
//! carries, and whose checks drop a proposal that breaks them before it is gated. Pure: the
//! caller reads the file and hands its text to [`Preferences::parse`].
//!
//! # The file
//!
//! Markdown. Everything in it is free text for the prompts, except one fenced block whose
//! info string is `checks`: the checks, in TOML (every key optional; an unknown key, a value
//! of the wrong type or a second `checks` block is an error naming its line).
//!
//! ````text
//! Keep the tone terse: imperative sentences, no filler.
//! Never add more than one example.
//!
//! ```checks
//! max_lines = 120                  # the document, in lines (or max_chars, in characters)
//! max_growth_lines = 15            # what one proposal may add (or max_growth_chars)
//! forbidden = ["always", "simply"] # words or phrases a proposal may not add (any case)
//! max_examples_added = 1           # lines starting with "Example" a proposal may add
//! max_code_blocks_added = 0        # fenced code blocks a proposal may add
//! required_headings = ["Steps"]    # headings a proposal may not remove
//! ```
//! ````
//!
//! # What a check compares
//!
//! A proposal is judged against the document it would replace, and only for what it makes
//! worse: a document already past `max_lines` breaks it only when the proposal makes it
//! longer still; a forbidden phrase breaks it only when the proposal adds an occurrence
//! (matched in any case, as a whole word where it starts or ends with a letter or digit); a
//! required heading only when the document had it and the proposal removes it (ATX headings,
//! compared without their `#` marks, in any case). Lines are `str::lines`, characters are
//! Unicode scalar values; code blocks are CommonMark fences (an unclosed one counts), and an
//! example is a line outside them whose first word, after list, quote, heading and emphasis
//! marks, is "Example" or "Examples".
//!
//! # In the prompts
//!
//! [`Preferences::prompt_section`] is the value of the `{{preferences}}` placeholder of every
//! proposal template (empty without preferences, so the prompts are then unchanged); a
//! template that does not use the placeholder (an override written before it existed) gets
//! the section appended by [`render_with_preferences`].

mod check;
mod markdown;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use evolution_types::template::render_with;

pub use self::check::Breach;

/// The placeholder of the proposal templates that the section of [`Preferences`] fills.
pub const PLACEHOLDER: &str = "preferences";

/// The most characters a preferences file may hold: its text goes into every proposal
/// prompt.
pub const MAX_PREFERENCES_CHARS: usize = 8_000;

/// The most phrases `forbidden` (or headings `required_headings`) may list.
pub const MAX_PHRASES: usize = 100;

/// The most characters of one forbidden phrase or required heading.
pub const MAX_PHRASE_CHARS: usize = 200;

/// The info string of the fenced block that holds the checks.
pub const CHECKS_INFO: &str = "checks";

/// A project's house rules, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preferences {
    /// The free text: the file without its checks block, trimmed.
    pub text: String,
    /// The checks of the file's `checks` block (none without one).
    pub checks: Checks,
}

/// The checks a proposal must pass. [`Default`] checks nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checks {
    /// The most characters the document may hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The most lines the document may hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<usize>,
    /// The most characters one proposal may add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_growth_chars: Option<usize>,
    /// The most lines one proposal may add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_growth_lines: Option<usize>,
    /// Words or phrases a proposal may not add, as written (matched in any case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden: Vec<String>,
    /// The most example lines one proposal may add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_examples_added: Option<usize>,
    /// The most fenced code blocks one proposal may add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_code_blocks_added: Option<usize>,
    /// Headings a proposal may not remove, as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_headings: Vec<String>,
}

/// Why a preferences file cannot be used. Every variant but [`PreferencesError::TooLong`]
/// names the line (1-based) of the file it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PreferencesError {
    /// The file is longer than [`MAX_PREFERENCES_CHARS`].
    #[error(
        "{chars} characters, more than a preferences file may hold ({max}): its text goes into \
         every proposal prompt, so keep the house rules short"
    )]
    TooLong {
        /// The file's characters.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// The `checks` block is never closed.
    #[error("the ```checks block opened here is never closed")]
    Unclosed {
        /// The line of its opening fence.
        line: usize,
    },
    /// A second `checks` block.
    #[error("a second ```checks block (the first opens at line {first}); put every check in one")]
    SecondBlock {
        /// The line of its opening fence.
        line: usize,
        /// The line of the first block's opening fence.
        first: usize,
    },
    /// The block is not TOML of the checks' keys.
    #[error("```checks: {message}")]
    Syntax {
        /// The line of the problem.
        line: usize,
        /// The parser's message.
        message: String,
    },
    /// A check's value is out of its range.
    #[error("```checks: {message}")]
    BadValue {
        /// The line of the key.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

impl PreferencesError {
    /// The line of the file the problem is at (1-based), when it is at one.
    #[must_use]
    pub fn line(&self) -> Option<usize> {
        match self {
            PreferencesError::TooLong { .. } => None,
            PreferencesError::Unclosed { line }
            | PreferencesError::SecondBlock { line, .. }
            | PreferencesError::Syntax { line, .. }
            | PreferencesError::BadValue { line, .. } => Some(*line),
        }
    }
}

/// The `checks` block as TOML gives it, with where each value is.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChecks {
    max_chars: Option<Spanned<usize>>,
    max_lines: Option<Spanned<usize>>,
    max_growth_chars: Option<usize>,
    max_growth_lines: Option<usize>,
    forbidden: Option<Spanned<Vec<String>>>,
    max_examples_added: Option<usize>,
    max_code_blocks_added: Option<usize>,
    required_headings: Option<Spanned<Vec<String>>>,
}

/// Where the `checks` block is: the line of its opening fence and its body.
struct Block {
    line: usize,
    body: String,
}

impl Preferences {
    /// The house rules of a preferences file's text.
    ///
    /// # Errors
    /// [`PreferencesError`]: a file past [`MAX_PREFERENCES_CHARS`], a `checks` block that is
    /// unclosed, repeated, not TOML of the checks' keys, or with a value out of range.
    pub fn parse(source: &str) -> Result<Self, PreferencesError> {
        let chars = source.chars().count();
        if chars > MAX_PREFERENCES_CHARS {
            return Err(PreferencesError::TooLong {
                chars,
                max: MAX_PREFERENCES_CHARS,
            });
        }
        let (text, block) = split_checks(source)?;
        let checks = match block {
            Some(block) => parse_checks(&block)?,
            None => Checks::default(),
        };
        Ok(Preferences {
            text: text.trim().to_owned(),
            checks,
        })
    }

    /// True when there is neither text nor a check.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.checks.is_empty()
    }

    /// The value of the `{{preferences}}` placeholder: empty without preferences, else a
    /// `## House rules of this project` section (its free text, then its checks in plain
    /// words) that starts and ends with a line break, made to stand in for a blank line
    /// between two sections of a template.
    #[must_use]
    pub fn prompt_section(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut out = String::from("\n## House rules of this project\n\n");
        if !self.text.is_empty() {
            out.push_str(
                "The project's own preferences for this document. Follow them in everything \
                 you propose:\n\n",
            );
            out.push_str(&self.text);
            out.push('\n');
        }
        let limits = self.checks.describe();
        if !limits.is_empty() {
            if !self.text.is_empty() {
                out.push('\n');
            }
            out.push_str(
                "Limits every proposal must keep (one that breaks any is dropped before it is \
                 tested):\n",
            );
            for limit in limits {
                out.push_str("- ");
                out.push_str(&limit);
                out.push('\n');
            }
        }
        out
    }

    /// What `after` (the proposed text of `document`) breaks of the checks, judged against
    /// `before` (the text it would replace); empty when it keeps them all.
    #[must_use]
    pub fn breaches(&self, document: &str, before: &str, after: &str) -> Vec<Breach> {
        self.checks
            .evaluate(before, after)
            .into_iter()
            .map(|b| b.in_document(document))
            .collect()
    }
}

/// `template` with `vars` and the `{{preferences}}` placeholder filled with `section` (a
/// [`Preferences::prompt_section`]), in one pass; when the template does not use the
/// placeholder and `section` is not empty, the section is appended after it, so a template
/// written before the placeholder existed still carries the house rules.
#[must_use]
pub fn render_with_preferences(template: &str, vars: &[(&str, &str)], section: &str) -> String {
    let mut used = false;
    let mut out = render_with(template, |name| {
        if name == PLACEHOLDER {
            used = true;
            return Some(section.to_owned());
        }
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    });
    if !used && !section.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(section);
    }
    out
}

/// The free text of `source` and its `checks` block, if it has one.
fn split_checks(source: &str) -> Result<(String, Option<Block>), PreferencesError> {
    let mut text = String::with_capacity(source.len());
    let mut block: Option<Block> = None;
    // The fence open at this point, and whether it is the checks block's.
    let mut open: Option<(markdown::Fence, bool)> = None;
    for (i, line) in source.split_inclusive('\n').enumerate() {
        let number = i.saturating_add(1);
        match open {
            Some((fence, is_checks)) => {
                if markdown::fence_close(line, fence) {
                    open = None;
                    if is_checks {
                        continue;
                    }
                } else if is_checks {
                    if let Some(b) = block.as_mut() {
                        b.body.push_str(line);
                    }
                    continue;
                }
                text.push_str(line);
            }
            None => match markdown::fence_open(line) {
                Some((fence, info)) if info.split_whitespace().next() == Some(CHECKS_INFO) => {
                    if let Some(first) = &block {
                        return Err(PreferencesError::SecondBlock {
                            line: number,
                            first: first.line,
                        });
                    }
                    block = Some(Block {
                        line: number,
                        body: String::new(),
                    });
                    open = Some((fence, true));
                }
                Some((fence, _)) => {
                    open = Some((fence, false));
                    text.push_str(line);
                }
                None => text.push_str(line),
            },
        }
    }
    if let (Some((_, true)), Some(b)) = (open, &block) {
        return Err(PreferencesError::Unclosed { line: b.line });
    }
    Ok((text, block))
}

/// The checks of the block, every value in range.
fn parse_checks(block: &Block) -> Result<Checks, PreferencesError> {
    // The line of byte `at` of the body: the body starts the line after the fence.
    let line_at = |at: usize| {
        let before = block.body.get(..at).unwrap_or(&block.body);
        block
            .line
            .saturating_add(1)
            .saturating_add(before.matches('\n').count())
    };
    let raw: RawChecks = toml::from_str(&block.body).map_err(|e| PreferencesError::Syntax {
        line: e.span().map_or(block.line, |span| line_at(span.start)),
        message: e.message().trim().to_owned(),
    })?;
    let bad = |span: std::ops::Range<usize>, message: String| PreferencesError::BadValue {
        line: line_at(span.start),
        message,
    };
    for (key, value) in [("max_chars", &raw.max_chars), ("max_lines", &raw.max_lines)] {
        if let Some(value) = value
            && *value.get_ref() == 0
        {
            return Err(bad(
                value.span(),
                format!("{key} must be at least 1 (every document would break 0)"),
            ));
        }
    }
    let phrases = |key: &str, list: Option<Spanned<Vec<String>>>| {
        let Some(list) = list else {
            return Ok(Vec::new());
        };
        let span = list.span();
        let mut kept: Vec<String> = Vec::new();
        for item in list.into_inner() {
            let item = item.trim().to_owned();
            if item.is_empty() || item.trim_start_matches('#').trim().is_empty() {
                return Err(bad(span, format!("{key} holds an empty entry")));
            }
            let chars = item.chars().count();
            if chars > MAX_PHRASE_CHARS {
                return Err(bad(
                    span,
                    format!(
                        "{key} holds an entry of {chars} characters, more than \
                         {MAX_PHRASE_CHARS}"
                    ),
                ));
            }
            if !kept.iter().any(|k| k.to_lowercase() == item.to_lowercase()) {
                kept.push(item);
            }
        }
        if kept.len() > MAX_PHRASES {
            return Err(bad(
                span,
                format!(
                    "{key} lists {} entries, more than {MAX_PHRASES}",
                    kept.len()
                ),
            ));
        }
        Ok(kept)
    };
    Ok(Checks {
        max_chars: raw.max_chars.map(Spanned::into_inner),
        max_lines: raw.max_lines.map(Spanned::into_inner),
        max_growth_chars: raw.max_growth_chars,
        max_growth_lines: raw.max_growth_lines,
        forbidden: phrases("forbidden", raw.forbidden)?,
        max_examples_added: raw.max_examples_added,
        max_code_blocks_added: raw.max_code_blocks_added,
        required_headings: phrases("required_headings", raw.required_headings)?,
    })
}
