//! Prompt templates for every bundle: the kernel crates' built-in ones
//! ([`DiagnosePrompts::builtin`], [`EvolvePrompts::builtin`], and
//! [`ReflectPrompts::builtin`] for the reflect → meta-reflect loop of
//! `evolution_evolve::reflect`) and this crate's slow update, with per-file overrides from a directory, each checked
//! against the placeholders its crate declares.
//!
//! Every template uses the workspace's one placeholder syntax, `{{name}}`
//! ([`evolution_types::template`]). Override files written for the older
//! `{name}` syntax of the diagnosis judges and the slow update keep working:
//! an override of one of those templates that has no `{{name}}` placeholder
//! is read in the old syntax and converted.

use std::path::Path;

use evolution_diagnose::DiagnosePrompts;
use evolution_evolve::EvolvePrompts;
use evolution_evolve::preferences::Preferences;
use evolution_evolve::reflect::ReflectPrompts;
use evolution_types::template::{self, TemplateSpec};
use serde::{Deserialize, Serialize};

/// The slow update's template, rendered by [`crate::slow_update()`].
pub const SLOW_UPDATE: TemplateSpec = TemplateSpec {
    name: "slow_update",
    placeholders: &[
        "previous_skill",
        "current_skill",
        "regressions",
        "persistent_fails",
        "improvements",
        "stable_count",
        "previous_guidance",
        "preferences",
    ],
    builtin: include_str!("../prompts/slow_update.md"),
};

/// Every template, in bundle order: the diagnosis bundle, the evolution
/// bundle, the reflect bundle, then the slow update.
pub fn all_templates() -> impl Iterator<Item = &'static TemplateSpec> {
    const DIAGNOSE: &[TemplateSpec] = &DiagnosePrompts::TEMPLATES;
    const EVOLVE: &[TemplateSpec] = &EvolvePrompts::TEMPLATES;
    const REFLECT: &[TemplateSpec] = &ReflectPrompts::TEMPLATES;
    DIAGNOSE
        .iter()
        .chain(EVOLVE)
        .chain(REFLECT)
        .chain(std::iter::once(&SLOW_UPDATE))
}

/// The spec of template `name`.
pub fn template_spec(name: &str) -> Option<&'static TemplateSpec> {
    all_templates().find(|t| t.name == name)
}

/// Whether template `name` once used the older `{name}` syntax (the
/// diagnosis judges and the slow update did).
pub fn reads_legacy_syntax(name: &str) -> bool {
    name == SLOW_UPDATE.name || DiagnosePrompts::TEMPLATES.iter().any(|t| t.name == name)
}

fn known_names() -> String {
    all_templates()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The largest template override read, in bytes (4 MiB): far above any prompt.
pub const MAX_TEMPLATE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a template directory could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// The directory or a file could not be read (or is not UTF-8).
    #[error("could not read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A `.md` file whose name is no template's.
    #[error("{file} overrides no template; known names: {known}")]
    UnknownTemplate {
        /// The file.
        file: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// An override that is empty or blank.
    #[error("template override {0} is empty")]
    Empty(String),
    /// An override uses a placeholder its renderer does not fill.
    #[error(
        "template {template} uses {placeholder:?}, which its renderer does not provide (known: {known})"
    )]
    UnknownPlaceholder {
        /// The template.
        template: String,
        /// The unknown name.
        placeholder: String,
        /// The names it may use.
        known: String,
    },
}

/// Every prompt template the loop uses. [`Default`] is every built-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTemplates {
    /// The diagnosis bundle.
    pub diagnose: DiagnosePrompts,
    /// The evolution bundle.
    pub evolve: EvolvePrompts,
    /// The reflect → meta-reflect bundle of `skill-evolve evolve`.
    #[serde(default)]
    pub reflect: ReflectPrompts,
    /// The slow-update prompt.
    pub slow_update: String,
}

impl Default for PromptTemplates {
    fn default() -> Self {
        PromptTemplates {
            diagnose: DiagnosePrompts::builtin(),
            evolve: EvolvePrompts::builtin(),
            reflect: ReflectPrompts::builtin(),
            slow_update: SLOW_UPDATE.builtin.to_owned(),
        }
    }
}

