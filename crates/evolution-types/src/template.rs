//! The one template engine of the workspace: `{{name}}` placeholders, and
//! the one way long values are cut before they go into a prompt.
//!
//! A placeholder is `{{`, optional spaces, an identifier
//! (`[A-Za-z_][A-Za-z0-9_]*`), optional spaces, `}}`: `{{stats}}` and
//! `{{ stats }}` are the same placeholder. Every other brace is text: JSON
//! examples such as `{"a": 1}`, a lone `{{`, `{{ }}`. Rendering is one
//! left-to-right pass: a value is inserted verbatim and never scanned again,
//! so a trace that happens to contain `{{skill}}` injects nothing. Names the
//! caller does not fill stay as written; [`check`] tells a template that uses
//! names its renderer does not know from one that does not.
//!
//! Templates written for the older `{name}` syntax (the diagnosis judges and
//! the slow update used it) can be read with [`legacy_placeholders`] and
//! converted with [`upgrade_legacy`].

use std::collections::BTreeSet;

/// Why a template cannot be used with a renderer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template uses a placeholder its renderer does not fill.
    #[error(
        "the template uses {{{{{placeholder}}}}}, which its renderer does not provide (known: {known})"
    )]
    UnknownPlaceholder {
        /// The unknown name.
        placeholder: String,
        /// The names the template may use, comma-separated.
        known: String,
    },
}

/// Opening and closing marks of a placeholder.
#[derive(Clone, Copy)]
struct Marks {
    open: &'static str,
    close: &'static str,
    /// Whether spaces are allowed around the name.
    spaced: bool,
}

const DOUBLE: Marks = Marks {
    open: "{{",
    close: "}}",
    spaced: true,
};
const SINGLE: Marks = Marks {
    open: "{",
    close: "}",
    spaced: false,
};

fn identifier_len(text: &str) -> usize {
    text.char_indices()
        .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
        .map_or(text.len(), |(i, _)| i)
}

fn spaces_len(text: &str, spaced: bool) -> usize {
    if spaced {
        text.len() - text.trim_start_matches([' ', '\t']).len()
    } else {
        0
    }
}

/// If `after` (the text right after an opener) starts a placeholder, its
/// name and the length up to and including the closer.
fn placeholder_at(after: &str, marks: Marks) -> Option<(&str, usize)> {
    let lead = spaces_len(after, marks.spaced);
    let from_name = after.get(lead..)?;
    let len = identifier_len(from_name);
    let name = from_name.get(..len)?;
    let tail = from_name.get(len..)?;
    let trail = spaces_len(tail, marks.spaced);
    let closed = tail.get(trail..)?.starts_with(marks.close);
    (closed && !name.is_empty()).then_some((name, lead + len + trail + marks.close.len()))
}

/// The one scanner: walks `template`, asks `resolve` for each placeholder,
/// and returns the text with the answered ones replaced.
fn scan(template: &str, marks: Marks, mut resolve: impl FnMut(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find(marks.open) {
        out.push_str(rest.get(..at).unwrap_or_default());
        let after = rest.get(at + marks.open.len()..).unwrap_or_default();
        let replaced = placeholder_at(after, marks)
            .and_then(|(name, len)| resolve(name).map(|value| (value, len)));
        match replaced {
            Some((value, len)) => {
                out.push_str(&value);
                rest = after.get(len..).unwrap_or_default();
            }
            None => {
                // Keep one brace and rescan from the next, so `{{{{x}}` still finds `{{x}}`.
                out.push('{');
                rest = rest.get(at + 1..).unwrap_or_default();
            }
        }
    }
    out.push_str(rest);
    out
}

/// Fills the placeholders of `template` named in `vars`, in one pass.
///
/// Values are inserted verbatim and never rescanned; placeholders not in
/// `vars` stay as written.
#[must_use]
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    render_with(template, |name| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    })
}

/// [`render`] with values computed on demand: `resolve` is called for each
/// placeholder met, and a `None` keeps the placeholder as written. A template
/// pays only for the values it uses.
#[must_use]
pub fn render_with(template: &str, resolve: impl FnMut(&str) -> Option<String>) -> String {
    scan(template, DOUBLE, resolve)
}

/// The placeholder names `template` uses, sorted.
#[must_use]
pub fn placeholders(template: &str) -> BTreeSet<String> {
    collect(template, DOUBLE)
}

fn collect(template: &str, marks: Marks) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    scan(template, marks, |name| {
        names.insert(name.to_owned());
        None
    });
    names
}

/// Checks that `template` uses only placeholders named in `known`.
///
/// # Errors
/// [`TemplateError::UnknownPlaceholder`] with the first unknown name, in
/// sorted order.
pub fn check(template: &str, known: &[&str]) -> Result<(), TemplateError> {
    check_names(placeholders(template), known)
}

fn check_names(used: BTreeSet<String>, known: &[&str]) -> Result<(), TemplateError> {
    match used.into_iter().find(|p| !known.contains(&p.as_str())) {
        Some(placeholder) => Err(TemplateError::UnknownPlaceholder {
            placeholder,
            known: known.join(", "),
        }),
        None => Ok(()),
    }
}

/// The `{name}` placeholders of a template written for the older single-brace
/// syntax, sorted (no spaces inside the braces; `{"a": 1}` is text).
#[must_use]
pub fn legacy_placeholders(template: &str) -> BTreeSet<String> {
    collect(template, SINGLE)
}

/// A template written for the older `{name}` syntax, converted: every
/// `{name}` whose name is in `known` becomes `{{name}}`; everything else is
/// kept. Checks first that every `{name}` is known, as [`check`] does.
///
/// # Errors
/// [`TemplateError::UnknownPlaceholder`] when the template uses a name not
/// in `known`.
pub fn upgrade_legacy(template: &str, known: &[&str]) -> Result<String, TemplateError> {
    check_names(legacy_placeholders(template), known)?;
    Ok(scan(template, SINGLE, |name| {
        Some(format!("{{{{{name}}}}}"))
    }))
}

/// `text` cut to at most `max` characters, with a visible marker saying how
/// many characters were left out (`…[12 more chars]`). Counts characters,
/// never splits one; text that fits is returned unchanged.
#[must_use]
pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let (kept, rest) = text.split_at(cut);
            format!("{kept}…[{} more chars]", rest.chars().count())
        }
    }
}

/// One built-in prompt template of a crate: its name (also the name of the
/// file, `<name>.md`, that overrides it), the placeholders its renderer
/// fills, and the built-in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateSpec {
    /// Name of the template.
    pub name: &'static str,
    /// Placeholders the renderer fills; an override may use only these.
    pub placeholders: &'static [&'static str],
    /// The built-in text.
    pub builtin: &'static str,
}
