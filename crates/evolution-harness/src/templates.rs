//! Default prompt templates for every bundle, as markdown files compiled in,
//! with per-file overrides from a directory.
//!
//! Placeholder syntax follows the crate that renders each template: the
//! diagnosis judges use `{name}` (evolution-diagnose), the evolution
//! templates `{{name}}` (evolution-evolve), and the slow update, rendered
//! here, `{name}`. The placeholder lists below mirror those crates' docs.

use std::collections::BTreeSet;
use std::path::Path;

use evolution_types::{DiagnosePrompts, EvolvePrompts};
use serde::{Deserialize, Serialize};

/// How a template marks its placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlaceholderStyle {
    /// `{name}`.
    Single,
    /// `{{name}}`.
    Double,
}

/// One template: its file name stem, syntax, the placeholders its renderer
/// provides, and the built-in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateSpec {
    /// Name of the bundle field, and of the override file (`<name>.md`).
    pub name: &'static str,
    /// Placeholder syntax.
    pub style: PlaceholderStyle,
    /// Placeholders the renderer fills.
    pub placeholders: &'static [&'static str],
    /// The built-in text.
    pub default_text: &'static str,
}

const JUDGE: &[&str] = &[
    "question_id",
    "task_type",
    "question",
    "answer",
    "prediction",
    "correct",
    "trace",
    "tool_outputs",
    "visited_nodes",
    "tree",
    "skill",
];
const SPAN_USER: &[&str] = &[
    "question_id",
    "task_type",
    "question",
    "answer",
    "prediction",
    "correct",
    "trace",
    "tool_outputs",
    "visited_nodes",
    "tree",
    "skill",
    "step",
    "tool_name",
    "tool_input",
    "tool_output",
    "thought",
];
const CLASSIFIER: &[&str] = &[
    "question_id",
    "task_type",
    "question",
    "answer",
    "prediction",
    "correct",
    "trace",
    "tool_outputs",
    "visited_nodes",
    "tree",
    "skill",
    "error_type",
    "evidence",
];

macro_rules! spec {
    ($name:literal, $style:ident, $placeholders:expr) => {
        TemplateSpec {
            name: $name,
            style: PlaceholderStyle::$style,
            placeholders: $placeholders,
            default_text: include_str!(concat!("../templates/", $name, ".md")),
        }
    };
}

/// Every template, in bundle order: the diagnosis bundle, the evolution
/// bundle, then the slow update.
pub const TEMPLATES: [TemplateSpec; 15] = [
    spec!("defect_vs_lapse", Single, CLASSIFIER),
    spec!("reasoning_sub", Single, CLASSIFIER),
    spec!("span_eval_system", Single, SPAN_USER),
    spec!("span_eval_user", Single, SPAN_USER),
    spec!("missed_nodes", Single, JUDGE),
    spec!("skill_adherence", Single, JUDGE),
    spec!("confirmation_bias", Single, JUDGE),
    spec!("evidence_sufficiency", Single, JUDGE),
    spec!(
        "evolve_skill",
        Double,
        &[
            "task_type",
            "target_file",
            "skill_content",
            "stats",
            "failure_cases",
            "success_cases",
            "lapse_notes",
            "rejected_edits",
            "edit_budget",
        ]
    ),
    spec!(
        "evolve_system",
        Double,
        &[
            "system_prompt",
            "frozen_sections",
            "stats",
            "failure_cases",
            "success_cases",
            "rejected_edits",
            "edit_budget",
        ]
    ),
    spec!(
        "evolve_tool",
        Double,
        &[
            "tool_name",
            "extract_file",
            "extract_prompt",
            "verify_file",
            "verify_prompt",
            "frozen_section",
            "stats",
            "failure_spans",
            "success_spans",
            "rejected_edits",
            "edit_budget",
        ]
    ),
    spec!(
        "evolve_rank",
        Double,
        &["document", "edits", "n_edits", "max_edits"]
    ),
    spec!("consolidate_system", Double, &["count", "notes"]),
    spec!(
        "evolve_rewrite",
        Double,
        &["document", "suggestions", "max_chars"]
    ),
    spec!(
        "slow_update",
        Single,
        &[
            "previous_skill",
            "current_skill",
            "regressions",
            "persistent_fails",
            "improvements",
            "stable_count",
            "previous_guidance",
        ]
    ),
];

/// The spec of template `name`.
pub fn template_spec(name: &str) -> Option<&'static TemplateSpec> {
    TEMPLATES.iter().find(|t| t.name == name)
}

fn identifier_len(text: &str) -> usize {
    text.char_indices()
        .find(|&(i, c)| !(c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())))
        .map_or(text.len(), |(i, _)| i)
}

