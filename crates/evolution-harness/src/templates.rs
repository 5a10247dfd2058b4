//! Default prompt templates for every bundle, as markdown files compiled in,
//! with per-file overrides from a directory.
//!
//! Every template uses the workspace's one placeholder syntax, `{{name}}`
//! ([`evolution_types::template`]). The placeholder lists below mirror the
//! docs of the crates that render them.
//!
//! Override files written for the older `{name}` syntax of the diagnosis
//! judges and the slow update keep working: an override of one of those
//! templates that has no `{{name}}` placeholder is read in the old syntax
//! and converted (see [`TemplateSpec::legacy_single_brace`]).

use std::path::Path;

use evolution_types::template;
use evolution_types::{DiagnosePrompts, EvolvePrompts};
use serde::{Deserialize, Serialize};

/// One template: its file name stem, the placeholders its renderer
/// provides, and the built-in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateSpec {
    /// Name of the bundle field, and of the override file (`<name>.md`).
    pub name: &'static str,
    /// Whether the template once used `{name}` placeholders: an override
    /// with no `{{name}}` placeholder is then read in that older syntax.
    pub legacy_single_brace: bool,
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
    ($name:literal, $legacy:literal, $placeholders:expr) => {
        TemplateSpec {
            name: $name,
            legacy_single_brace: $legacy,
            placeholders: $placeholders,
            default_text: include_str!(concat!("../templates/", $name, ".md")),
        }
    };
}

/// Every template, in bundle order: the diagnosis bundle, the evolution
/// bundle, then the slow update. The flag says whether the template once used
/// the older `{name}` syntax.
pub const TEMPLATES: [TemplateSpec; 15] = [
    spec!("defect_vs_lapse", true, CLASSIFIER),
    spec!("reasoning_sub", true, CLASSIFIER),
    spec!("span_eval_system", true, SPAN_USER),
    spec!("span_eval_user", true, SPAN_USER),
    spec!("missed_nodes", true, JUDGE),
    spec!("skill_adherence", true, JUDGE),
    spec!("confirmation_bias", true, JUDGE),
    spec!("evidence_sufficiency", true, JUDGE),
    spec!(
        "evolve_skill",
        false,
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
        false,
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
        false,
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
        false,
        &["document", "edits", "n_edits", "max_edits"]
    ),
    spec!("consolidate_system", false, &["count", "notes"]),
    spec!(
        "evolve_rewrite",
        false,
        &["document", "suggestions", "max_chars"]
    ),
    spec!(
        "slow_update",
        true,
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

    /// Replaces template `name` with `text` after checking it. An override
    /// of a template whose spec has `legacy_single_brace` set, and that uses
    /// no `{{name}}` placeholder, is read in the older `{name}` syntax and
    /// stored converted.
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
        let unknown = |error| match error {
            template::TemplateError::UnknownPlaceholder { placeholder, known } => {
                TemplateError::UnknownPlaceholder {
                    template: name.to_owned(),
                    placeholder,
                    known,
                }
            }
        };
        let text = if spec.legacy_single_brace && template::placeholders(&text).is_empty() {
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