impl PromptTemplates {
    /// The same templates, carrying the house rules `preferences` in every proposal prompt
    /// (the evolution and reflect bundles; the slow update takes them when it is called).
    #[must_use]
    pub fn with_preferences(mut self, preferences: &Preferences) -> Self {
        self.evolve = self.evolve.with_preferences(preferences);
        self.reflect = self.reflect.with_preferences(preferences);
        self
    }

    fn slot(&mut self, name: &str) -> Option<&mut String> {
        if name == SLOW_UPDATE.name {
            return Some(&mut self.slow_update);
        }
        if let Some(slot) = self.diagnose.get_mut(name) {
            return Some(slot);
        }
        match self.evolve.get_mut(name) {
            Some(slot) => Some(slot),
            None => self.reflect.get_mut(name),
        }
    }

    /// The text of template `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        if name == SLOW_UPDATE.name {
            return Some(&self.slow_update);
        }
        self.diagnose
            .get(name)
            .or_else(|| self.evolve.get(name))
            .or_else(|| self.reflect.get(name))
    }

    /// Replaces template `name` with `text` after checking it against the
    /// placeholders its crate declares. An override of a template that once
    /// used the older `{name}` syntax ([`reads_legacy_syntax`]), and that
    /// uses no `{{name}}` placeholder, is read in that syntax and stored
    /// converted.
    ///
    /// # Errors
    /// [`TemplateError::UnknownTemplate`], [`TemplateError::Empty`] or
    /// [`TemplateError::UnknownPlaceholder`].
    pub fn set(&mut self, name: &str, text: String) -> Result<(), TemplateError> {
        let Some(spec) = template_spec(name) else {
            return Err(TemplateError::UnknownTemplate {
                file: name.to_owned(),
                known: known_names(),
            });
        };
        if text.trim().is_empty() {
            return Err(TemplateError::Empty(name.to_owned()));
        }
        let unknown = |error| match error {
            template::TemplateError::UnknownPlaceholder { placeholder, known } => {
                TemplateError::UnknownPlaceholder {
                    template: name.to_owned(),
                    placeholder,
                    known,
                }
            }
        };
        let text = if reads_legacy_syntax(name) && template::placeholders(&text).is_empty() {
            template::upgrade_legacy(&text, spec.placeholders).map_err(unknown)?
        } else {
            template::check(&text, spec.placeholders).map_err(unknown)?;
            text
        };
        if let Some(slot) = self.slot(name) {
            *slot = text;
        }
        Ok(())
    }

    /// The defaults with every `<name>.md` of `dir` in place of the built-in
    /// text; returns the templates and the names overridden, sorted. Files
    /// not ending in `.md` are ignored; a `.md` file that names no template
    /// is an error, so a misspelt override never goes unnoticed.
    ///
    /// # Errors
    /// See [`TemplateError`]; nothing is returned partly overridden.
    pub fn with_overrides(dir: &Path) -> Result<(Self, Vec<String>), TemplateError> {
        let io = |path: &Path, source| TemplateError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut templates = PromptTemplates::default();
        let mut overridden = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| io(dir, e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| io(dir, e))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = file.strip_suffix(".md") else {
                continue;
            };
            if template_spec(stem).is_none() {
                return Err(TemplateError::UnknownTemplate {
                    file,
                    known: known_names(),
                });
            }
            // A pipe or a device would block or never end: only regular files within the cap.
            let meta = std::fs::metadata(&path).map_err(|e| io(&path, e))?;
            if !meta.is_file() {
                let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
                return Err(io(&path, e));
            }
            if meta.len() > MAX_TEMPLATE_BYTES {
                let e = std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} bytes, more than a template may hold ({MAX_TEMPLATE_BYTES})",
                        meta.len()
                    ),
                );
                return Err(io(&path, e));
            }
            let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            templates.set(stem, text)?;
            overridden.push(stem.to_owned());
        }
        Ok((templates, overridden))
    }
}