/// Walks `text`, calling `found(name)` for each placeholder; returns the
/// text with each placeholder replaced by `found`'s answer (kept when `None`).
fn scan(
    text: &str,
    style: PlaceholderStyle,
    mut found: impl FnMut(&str) -> Option<String>,
) -> String {
    let (open, close) = match style {
        PlaceholderStyle::Single => ("{", "}"),
        PlaceholderStyle::Double => ("{{", "}}"),
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(open) {
        out.push_str(rest.get(..at).unwrap_or_default());
        let after = rest
            .get(at.saturating_add(open.len())..)
            .unwrap_or_default();
        let len = identifier_len(after);
        let name = after.get(..len).unwrap_or_default();
        let closed = after.get(len..).is_some_and(|r| r.starts_with(close));
        let replacement = if closed && !name.is_empty() {
            found(name)
        } else {
            None
        };
        match replacement {
            Some(value) => {
                out.push_str(&value);
                rest = after
                    .get(len.saturating_add(close.len())..)
                    .unwrap_or_default();
            }
            None => {
                // Keep one character of the opener and rescan from the next.
                out.push_str(open.get(..1).unwrap_or_default());
                rest = rest.get(at.saturating_add(1)..).unwrap_or_default();
            }
        }
    }
    out.push_str(rest);
    out
}

/// The placeholder names used in `text`, sorted.
pub fn placeholders_in(text: &str, style: PlaceholderStyle) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    scan(text, style, |name| {
        names.insert(name.to_owned());
        None
    });
    names
}

/// Replaces the placeholders named in `vars` in one pass; values are
/// inserted verbatim and never rescanned, unknown names stay as written.
pub fn render_template(text: &str, style: PlaceholderStyle, vars: &[(&str, &str)]) -> String {
    scan(text, style, |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

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

/// Every prompt template the loop uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTemplates {
    /// The diagnosis bundle.
    pub diagnose: DiagnosePrompts,
    /// The evolution bundle.
    pub evolve: EvolvePrompts,
    /// The slow-update prompt.
    pub slow_update: String,
}

impl Default for PromptTemplates {
    fn default() -> Self {
        let mut templates = PromptTemplates {
            diagnose: DiagnosePrompts::default(),
            evolve: EvolvePrompts::default(),
            slow_update: String::new(),
        };
        for spec in &TEMPLATES {
            if let Some(slot) = templates.slot(spec.name) {
                *slot = spec.default_text.to_owned();
            }
        }
        templates
    }
}

impl PromptTemplates {
    fn slot(&mut self, name: &str) -> Option<&mut String> {
        let d = &mut self.diagnose;
        let e = &mut self.evolve;
        Some(match name {
            "defect_vs_lapse" => &mut d.defect_vs_lapse,
            "reasoning_sub" => &mut d.reasoning_sub,
            "span_eval_system" => &mut d.span_eval_system,
            "span_eval_user" => &mut d.span_eval_user,
            "missed_nodes" => &mut d.missed_nodes,
            "skill_adherence" => &mut d.skill_adherence,
            "confirmation_bias" => &mut d.confirmation_bias,
            "evidence_sufficiency" => &mut d.evidence_sufficiency,
            "evolve_skill" => &mut e.evolve_skill,
            "evolve_system" => &mut e.evolve_system,
            "evolve_tool" => &mut e.evolve_tool,
            "evolve_rank" => &mut e.evolve_rank,
            "consolidate_system" => &mut e.consolidate_system,
            "evolve_rewrite" => &mut e.evolve_rewrite,
            "slow_update" => &mut self.slow_update,
            _ => return None,
        })
    }

    /// The text of template `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        let d = &self.diagnose;
        let e = &self.evolve;
        Some(match name {
            "defect_vs_lapse" => &d.defect_vs_lapse,
            "reasoning_sub" => &d.reasoning_sub,
            "span_eval_system" => &d.span_eval_system,
            "span_eval_user" => &d.span_eval_user,
            "missed_nodes" => &d.missed_nodes,
            "skill_adherence" => &d.skill_adherence,
            "confirmation_bias" => &d.confirmation_bias,
            "evidence_sufficiency" => &d.evidence_sufficiency,
            "evolve_skill" => &e.evolve_skill,
            "evolve_system" => &e.evolve_system,
            "evolve_tool" => &e.evolve_tool,
            "evolve_rank" => &e.evolve_rank,
            "consolidate_system" => &e.consolidate_system,
            "evolve_rewrite" => &e.evolve_rewrite,
            "slow_update" => &self.slow_update,
            _ => return None,
        })
    }

    /// Replaces template `name` with `text` after checking it.
    ///
    /// # Errors
    /// [`TemplateError::UnknownTemplate`], [`TemplateError::Empty`] or
    /// [`TemplateError::UnknownPlaceholder`].
    pub fn set(&mut self, name: &str, text: String) -> Result<(), TemplateError> {
        let Some(spec) = template_spec(name) else {
            return Err(TemplateError::UnknownTemplate {
                file: name.to_owned(),
                known: TEMPLATES.map(|t| t.name).join(", "),
            });
        };
        if text.trim().is_empty() {
            return Err(TemplateError::Empty(name.to_owned()));
        }
        if let Some(unknown) = placeholders_in(&text, spec.style)
            .into_iter()
            .find(|p| !spec.placeholders.contains(&p.as_str()))
        {
            return Err(TemplateError::UnknownPlaceholder {
                template: name.to_owned(),
                placeholder: unknown,
                known: spec.placeholders.join(", "),
            });
        }
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
                    known: TEMPLATES.map(|t| t.name).join(", "),
                });
            }
            let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            templates.set(stem, text)?;
            overridden.push(stem.to_owned());
        }
        Ok((templates, overridden))
    }
}
